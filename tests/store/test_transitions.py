"""Every move between states is allowed exactly when the transition table says so."""

from __future__ import annotations

from typing import Any

import pytest

from sparkgate.states import (
    ACTIVE_SESSION_STATES,
    ACTIVE_STATEMENT_STATES,
    ENGINE_TRANSITIONS,
    LIVE_ENGINE_STATES,
    SESSION_TRANSITIONS,
    STATEMENT_TRANSITIONS,
    TERMINAL_ENGINE_STATES,
    TERMINAL_SESSION_STATES,
    TERMINAL_STATEMENT_STATES,
    EngineKind,
    EngineState,
    SessionState,
    StatementState,
)
from sparkgate.store import Store
from tests.concurrency import race
from tests.conftest import NOW, force_state


@pytest.mark.parametrize(
    ("enum", "active", "terminal", "table"),
    [
        (StatementState, ACTIVE_STATEMENT_STATES, TERMINAL_STATEMENT_STATES, STATEMENT_TRANSITIONS),
        (SessionState, ACTIVE_SESSION_STATES, TERMINAL_SESSION_STATES, SESSION_TRANSITIONS),
        (EngineState, LIVE_ENGINE_STATES, TERMINAL_ENGINE_STATES, ENGINE_TRANSITIONS),
    ],
)
def test_state_groups_split_the_enum(enum: Any, active: Any, terminal: Any, table: Any) -> None:
    assert active | terminal == frozenset(enum)
    assert not active & terminal
    assert set(table) == set(enum)
    for state in terminal:
        assert table[state] == frozenset(), f"{state} is final but has moves out"
    for state in active:
        assert table[state] & terminal, f"{state} cannot reach a final state"


def test_state_values_are_the_documented_strings() -> None:
    assert [s.value for s in StatementState] == [
        "queued", "waiting", "running", "success", "failed", "cancelling", "cancelled",
    ]  # fmt: skip
    assert [s.value for s in SessionState] == [
        "not_started", "starting", "idle", "busy", "dead", "killed", "error",
    ]  # fmt: skip


def _pairs(table: Any) -> list[tuple[Any, Any]]:
    return [(a, b) for a in table for b in table]


@pytest.mark.parametrize(("source", "target"), _pairs(STATEMENT_TRANSITIONS))
def test_statement_moves(
    store: Store, make_session: Any, source: StatementState, target: StatementState
) -> None:
    session = make_session()
    statement = store.statements.add(session.id, "SELECT 1", now=NOW)
    force_state(store, "statements", statement.id, source.value)
    outcome = store.transitions.statement(statement.id, target, now=NOW + 1)
    allowed = target in STATEMENT_TRANSITIONS[source]
    assert outcome.applied is allowed
    assert outcome.state is (target if allowed else source)
    assert store.statements.get(statement.id).state is outcome.state


@pytest.mark.parametrize(("source", "target"), _pairs(SESSION_TRANSITIONS))
def test_session_moves(
    store: Store, make_session: Any, source: SessionState, target: SessionState
) -> None:
    session = make_session(state=source)
    outcome = store.transitions.session(session.id, target, now=NOW + 1)
    assert outcome.applied is (target in SESSION_TRANSITIONS[source])


@pytest.mark.parametrize(("source", "target"), _pairs(ENGINE_TRANSITIONS))
def test_engine_moves(
    store: Store, make_engine: Any, source: EngineState, target: EngineState
) -> None:
    engine = make_engine(state=source.value)
    outcome = store.transitions.engine(engine.id, target, now=NOW + 1)
    assert outcome.applied is (target in ENGINE_TRANSITIONS[source])


def test_transition_records_times(store: Store, make_session: Any) -> None:
    session = make_session()
    statement = store.statements.add(session.id, "SELECT 1", now=NOW)
    store.transitions.statement(statement.id, StatementState.RUNNING, now=NOW + 1)
    store.transitions.statement(statement.id, StatementState.SUCCESS, now=NOW + 2, progress=1.0)
    done = store.statements.get(statement.id)
    assert (done.created_at, done.started_at, done.finished_at) == (NOW, NOW + 1, NOW + 2)
    assert done.version == 3
    assert done.progress == 1.0


def test_unknown_row_is_reported_missing(store: Store) -> None:
    outcome = store.transitions.statement(12345, StatementState.RUNNING, now=NOW)
    assert not outcome.applied and outcome.missing


def test_expected_narrows_and_rejects_illegal_sources(store: Store, make_session: Any) -> None:
    session = make_session(state=SessionState.BUSY)
    refused = store.transitions.session(
        session.id, SessionState.DEAD, now=NOW, expected=[SessionState.IDLE]
    )
    assert not refused.applied and refused.state is SessionState.BUSY
    with pytest.raises(ValueError, match="not a legal move"):
        store.transitions.session(
            session.id, SessionState.IDLE, now=NOW, expected=[SessionState.DEAD]
        )


def test_expected_version_guards_against_stale_writers(store: Store, make_session: Any) -> None:
    session = make_session(state=SessionState.IDLE)
    stale = session.version
    assert store.transitions.session(session.id, SessionState.BUSY, now=NOW).applied
    assert store.transitions.session(session.id, SessionState.IDLE, now=NOW).applied
    outcome = store.transitions.session(
        session.id, SessionState.BUSY, now=NOW, expected_version=stale
    )
    assert not outcome.applied


@pytest.mark.parametrize("round_", range(10))
def test_racing_writers_exactly_one_wins(store: Store, make_session: Any, round_: int) -> None:
    """Several threads, each with its own connection, claim the same statement at once."""
    session = make_session()
    statement = store.statements.add(session.id, "SELECT 1", now=NOW)

    def claim() -> bool:
        return store.transitions.statement(
            statement.id, StatementState.RUNNING, now=NOW, expected=[StatementState.WAITING]
        ).applied

    assert sorted(race(claim, claim, claim, claim)) == [False, False, False, True]


@pytest.mark.parametrize("round_", range(10))
def test_cancel_racing_completion_has_one_outcome(
    store: Store, make_session: Any, round_: int
) -> None:
    """The API cancelling and the engine finishing at the same moment: one of them wins and
    the statement ends in one coherent state."""
    session = make_session()
    statement = store.statements.add(session.id, "SELECT 1", now=NOW)
    store.transitions.statement(statement.id, StatementState.RUNNING, now=NOW)

    def move(to: StatementState) -> bool:
        return store.transitions.statement(
            statement.id, to, now=NOW, expected=[StatementState.RUNNING]
        ).applied

    cancelled, finished = race(
        lambda: move(StatementState.CANCELLING), lambda: move(StatementState.SUCCESS)
    )
    assert cancelled != finished
    final = store.statements.get(statement.id).state
    assert final is (StatementState.CANCELLING if cancelled else StatementState.SUCCESS)


def test_bulk_moves_return_what_moved(store: Store, make_session: Any, make_engine: Any) -> None:
    engine = make_engine(kind=EngineKind.SHARED)
    a = make_session(state=SessionState.IDLE, engine_id=engine.id)
    b = make_session(state=SessionState.BUSY, engine_id=engine.id)
    make_session(state=SessionState.KILLED, engine_id=engine.id)
    s1 = store.statements.add(a.id, "SELECT 1", now=NOW)
    s2 = store.statements.add(a.id, "SELECT 2", now=NOW)
    force_state(store, "statements", s2.id, "success")
    moved = store.transitions.sessions_of_engine(engine.id, SessionState.DEAD, now=NOW)
    assert moved == sorted([a.id, b.id])
    assert store.transitions.statements_of_session(a.id, StatementState.FAILED, now=NOW) == [s1.id]
