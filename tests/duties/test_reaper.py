"""The reaper turns silence into a clear final state (time is passed in, never slept)."""

from __future__ import annotations

import socket
import subprocess
from pathlib import Path
from typing import Any

import pytest

from sparkgate.duties.reaper import reap_idle_sessions, reap_lost_engines
from sparkgate.duties.runner import Duty, DutyRunner
from sparkgate.launcher.local import LocalLauncher
from sparkgate.processes import alive
from sparkgate.settings import Settings
from sparkgate.states import EngineState, SessionKind, SessionState, StatementState
from sparkgate.store import Store
from sparkgate.store.records import EngineRecord
from sparkgate.store.session_attributes import SessionAttributes
from tests.conftest import NOW, force_state

SETTINGS = Settings(engine_heartbeat_timeout=30, engine_start_timeout=300, session_idle_timeout=600)


class Killer:
    """A launcher that only records what it was asked to kill."""

    def __init__(self) -> None:
        self.killed: list[int] = []

    def launch(self, engine: EngineRecord) -> None:
        raise AssertionError("the reaper launches nothing")

    def alive(self, engine: EngineRecord) -> bool | None:
        return None

    def log(self, engine: EngineRecord, *, tail: int | None = None) -> str:
        return ""

    def kill(self, engine: EngineRecord) -> bool:
        self.killed.append(engine.id)
        return True


@pytest.fixture
def killer() -> Killer:
    return Killer()


def test_lost_engine_fails_its_work_with_engine_lost(
    store: Store, make_engine: Any, make_session: Any, killer: Killer
) -> None:
    engine = make_engine(heartbeat_at=NOW)
    healthy = make_engine(heartbeat_at=NOW + 50)
    session = make_session(state=SessionState.BUSY, engine_id=engine.id)
    other = make_session(state=SessionState.IDLE, engine_id=healthy.id)
    running = store.statements.add(session.id, "SELECT 1", now=NOW)
    waiting = store.statements.add(session.id, "SELECT 2", now=NOW)
    cancelling = store.statements.add(session.id, "SELECT 3", now=NOW)
    force_state(store, "statements", running.id, "running")
    force_state(store, "statements", cancelling.id, "cancelling")

    assert reap_lost_engines(store, SETTINGS, killer, now=NOW + 29) == []
    assert reap_lost_engines(store, SETTINGS, killer, now=NOW + 31) == [engine.id]

    assert store.engines.get(engine.id).state is EngineState.LOST
    dead = store.sessions.get(session.id)
    assert dead.state is SessionState.DEAD and dead.error and dead.error.code == "ENGINE_LOST"
    for statement_id in (running.id, waiting.id):
        failed = store.statements.get(statement_id)
        assert failed.state is StatementState.FAILED
        assert failed.error and failed.error.code == "ENGINE_LOST"
        assert f"Engine {engine.id}" in failed.error.message
    assert store.statements.get(cancelling.id).state is StatementState.CANCELLED
    assert store.sessions.get(other.id).state is SessionState.IDLE
    assert reap_lost_engines(store, SETTINGS, killer, now=NOW + 60) == []  # once is enough
    assert killer.killed == [engine.id]  # the lost one, once; not the healthy one


def test_engine_that_never_started_is_lost_after_start_timeout(
    store: Store, make_engine: Any, killer: Killer
) -> None:
    engine = make_engine(state="starting", heartbeat_at=None)
    assert reap_lost_engines(store, SETTINGS, killer, now=NOW + 299) == []
    assert reap_lost_engines(store, SETTINGS, killer, now=NOW + 301) == [engine.id]
    error = store.engines.get(engine.id).error
    assert error and "did not start within 300s" in error.message
    assert killer.killed == [engine.id]


def test_a_lost_engine_still_running_here_is_killed(
    store: Store, make_engine: Any, tmp_path: Path
) -> None:
    """Through the real local launcher: a hung engine's process group ends with it."""
    engine = make_engine(heartbeat_at=NOW)
    hung = subprocess.Popen(["sleep", "300"], start_new_session=True)
    try:
        store.engines.set_process(
            engine.id, pid=hung.pid, host=socket.gethostname(), log_path="x", now=NOW
        )
        launcher = LocalLauncher(SETTINGS.model_copy(update={"home": tmp_path}), store)
        assert reap_lost_engines(store, SETTINGS, launcher, now=NOW + 29) == []
        assert hung.poll() is None
        assert reap_lost_engines(store, SETTINGS, launcher, now=NOW + 31) == [engine.id]
        assert hung.wait(timeout=10) < 0  # killed by a signal
        assert not alive(hung.pid)
    finally:
        hung.kill()
        hung.wait()


def test_idle_interactive_sessions_time_out(store: Store, make_session: Any) -> None:
    idle = make_session(state=SessionState.IDLE)
    busy = make_session(state=SessionState.BUSY)
    assert reap_idle_sessions(store, SETTINGS, now=NOW + 599) == []
    assert reap_idle_sessions(store, SETTINGS, now=NOW + 601) == [idle.id]
    ended = store.sessions.get(idle.id)
    assert (
        ended.state is SessionState.DEAD and ended.error and ended.error.code == "SESSION_TIMED_OUT"
    )
    assert store.sessions.get(busy.id).state is SessionState.BUSY
    never = SETTINGS.model_copy(update={"session_idle_timeout": 0})
    assert reap_idle_sessions(store, never, now=NOW + 10**6) == []


