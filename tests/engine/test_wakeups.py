"""The engine acts on hints, and on its safety poll when a hint is lost (real Spark in-process,
a real store, the engine's own loop on a thread). The safety poll here is either very long
(so only a hint can explain a statement run soon) or short with no hints at all."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from sparkgate.engine.process import Engine
from sparkgate.engine.shared import Look
from sparkgate.settings import Settings
from sparkgate.states import (
    TERMINAL_STATEMENT_STATES,
    EngineKind,
    EngineState,
    SessionKind,
    SessionState,
    StatementState,
)
from sparkgate.store import Store
from sparkgate.store.hints import SocketHints, engine_channel
from sparkgate.store.sessions import SessionWork
from sparkgate_dev import eventually

pytestmark = pytest.mark.spark

# Far beyond the waits below: a statement that ends within them was woken by a hint.
NEVER = 600.0


def running_engine(
    spark: Any,
    home: Path,
    *,
    hints: bool,
    safety_poll: float,
    before_listening: Callable[[Store, int], None] | None = None,
) -> Engine:
    store = Store.open(f"sqlite:///{home / 'store.db'}", hints=hints)
    store.migrate()
    now = time.time()
    record = store.engines.add(EngineKind.SHARED, now=now)
    store.transitions.engine(record.id, EngineState.RUNNING, now=now)
    settings = Settings(home=home, catalog="in-memory", hint_safety_poll=safety_poll)
    engine = Engine(settings, store, record.id)
    engine.spark = spark
    engine.shared.own_spark = spark  # what its table recovery uses
    engine.record = store.engines.get(record.id)
    if before_listening is not None:  # no hint of what it writes is on its way
        before_listening(store, record.id)
    engine._hints = store.db.hints.listen(engine_channel(record.id), engine._on_hint)

    def loop() -> None:  # Engine.run's loop, without starting Spark
        needed = Look.ALL
        while not engine._should_exit():
            engine._tick(needed)
            needed = engine._pause()

    threading.Thread(target=loop, name="engine-loop", daemon=True).start()
    return engine


@pytest.fixture
def engines(spark: Any, tmp_path: Path) -> Iterator[Any]:
    started: list[Engine] = []

    def start(
        *,
        hints: bool,
        safety_poll: float,
        before_listening: Callable[[Store, int], None] | None = None,
    ) -> Engine:
        engine = running_engine(
            spark,
            tmp_path,
            hints=hints,
            safety_poll=safety_poll,
            before_listening=before_listening,
        )
        started.append(engine)
        return engine

    yield start
    for engine in started:
        engine.request_stop(now=True)
        assert engine._hints is not None
        engine._hints.close()
        for worker in list(engine._workers.values()):
            worker.close()
        engine.store.close()


def run_one(engine: Engine, sql: str, timeout: float = 60) -> StatementState:
    store = engine.store
    session = store.sessions.add(SessionKind.INTERACTIVE, now=time.time())
    store.transitions.session(
        session.id, SessionState.STARTING, now=time.time(), engine_id=engine.engine_id
    )
    statement = store.statements.add(session.id, sql, now=time.time())

    def final() -> StatementState | None:
        state = store.statements.get(statement.id).state
        return state if state in TERMINAL_STATEMENT_STATES else None

    return eventually(final, timeout=timeout, what=f"statement {statement.id} to end")


def test_a_hint_wakes_the_engine(engines: Any) -> None:
    engine = engines(hints=True, safety_poll=NEVER)
    assert run_one(engine, "SELECT 1") is StatementState.SUCCESS
    assert run_one(engine, "SELECT 2") is StatementState.SUCCESS


def test_lost_hints_are_caught_by_the_safety_poll(engines: Any) -> None:
    engine = engines(hints=False, safety_poll=0.3)  # every hint lost
    assert run_one(engine, "SELECT 1") is StatementState.SUCCESS


def test_an_engine_whose_hint_socket_disappeared_still_works(engines: Any) -> None:
    engine = engines(hints=True, safety_poll=NEVER)
    assert run_one(engine, "SELECT 1") is StatementState.SUCCESS
    hints = engine.store.db.hints
    assert isinstance(hints, SocketHints)
    sockets = list(hints.directory.glob(f"{engine_channel(engine.engine_id)}.*.sock"))
    assert len(sockets) == 1
    sockets[0].unlink()  # e.g. a tmp cleaner
    # The listener binds again within a second and looks once; hints reach it again.
    eventually(sockets[0].exists, timeout=30, what="the hint socket to come back")
    assert run_one(engine, "SELECT 2") is StatementState.SUCCESS


def open_session(engine: Engine) -> int:
    store = engine.store
    session = store.sessions.add(SessionKind.INTERACTIVE, now=time.time())
    store.transitions.session(
        session.id, SessionState.STARTING, now=time.time(), engine_id=engine.engine_id
    )
    eventually(
        lambda: store.sessions.get(session.id).state is SessionState.IDLE,
        timeout=60,
        what=f"session {session.id} to open",
    )
    return session.id


def test_a_statement_waiting_behind_another_runs_when_it_ends(engines: Any) -> None:
    """The second statement's hint comes while the first runs, so the engine cannot claim it
    then; the first one's end must bring it a read (there is no safety poll to rely on)."""
    engine = engines(hints=True, safety_poll=NEVER)
    store = engine.store
    session_id = open_session(engine)
    with store.db.begin() as conn:  # one commit: both are waiting when the engine reads
        ids = [
            store.statements.add(session_id, sql, now=time.time(), conn=conn).id
            for sql in ("SELECT count(*) FROM range(100000)", "SELECT 2")
        ]

    def ended() -> list[StatementState] | None:
        states = [store.statements.get(i).state for i in ids]
        return states if all(s in TERMINAL_STATEMENT_STATES for s in states) else None

    states = eventually(ended, timeout=60, what="both statements to end")
    assert states == [StatementState.SUCCESS, StatementState.SUCCESS]


