"""The engine acts on hints, and on its safety poll when a hint is lost (real Spark in-process,
a real store, the engine's own loop on a thread). The safety poll here is either very long
(so only a hint can explain a statement run soon) or short with no hints at all."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from sparkgate.engine.process import Engine
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
from sparkgate_dev import eventually

pytestmark = pytest.mark.spark

# Far beyond the waits below: a statement that ends within them was woken by a hint.
NEVER = 600.0


def running_engine(spark: Any, home: Path, *, hints: bool, safety_poll: float) -> Engine:
    store = Store.open(f"sqlite:///{home / 'store.db'}", hints=hints)
    store.migrate()
    now = time.time()
    record = store.engines.add(EngineKind.SHARED, now=now)
    store.transitions.engine(record.id, EngineState.RUNNING, now=now)
    settings = Settings(home=home, catalog="in-memory", hint_safety_poll=safety_poll)
    engine = Engine(settings, store, record.id)
    engine.spark = spark
    engine.record = store.engines.get(record.id)
    engine._hints = store.db.hints.listen(engine_channel(record.id), engine._on_hint)

    def loop() -> None:
        while not engine._should_exit():
            engine._tick()
            engine._pause()

    threading.Thread(target=loop, name="engine-loop", daemon=True).start()
    return engine


@pytest.fixture
def engines(spark: Any, tmp_path: Path) -> Iterator[Any]:
    started: list[Engine] = []

    def start(*, hints: bool, safety_poll: float) -> Engine:
        engine = running_engine(spark, tmp_path, hints=hints, safety_poll=safety_poll)
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
