"""The engine loop with real Spark (in-process) and a real store, ticked by hand."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest

from sparkgate.engine import executors
from sparkgate.engine.process import Engine
from sparkgate.errors import StoreUnavailable
from sparkgate.results import read_page
from sparkgate.runtime.contract import ExecResult, ExecutionContext
from sparkgate.settings import Settings
from sparkgate.states import (
    EngineKind,
    EngineState,
    SessionKind,
    SessionState,
    StatementKind,
    StatementState,
)
from sparkgate.store import Store

pytestmark = pytest.mark.spark


@pytest.fixture
def engine(spark: Any, tmp_path: Path) -> Iterator[Engine]:
    store = Store.open(f"sqlite:///{tmp_path / 'store.db'}")
    store.migrate()
    now = time.time()
    record = store.engines.add(EngineKind.SHARED, now=now)
    store.transitions.engine(record.id, EngineState.RUNNING, now=now)
    engine = Engine(Settings(home=tmp_path, catalog="in-memory"), store, record.id)
    engine.spark = spark
    engine.record = store.engines.get(record.id)
    try:
        yield engine
    finally:
        engine.request_stop(now=True)
        for execution in list(engine._running.values()):
            execution.cancelled.set()
            while not execution.done:
                engine._cancel_jobs(execution)
                execution.finished.wait(0.2)
        for worker in list(engine._workers.values()):
            worker.close()
        store.close()


def open_session(engine: Engine, kind: SessionKind = SessionKind.INTERACTIVE) -> int:
    store = engine.store
    session = store.sessions.add(kind, now=time.time())
    store.transitions.session(
        session.id, SessionState.STARTING, now=time.time(), engine_id=engine.engine_id
    )
    tick_until(engine, lambda: store.sessions.get(session.id).state is SessionState.IDLE)
    return session.id


def tick_until(engine: Engine, done: Callable[[], bool], timeout: float = 120) -> None:
    deadline = time.monotonic() + timeout
    while not done():
        assert time.monotonic() < deadline, "the engine did not get there in time"
        engine._tick()
        time.sleep(0.02)


def lose_an_answer(
    engine: Engine,
    monkeypatch: pytest.MonkeyPatch,
    lost: list[str],
    what: str,
    *,
    when: Callable[[], bool],
) -> None:
    """The first transaction after which ``when()`` holds commits, and its answer is lost on
    the way back (the store drops the connection): noted in ``lost`` as ``what``."""
    real_begin = engine.store.db.begin

    @contextmanager
    def begin_losing_the_answer() -> Iterator[Any]:
        with real_begin() as conn:
            yield conn
        if not lost and when():
            lost.append(what)
            raise StoreUnavailable("The store dropped the connection after the commit.")

    monkeypatch.setattr(engine.store.db, "begin", begin_losing_the_answer)


def test_statement_is_claimed_run_and_reported(engine: Engine) -> None:
    session_id = open_session(engine)
    statement = engine.store.statements.add(session_id, "SELECT id FROM range(3)", now=time.time())
    tick_until(
        engine, lambda: engine.store.statements.get(statement.id).state is StatementState.SUCCESS
    )
    done = engine.store.statements.get(statement.id)
    assert done.result is not None and done.result.row_count == 3
    assert done.result.path is not None
    assert read_page(done.result.path, 0, 10) == ([[0], [1], [2]], 3)
    tick_until(engine, lambda: engine.store.sessions.get(session_id).state is SessionState.IDLE)


def test_statements_of_a_session_run_in_order_one_at_a_time(engine: Engine) -> None:
    session_id = open_session(engine)
    first = engine.store.statements.add(
        session_id, "SELECT sum(id % 7) FROM range(100000000000)", now=time.time()
    )
    second = engine.store.statements.add(session_id, "SELECT 2", now=time.time())
    tick_until(
        engine, lambda: engine.store.statements.get(first.id).state is StatementState.RUNNING
    )
    for _ in range(10):
        engine._tick()
    assert engine.store.statements.get(second.id).state is StatementState.WAITING
    engine.store.transitions.statement(first.id, StatementState.CANCELLING, now=time.time())
    tick_until(
        engine, lambda: engine.store.statements.get(first.id).state is StatementState.CANCELLED
    )
    tick_until(
        engine, lambda: engine.store.statements.get(second.id).state is StatementState.SUCCESS
    )


def test_an_outcome_the_store_refuses_still_ends_the_statement(
    engine: Engine, monkeypatch: pytest.MonkeyPatch
) -> None:
    def unstorable(ctx: ExecutionContext) -> ExecResult:
        return ExecResult(output={"data": {"not json": object()}})

    monkeypatch.setitem(executors.EXECUTORS, StatementKind.SQL, unstorable)
    session_id = open_session(engine)
    statement = engine.store.statements.add(session_id, "SELECT 1", now=time.time())
    tick_until(
        engine, lambda: engine.store.statements.get(statement.id).state is StatementState.FAILED
    )
    error = engine.store.statements.get(statement.id).error
    assert error is not None and error.code == "OUTCOME_NOT_RECORDED"
    tick_until(engine, lambda: engine.store.sessions.get(session_id).state is SessionState.IDLE)


def test_a_claim_written_but_unanswered_still_runs_its_statement(
    engine: Engine, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The store drops away between writing a claim and answering it: the statement, which
    the store says runs, runs once the store answers again (it used to stay running for
    ever, on an engine alive and heartbeating; the chaos suite's store outage found it)."""
    session_id = open_session(engine)
    lost: list[str] = []
    statement = engine.store.statements.add(session_id, "SELECT 42", now=time.time())
    lose_an_answer(engine, monkeypatch, lost, "claim", when=lambda: True)
    with pytest.raises(StoreUnavailable):
        tick_until(engine, lambda: False, timeout=30)  # the claim's tick meets the outage
    assert lost == ["claim"]
    assert engine.store.statements.get(statement.id).state is StatementState.RUNNING
    assert statement.id not in engine._running
    tick_until(
        engine, lambda: engine.store.statements.get(statement.id).state is StatementState.SUCCESS
    )
    done = engine.store.statements.get(statement.id)
    assert done.result is not None and done.result.path is not None
    assert read_page(done.result.path, 0, 10) == ([[42]], 1)
    tick_until(engine, lambda: engine.store.sessions.get(session_id).state is SessionState.IDLE)


