"""The queue (``store.resource_groups``): statements placed in a resource group wait (``queued``)
while it is full, each end admits the next in its own transaction, users take turns, subgroups'
limits and weights hold, ``maxQueued`` refuses, and a cancelled or ended queued statement frees
its place. At SQLite and PostgreSQL."""

from __future__ import annotations

import pytest

from sparkgate.errors import QueueFull
from sparkgate.recorded import RecordedError
from sparkgate.states import SessionKind, SessionState, StatementState
from sparkgate.store import Store
from sparkgate.store.records import StatementRecord
from sparkgate.store.resource_groups import GroupPlace, GroupSpec, spec_of
from tests.conftest import NOW

QUEUED, WAITING, RUNNING = StatementState.QUEUED, StatementState.WAITING, StatementState.RUNNING

_GROUPS = [
    GroupSpec("analysts", hard_concurrency_limit=2, max_queued=10),
    GroupSpec("etl", hard_concurrency_limit=3, max_queued=10, scheduling_policy="weighted"),
    GroupSpec("etl.big", hard_concurrency_limit=3, max_queued=5, scheduling_weight=3),
    GroupSpec("etl.small", hard_concurrency_limit=3, max_queued=5, scheduling_weight=1),
    GroupSpec("adhoc", hard_concurrency_limit=4, max_queued=10),
    GroupSpec("adhoc.${USER}", hard_concurrency_limit=1, max_queued=2),
]


def _configure(store: Store) -> None:
    with store.db.begin() as conn:
        assert store.resource_groups.sync(conn, _GROUPS)
        assert not store.resource_groups.sync(conn, _GROUPS)  # unchanged: nothing written


def _submit(store: Store, owner: str, group: str) -> StatementRecord:
    session = store.sessions.add(SessionKind.BATCH, now=NOW, owner=owner)
    return store.statements.add(session.id, "SELECT 1", now=NOW, resource_group=group)


def _end(store: Store, statement: StatementRecord) -> None:
    if store.statements.get(statement.id).state is WAITING:
        store.transitions.statement(statement.id, RUNNING, now=NOW)
    store.transitions.statement(statement.id, StatementState.SUCCESS, now=NOW)


def _states(store: Store, statements: list[StatementRecord]) -> list[StatementState]:
    return [store.statements.get(s.id).state for s in statements]


def test_a_full_group_queues_and_each_end_admits_the_next_users_taking_turns(
    store: Store,
) -> None:
    _configure(store)
    bob = [_submit(store, "bob", "analysts") for _ in range(8)]
    alice = _submit(store, "alice", "analysts")
    assert _states(store, bob) == [WAITING] * 2 + [QUEUED] * 6
    assert alice.state is QUEUED
    # Alice has no turn yet, bob two: she goes first, then bob's third.
    assert store.resource_groups.where(alice.id) == GroupPlace("analysts", 1)
    assert store.resource_groups.where(bob[2].id) == GroupPlace("analysts", 2)
    assert store.resource_groups.where(bob[7].id) == GroupPlace("analysts", 7)
    assert store.resource_groups.where(bob[0].id) == GroupPlace("analysts", None)

    _end(store, bob[0])  # its end's transaction admits alice's, ahead of bob's six
    assert store.statements.get(alice.id).state is WAITING
    assert _states(store, bob[2:]) == [QUEUED] * 6
    _end(store, bob[1])
    assert _states(store, bob[2:]) == [WAITING] + [QUEUED] * 5
    for statement in [alice, *bob[2:]]:
        _end(store, statement)
    assert _states(store, bob) == [StatementState.SUCCESS] * 8
    assert store.resource_groups.queued_roots() == []


def test_max_queued_refuses_and_a_cancelled_queued_statement_frees_its_place(
    store: Store,
) -> None:
    _configure(store)
    running = _submit(store, "carol", "adhoc.carol")
    queued = [_submit(store, "carol", "adhoc.carol") for _ in range(2)]
    assert _states(store, queued) == [QUEUED, QUEUED]
    with pytest.raises(QueueFull, match=r"adhoc\.carol has 2 queries queued"):
        _submit(store, "carol", "adhoc.carol")
    other = _submit(store, "dave", "adhoc.dave")  # ${USER}: a group of his own
    assert other.state is WAITING

    cancelled = store.transitions.statement(queued[0].id, StatementState.CANCELLED, now=NOW)
    assert cancelled.applied
    assert store.statements.get(queued[1].id).state is QUEUED  # carol's turn is still taken
    assert _submit(store, "carol", "adhoc.carol").state is QUEUED  # a place came free
    _end(store, running)
    assert store.statements.get(queued[1].id).state is WAITING


def test_a_session_ending_fails_its_queued_statements_and_admits_others(store: Store) -> None:
    _configure(store)
    first, second = _submit(store, "bob", "analysts"), _submit(store, "bob", "analysts")
    session = store.sessions.add(SessionKind.INTERACTIVE, now=NOW, owner="erin")
    mine = [
        store.statements.add(session.id, "SELECT 1", now=NOW, resource_group="analysts")
        for _ in range(2)
    ]
    later = _submit(store, "frank", "analysts")
    assert _states(store, [*mine, later]) == [QUEUED, QUEUED, QUEUED]
    error = RecordedError("ENGINE_LOST", "gone")
    with store.db.begin() as conn:
        store.transitions.end_statements_of_session(session.id, error, now=NOW, conn=conn)
    assert _states(store, mine) == [StatementState.FAILED] * 2
    _end(store, first)
    assert store.statements.get(later.id).state is WAITING
    assert store.statements.get(second.id).state is WAITING