def test_a_sessions_own_idle_timeout_wins(store: Store) -> None:
    """HiveServer2 sessions carry SPARKGATE_THRIFT_IDLE_TIMEOUT as their own timeout."""
    thrift = store.sessions.add(
        SessionKind.INTERACTIVE, now=NOW, attributes=SessionAttributes(idle_timeout=60)
    )
    plain = store.sessions.add(SessionKind.INTERACTIVE, now=NOW)
    for session in (thrift, plain):
        force_state(store, "sessions", session.id, SessionState.IDLE.value)
    settings = SETTINGS.model_copy(update={"thrift_idle_timeout": 60})
    assert reap_idle_sessions(store, settings, now=NOW + 59) == []
    assert reap_idle_sessions(store, settings, now=NOW + 61) == [thrift.id]
    assert reap_idle_sessions(store, settings, now=NOW + 601) == [plain.id]


def test_only_the_lease_holder_runs_a_duty(store: Store) -> None:
    clock = [NOW]
    ran: dict[str, list[float]] = {"a": [], "b": []}
    nodes = {
        name: DutyRunner(
            store,
            name,
            [Duty("reaper", ran[name].append)],
            interval=1,
            lease_ttl=10,
            clock=lambda: clock[0],
        )
        for name in ("a", "b")
    }
    assert nodes["a"].run_once() == ["reaper"]
    assert nodes["b"].run_once() == []
    clock[0] = NOW + 5
    assert nodes["a"].run_once() == ["reaper"]  # renewed
    clock[0] = NOW + 14  # a renewed at +5, so its lease runs to +15
    assert nodes["b"].run_once() == []
    clock[0] = NOW + 16  # a has gone quiet: b takes over
    assert nodes["b"].run_once() == ["reaper"]
    assert nodes["a"].run_once() == []
    assert ran == {"a": [NOW, NOW + 5], "b": [NOW + 16]}


def test_a_node_holding_every_lease_renews_them_every_third_of_their_lifetime(
    store: Store,
) -> None:
    clock = [NOW]
    ran: list[float] = []
    runner = DutyRunner(
        store, "a", [Duty("reaper", ran.append)], interval=1, lease_ttl=9,
        clock=lambda: clock[0],
    )  # fmt: skip
    writes: list[float] = []
    acquire_many = store.leases.acquire_many

    def counted(*args: Any, **kwargs: Any) -> set[str]:
        writes.append(clock[0])
        return acquire_many(*args, **kwargs)

    store.leases.acquire_many = counted  # type: ignore[method-assign]
    for step in range(10):
        clock[0] = NOW + step
        assert runner.run_once() == ["reaper"]
    assert writes == [NOW, NOW + 3, NOW + 6, NOW + 9]
    lease = store.leases.get("reaper")
    assert lease is not None and lease.owner == "a" and lease.expires_at == NOW + 18
    # Another node never finds it lapsed while this one runs its rounds.
    other = DutyRunner(store, "b", [Duty("reaper", ran.append)], interval=1, lease_ttl=9,
                       clock=lambda: clock[0])  # fmt: skip
    assert other.run_once() == []


def test_a_duty_runs_at_most_as_often_as_it_asks(store: Store) -> None:
    clock = [NOW]
    ran: list[float] = []
    runner = DutyRunner(
        store, "a", [Duty("results", ran.append, every=60)], interval=1, lease_ttl=10,
        clock=lambda: clock[0],
    )  # fmt: skip
    for step in (0, 1, 30, 61, 62):
        clock[0] = NOW + step
        runner.run_once()
    assert ran == [NOW, NOW + 61]


def test_no_engine_is_judged_until_the_store_was_reachable_for_a_whole_timeout(
    store: Store, make_engine: Any, killer: Killer
) -> None:
    engine = make_engine(heartbeat_at=NOW)  # its heartbeats could not be written since
    # The judging node reached the store again at NOW + 40: 31 s of silence mean nothing yet.
    assert reap_lost_engines(store, SETTINGS, killer, now=NOW + 41, trusted_since=NOW + 40) == []
    assert reap_lost_engines(store, SETTINGS, killer, now=NOW + 69, trusted_since=NOW + 40) == []
    assert store.engines.get(engine.id).state is EngineState.RUNNING
    assert reap_lost_engines(store, SETTINGS, killer, now=NOW + 71, trusted_since=NOW + 40) == [
        engine.id
    ]


def test_the_duty_runner_knows_since_when_it_reaches_the_store(store: Store) -> None:
    import sqlalchemy as sa

    clock = [NOW]
    runner = DutyRunner(store, "a", [Duty("reaper", lambda now: None)], interval=1,
                        lease_ttl=10, clock=lambda: clock[0])  # fmt: skip
    assert runner.store_reachable_since == NOW  # a node just started knows nothing earlier
    runner.run_once()
    assert runner.store_reachable_since == NOW

    real = store.leases.acquire_many

    def unreachable(*args: Any, **kwargs: Any) -> Any:
        raise sa.exc.OperationalError("SELECT 1", {}, ConnectionRefusedError("refused"))

    store.leases.acquire_many = unreachable  # type: ignore[method-assign]
    clock[0] = NOW + 5
    assert runner.run_once() == []
    clock[0] = NOW + 20
    assert runner.run_once() == []
    store.leases.acquire_many = real  # type: ignore[method-assign]
    clock[0] = NOW + 21
    assert runner.run_once() == ["reaper"]
    assert runner.store_reachable_since == NOW + 21
    clock[0] = NOW + 22
    runner.run_once()
    assert runner.store_reachable_since == NOW + 21
