"""Launchers end what they start: a local process group (local engines, YARN client-mode
drivers) with real processes here; a Kubernetes driver pod through spark-submit --kill, with
a fake command runner (no Kubernetes here). And ``sparkgate stop`` goes through them."""

from __future__ import annotations

import socket
import subprocess
import time
from collections.abc import Iterator
from contextlib import closing
from pathlib import Path

import pytest

from sparkgate.launcher.base import Launcher
from sparkgate.launcher.local import LocalLauncher
from sparkgate.launcher.shutdown import stop_home
from sparkgate.launcher.submit import YarnLauncher
from sparkgate.processes import alive
from sparkgate.recorded import RecordedError
from sparkgate.settings import Settings
from sparkgate.states import LIVE_ENGINE_STATES, EngineKind, EngineState
from sparkgate.store import Store
from sparkgate.store.records import EngineRecord
from tests.conftest import force_state

PG = "postgresql+psycopg://sg@db.internal:5432/sparkgate"
HERE = socket.gethostname()


def record(pid: int | None, host: str | None = HERE) -> EngineRecord:
    return EngineRecord(
        id=7, kind=EngineKind.SHARED, state=EngineState.RUNNING, session_id=None, conf={},
        node_id="n", host=host, pid=pid, app_id=None, log_path=None, error=None, version=1,
        created_at=0.0, started_at=None, heartbeat_at=None, finished_at=None, updated_at=0.0,
    )  # fmt: skip


@pytest.fixture
def store(sqlite_store: Store) -> Store:
    return sqlite_store  # the launchers' subject is processes, not the store


@pytest.fixture
def group() -> Iterator[tuple[subprocess.Popen[str], int]]:
    """A process in its own session, as engines are, with a child of its own (as the Python
    driver has its JVM): the leader and the child's pid."""
    leader = subprocess.Popen(
        ["sh", "-c", "sleep 300 & echo $!; wait"],
        stdout=subprocess.PIPE,
        text=True,
        start_new_session=True,
    )
    assert leader.stdout is not None
    child = int(leader.stdout.readline())
    try:
        yield leader, child
    finally:
        leader.kill()
        leader.wait()
        leader.stdout.close()
        # The child is reparented on the leader's death; end it if a test left it running.
        if alive(child):
            subprocess.run(["kill", "-9", str(child)], check=False)


def gone(pid: int, timeout: float = 10.0) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if not alive(pid):
            return True
        time.sleep(0.05)
    return False


def local_launchers(tmp_path: Path, store: Store) -> list[Launcher]:
    yarn = Settings(home=tmp_path, store_url=PG, launcher="yarn", spark_master="yarn")
    return [LocalLauncher(Settings(home=tmp_path), store), YarnLauncher(yarn, store)]


@pytest.mark.parametrize("which", [0, 1], ids=["local", "yarn-client-mode"])
def test_a_driver_here_is_checked_and_killed_with_its_process_group(
    tmp_path: Path, store: Store, group: tuple[subprocess.Popen[str], int], which: int
) -> None:
    launcher = local_launchers(tmp_path, store)[which]
    leader, child = group
    engine = record(leader.pid)
    assert launcher.alive(engine) is True
    assert launcher.kill(engine) is True
    assert leader.wait(timeout=10) < 0  # ended by a signal
    assert gone(child), "the whole group goes, not just the leader"
    assert launcher.alive(engine) is False
    # Again: harmless. (It may say True: the exited child, if this container's init reaps
    # nothing, lingers as a zombie that can still be signalled.)
    launcher.kill(engine)
    assert launcher.alive(engine) is False


@pytest.mark.parametrize("which", [0, 1], ids=["local", "yarn-client-mode"])
def test_killing_an_engine_that_is_gone_kills_nothing(
    tmp_path: Path, store: Store, which: int
) -> None:
    launcher = local_launchers(tmp_path, store)[which]
    sleeper = subprocess.Popen(["sleep", "300"], start_new_session=True)
    engine = record(sleeper.pid)
    try:
        assert launcher.alive(engine) is True
        assert launcher.kill(engine) is True
        assert sleeper.wait(timeout=10) < 0
    finally:
        sleeper.kill()  # in case the launcher did not
        sleeper.wait()
    assert launcher.alive(engine) is False
    assert launcher.kill(engine) is False


@pytest.mark.parametrize("which", [0, 1], ids=["local", "yarn-client-mode"])
def test_a_pid_recorded_elsewhere_or_not_yet_is_left_alone(
    tmp_path: Path, store: Store, group: tuple[subprocess.Popen[str], int], which: int
) -> None:
    launcher = local_launchers(tmp_path, store)[which]
    leader, _ = group
    # The same number on another host is another process: it says nothing here.
    for engine in (record(leader.pid, host="elsewhere"), record(None)):
        assert launcher.alive(engine) is None
        assert launcher.kill(engine) is False
    assert leader.poll() is None


class Recorder:
    """A launcher whose engines' processes are as the test says."""

    def __init__(self, fates: dict[int, bool | None]) -> None:
        self.fates = fates
        self.killed: list[int] = []

    def launch(self, engine: EngineRecord) -> None:
        raise AssertionError("stopping launches nothing")

    def alive(self, engine: EngineRecord) -> bool | None:
        return self.fates[engine.id]

    def log(self, engine: EngineRecord, *, tail: int | None = None) -> str:
        return ""

    def kill(self, engine: EngineRecord) -> bool:
        self.killed.append(engine.id)
        return True


def test_stopping_a_home_asks_the_launcher_what_runs_and_what_to_kill(tmp_path: Path) -> None:
    settings = Settings(home=tmp_path)
    with closing(Store.open(settings.resolved_store_url)) as store:
        store.migrate()
        exited, hung, obeys = (store.engines.add(EngineKind.SHARED, now=0.0) for _ in range(3))
        for engine in (exited, hung, obeys):
            force_state(store, "engines", engine.id, "running", heartbeat_at=0.0)
    launcher = Recorder({exited.id: False, hung.id: None, obeys.id: True})
    ticks = iter(range(10**6))

    def clock() -> float:
        now = float(next(ticks))
        if now == 3:  # the engine that obeys writes its own end while sparkgate stop waits
            with closing(Store.open(settings.resolved_store_url)) as store:
                force_state(store, "engines", obeys.id, "stopped")
        return now

    report = stop_home(settings, timeout=6, force=True, clock=clock, launcher=launcher)
    assert sorted(report.stopped) == [exited.id, obeys.id]
    assert report.terminated == [hung.id]
    assert launcher.killed == [hung.id]  # an engine of unknown fate is killed, not trusted
    with closing(Store.open(settings.resolved_store_url)) as store:
        assert store.engines.list_all(states=LIVE_ENGINE_STATES) == []
        assert store.engines.get(hung.id).error == RecordedError(
            "ENGINE_TERMINATED", "did not stop when asked"
        )