def test_a_statement_sent_while_another_runs_runs_when_it_ends(engines: Any) -> None:
    """Its hint finds the session busy: the running statement's end must wake the loop."""
    engine = engines(hints=True, safety_poll=NEVER)
    store = engine.store
    session_id = open_session(engine)
    first = store.statements.add(
        session_id, "SELECT count(*) FROM range(20000000) a CROSS JOIN range(2)", now=time.time()
    ).id
    eventually(
        lambda: store.statements.get(first).state is not StatementState.WAITING,
        timeout=60,
        what="the first statement to start",
    )
    second = store.statements.add(session_id, "SELECT 2", now=time.time()).id

    def ended() -> list[StatementState] | None:
        states = [store.statements.get(i).state for i in (first, second)]
        return states if all(s in TERMINAL_STATEMENT_STATES for s in states) else None

    states = eventually(ended, timeout=60, what="both statements to end")
    assert states == [StatementState.SUCCESS, StatementState.SUCCESS]


def test_a_statement_costs_the_engine_one_read_of_its_work(engines: Any) -> None:
    """A statement's end needs no read of the sessions, and with nothing waiting behind it
    does not even wake the loop: only the hint of a new statement (or the safety poll, here
    never) does.

    The session is placed before the engine listens, so that the engine's first pass opens it
    with no hint of it still on its way to wake a pass the count would see."""
    placed: list[int] = []

    def place_session(store: Store, engine_id: int) -> None:
        session = store.sessions.add(SessionKind.INTERACTIVE, now=time.time())
        store.transitions.session(
            session.id, SessionState.STARTING, now=time.time(), engine_id=engine_id
        )
        placed.append(session.id)

    engine = engines(hints=True, safety_poll=NEVER, before_listening=place_session)
    store = engine.store
    (session_id,) = placed
    eventually(
        lambda: store.sessions.get(session_id).state is SessionState.IDLE,
        timeout=60,
        what=f"session {session_id} to open",
    )
    reads = 0
    work_of_engine: Callable[[int], list[SessionWork]] = store.sessions.work_of_engine

    def counted(engine_id: int) -> list[SessionWork]:
        nonlocal reads
        reads += 1
        return work_of_engine(engine_id)

    setattr(store.sessions, "work_of_engine", counted)  # noqa: B010 (mypy: a method)
    ticks = engine._ticks
    for n in range(5):
        statement_id = store.statements.add(session_id, f"SELECT {n}", now=time.time()).id

        def ended(statement_id: int = statement_id) -> bool:
            """Succeeded in the store, and over in the engine: its worker records the end
            before it lets go, and a statement sent between the two would wait behind it
            (a second read, by design: ``test_a_statement_sent_while_another_runs...``)."""
            if store.statements.get(statement_id).state is not StatementState.SUCCESS:
                return False
            with engine.shared.lock:
                return all(e.done for e in engine.shared.running.values())

        eventually(ended, timeout=60, what=f"statement {statement_id} to succeed and let go")
    assert reads == 5
    assert engine._ticks - ticks == 5  # one pass of the loop each