def test_an_outcome_written_but_unanswered_keeps_its_result(
    engine: Engine, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The store drops away after committing a statement's success, before answering: the
    engine writes the outcome again, finds it already recorded, and leaves the result files
    the record points to (it used to delete them as nobody's, so the query answered
    RESULT_GONE; the chaos suite's store outage found it)."""
    session_id = open_session(engine)
    lost: list[str] = []
    statement = engine.store.statements.add(session_id, "SELECT 42", now=time.time())

    def succeeded() -> bool:
        return engine.store.statements.get(statement.id).state is StatementState.SUCCESS

    lose_an_answer(engine, monkeypatch, lost, "outcome", when=succeeded)
    tick_until(engine, lambda: bool(lost) and statement.id not in engine._running)
    assert lost == ["outcome"]
    done = engine.store.statements.get(statement.id)
    assert done.state is StatementState.SUCCESS and done.result is not None
    assert done.result.path is not None
    assert read_page(done.result.path, 0, 10) == ([[42]], 1)


@pytest.mark.parametrize("written", [False, True], ids=["not-written", "answer-lost"])
def test_a_session_whose_open_met_a_store_outage_still_opens(
    engine: Engine, monkeypatch: pytest.MonkeyPatch, written: bool
) -> None:
    """The write saying a new session is open meets an outage (not written, or written with
    its answer lost): the session still opens, and its statements run."""
    store = engine.store
    session = store.sessions.add(SessionKind.INTERACTIVE, now=time.time())
    store.transitions.session(
        session.id, SessionState.STARTING, now=time.time(), engine_id=engine.engine_id
    )
    real_begin = store.db.begin
    failed: list[str] = []

    @contextmanager
    def begin_failing_once() -> Iterator[Any]:
        if failed:
            with real_begin() as conn:
                yield conn
            return
        failed.append("open")
        if not written:
            raise StoreUnavailable("The store cannot be reached.")
        with real_begin() as conn:
            yield conn
        raise StoreUnavailable("The store dropped the connection after the commit.")

    monkeypatch.setattr(store.db, "begin", begin_failing_once)
    with pytest.raises(StoreUnavailable):
        tick_until(engine, lambda: False, timeout=30)
    assert failed == ["open"]
    expected = SessionState.IDLE if written else SessionState.STARTING
    assert store.sessions.get(session.id).state is expected
    statement = store.statements.add(session.id, "SELECT 7", now=time.time())
    tick_until(engine, lambda: store.statements.get(statement.id).state is StatementState.SUCCESS)


def test_a_killed_session_stops_its_statement(engine: Engine) -> None:
    session_id = open_session(engine)
    statement = engine.store.statements.add(
        session_id, "SELECT sum(id % 7) FROM range(100000000000)", now=time.time()
    )
    tick_until(
        engine, lambda: engine.store.statements.get(statement.id).state is StatementState.RUNNING
    )
    with engine.store.db.begin() as conn:
        engine.store.transitions.session(
            session_id, SessionState.KILLED, now=time.time(), conn=conn
        )
        engine.store.transitions.statements_of_session(
            session_id,
            StatementState.CANCELLING,
            now=time.time(),
            expected=[StatementState.RUNNING],
            conn=conn,
        )
    tick_until(
        engine, lambda: engine.store.statements.get(statement.id).state is StatementState.CANCELLED
    )
    assert session_id not in engine._sessions