def test_a_statement_of_a_session_with_one_queued_waits_behind_it(store: Store) -> None:
    """A session runs its statements in order: the second waits in the first's group even
    where its own selector would have placed it in a group with room."""
    _configure(store)
    fill = [_submit(store, "bob", "analysts") for _ in range(2)]
    session = store.sessions.add(SessionKind.INTERACTIVE, now=NOW, owner="bob")
    first = store.statements.add(session.id, "SELECT 1", now=NOW, resource_group="analysts")
    second = store.statements.add(session.id, "SELECT 2", now=NOW, resource_group="etl.big")
    assert (first.state, second.state) == (QUEUED, QUEUED)
    assert store.resource_groups.where(second.id) == GroupPlace("analysts", 2)
    _end(store, fill[0])
    assert _states(store, [first, second]) == [WAITING, QUEUED]
    _end(store, fill[1])
    assert _states(store, [first, second]) == [WAITING, WAITING]


def test_subgroups_share_their_parents_limit_by_weight(store: Store) -> None:
    _configure(store)
    big = [_submit(store, "etl", "etl.big") for _ in range(5)]
    small = [_submit(store, "etl", "etl.small") for _ in range(3)]
    assert _states(store, big) == [WAITING] * 3 + [QUEUED] * 2  # etl's limit of 3
    assert _states(store, small) == [QUEUED] * 3
    # weighted: big holds 3 turns at weight 3 (1 per unit), small 0: small goes next
    _end(store, big[0])
    assert _states(store, small) == [WAITING, QUEUED, QUEUED]
    # big 2/3 < small 1/1: big goes next
    _end(store, big[1])
    assert _states(store, big[3:]) == [WAITING, QUEUED]


def test_a_group_gone_from_the_configuration_limits_nothing(store: Store) -> None:
    _configure(store)
    held = [_submit(store, "bob", "analysts") for _ in range(3)]
    assert held[2].state is QUEUED
    with store.db.begin() as conn:
        store.resource_groups.sync(conn, [])
    assert store.resource_groups.queued_roots() == ["analysts"]
    assert store.transitions.admit("analysts", now=NOW) == [held[2].id]  # the safety net


def test_templates_find_their_configuration() -> None:
    specs = {s.name: s for s in _GROUPS}
    assert spec_of(specs, "adhoc.carol") == specs["adhoc.${USER}"]
    assert spec_of(specs, "etl.big") == specs["etl.big"]
    assert spec_of(specs, "etl.other") is None
    assert spec_of(specs, "nowhere") is None


def test_a_queued_connect_operation_is_admitted_straight_to_running(store: Store) -> None:
    """A Spark Connect operation no engine claims: recorded running when its group has room,
    else queued; its admission makes it running (its door forwards it then)."""
    _configure(store)
    fill = [_submit(store, "bob", "analysts") for _ in range(2)]
    session = store.sessions.add(SessionKind.INTERACTIVE, now=NOW, owner="alice")
    with store.db.begin() as conn:
        operation = store.statements.add(
            session.id, "range(1)", now=NOW, running=True, resource_group="analysts", conn=conn
        )
        store.connect.add_operation(operation.id, session.id, "op-1", conn=conn)
    assert operation.state is QUEUED and operation.started_at is None
    _end(store, fill[0])
    admitted = store.statements.get(operation.id)
    assert (admitted.state, admitted.started_at) == (RUNNING, NOW)
    store.transitions.statement(operation.id, StatementState.SUCCESS, now=NOW)
    assert _submit(store, "carol", "analysts").state is WAITING  # its end gave its turn back

    # With room, an operation is running at once.
    direct = store.statements.add(
        session.id, "range(2)", now=NOW, running=True, resource_group="analysts"
    )
    assert direct.state is QUEUED  # bob's second and carol's hold both turns
    _end(store, fill[1])
    assert store.statements.get(direct.id).state is WAITING  # not an operation: its engine runs it


def test_a_running_stream_job_holds_one_turn_until_its_session_ends(store: Store) -> None:
    """A stream job's statements end once its streams started; the streams go on, so the
    last step's turn is held until the session ends. Its earlier steps give theirs back."""
    _configure(store)
    stream = store.sessions.add(SessionKind.STREAMING, now=NOW, owner="erin")
    steps = [
        store.statements.add(stream.id, code, now=NOW, resource_group="analysts")
        for code in ("CREATE TEMP VIEW v AS SELECT 1", "INSERT INTO t SELECT * FROM s")
    ]
    assert _states(store, steps) == [WAITING, WAITING]
    for step in steps:
        _end(store, step)
    first = _submit(store, "bob", "analysts")
    second = _submit(store, "bob", "analysts")
    assert (first.state, second.state) == (WAITING, QUEUED)  # the stream holds one of two
    _end(store, first)
    assert store.statements.get(second.id).state is WAITING
    third = _submit(store, "bob", "analysts")
    assert third.state is QUEUED
    store.transitions.session(stream.id, SessionState.KILLED, now=NOW)  # the job stopped
    assert store.statements.get(third.id).state is WAITING
