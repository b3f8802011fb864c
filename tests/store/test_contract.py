"""The store's contract, identical on SQLite and PostgreSQL."""

from __future__ import annotations

from typing import Any

import pytest

from sparkgate.errors import BatchSessionUsed, QueryNotFound, SessionNotActive, SessionNotFound
from sparkgate.states import (
    EngineKind,
    EngineState,
    SessionKind,
    SessionState,
    StatementKind,
    StatementState,
)
from sparkgate.store import Store
from sparkgate.store.records import TaskCount, Window
from sparkgate.store.session_attributes import SessionAttributes
from tests.concurrency import race
from tests.conftest import NOW, force_state


def test_migrations_are_idempotent(store: Store) -> None:
    store.migrate()
    store.migrate()


def test_session_roundtrip_and_filters(store: Store, make_session: Any) -> None:
    created = store.sessions.add(
        SessionKind.INTERACTIVE,
        now=NOW,
        name="etl",
        conf={"spark.sql.shuffle.partitions": "4"},
        attributes=SessionAttributes(livy={"driverMemory": "1g"}),
    )
    got = store.sessions.get(created.id)
    assert got == created
    assert got.state is SessionState.NOT_STARTED and got.conf == {
        "spark.sql.shuffle.partitions": "4"
    }
    make_session(state=SessionState.IDLE)
    make_session(state=SessionState.DEAD)
    idle = store.sessions.list_page(states=[SessionState.IDLE])
    assert [s.state for s in idle.items] == [SessionState.IDLE] and idle.total == 1
    page = store.sessions.list_page(window=Window(offset=1, limit=1))
    assert page.total == 3 and len(page.items) == 1 and page.items[0].id > created.id


def test_sessions_ended_long_ago_can_be_left_out(store: Store, make_session: Any) -> None:
    live = make_session(state=SessionState.IDLE)
    recent = make_session(state=SessionState.DEAD)
    old = make_session(state=SessionState.KILLED)
    force_state(store, "sessions", recent.id, "dead", finished_at=NOW - 10)
    force_state(store, "sessions", old.id, "killed", finished_at=NOW - 1000)
    page = store.sessions.list_page(ended_since=NOW - 600)
    assert [s.id for s in page.items] == [live.id, recent.id] and page.total == 2


def test_one_off_queries_sessions_can_be_left_out_or_listed_alone(
    store: Store, make_session: Any
) -> None:
    interactive = make_session()
    # A Livy batch and a batch session made through /v1/sessions are not one-off queries.
    livy = store.sessions.add(
        SessionKind.BATCH, now=NOW, attributes=SessionAttributes(livy={"file": "a.py"})
    )
    plain = store.sessions.add(SessionKind.BATCH, now=NOW)
    one_off = [
        store.sessions.add(
            SessionKind.BATCH, now=NOW, attributes=SessionAttributes(isolation=isolation)
        )
        for isolation in ("session", "engine")
    ]
    others = store.sessions.list_page(one_off=False)
    assert [s.id for s in others.items] == [interactive.id, livy.id, plain.id]
    assert others.total == 3
    alone = store.sessions.list_page(one_off=True, kinds=[SessionKind.BATCH])
    assert [s.id for s in alone.items] == [s.id for s in one_off] and alone.total == 2
    assert store.sessions.list_page().total == 5  # no filter: every session, as Livy lists


def test_first_statements_of_sessions(store: Store, make_session: Any) -> None:
    a, b, c = make_session(), make_session(), make_session()
    store.statements.add(a.id, "SELECT 'a0'", now=NOW)
    store.statements.add(a.id, "SELECT 'a1'", now=NOW)
    store.statements.add(b.id, "SELECT 'b0'", now=NOW, kind=StatementKind.PYSPARK)
    first = store.statements.first_of_sessions([a.id, b.id, c.id])
    assert {k: v.code for k, v in first.items()} == {a.id: "SELECT 'a0'", b.id: "SELECT 'b0'"}
    assert first[b.id].kind is StatementKind.PYSPARK
    assert store.statements.first_of_sessions([]) == {}


def test_unknown_ids_raise_not_found(store: Store) -> None:
    with pytest.raises(SessionNotFound):
        store.sessions.get(999)
    with pytest.raises(QueryNotFound):
        store.statements.get(999)
    with pytest.raises(SessionNotFound):
        store.statements.add(999, "SELECT 1", now=NOW)


def test_statements_are_numbered_per_session(store: Store, make_session: Any) -> None:
    a, b = make_session(), make_session()
    seqs_a = [store.statements.add(a.id, f"SELECT {i}", now=NOW).seq for i in range(3)]
    seqs_b = [store.statements.add(b.id, "SELECT 1", now=NOW).seq]
    assert seqs_a == [0, 1, 2] and seqs_b == [0]
    assert store.sessions.get(a.id).statement_count == 3
    third = store.statements.find_by_seq(a.id, 2)
    assert third is not None and third.code == "SELECT 2" and third.kind is StatementKind.SQL


def test_ended_session_takes_no_statement(store: Store, make_session: Any) -> None:
    session = make_session(state=SessionState.KILLED)
    with pytest.raises(SessionNotActive, match="killed"):
        store.statements.add(session.id, "SELECT 1", now=NOW)


def test_batch_session_takes_one_statement(store: Store, make_session: Any) -> None:
    session = make_session(state=SessionState.NOT_STARTED, kind=SessionKind.BATCH)
    store.statements.add(session.id, "SELECT 1", now=NOW)
    with pytest.raises(BatchSessionUsed):
        store.statements.add(session.id, "SELECT 2", now=NOW)


def test_concurrent_adds_get_distinct_numbers(store: Store, make_session: Any) -> None:
    session = make_session()

    def add_five() -> list[int]:
        return [store.statements.add(session.id, "SELECT 1", now=NOW).seq for _ in range(5)]

    seqs = [seq for batch in race(add_five, add_five, add_five, add_five) for seq in batch]
    assert sorted(seqs) == list(range(20))


def test_work_of_engine_names_each_sessions_oldest_waiting(
    store: Store, make_session: Any, make_engine: Any
) -> None:
    engine = make_engine()
    other = make_engine()
    s1 = make_session(engine_id=engine.id)
    s2 = make_session(engine_id=engine.id)
    make_session(engine_id=other.id)
    make_session(state=SessionState.DEAD, engine_id=engine.id)
    first = store.statements.add(s1.id, "SELECT 1", now=NOW)
    store.statements.add(s1.id, "SELECT 2", now=NOW)
    work = store.sessions.work_of_engine(engine.id)
    assert [(item.session.id, item.waiting, item.more_waiting) for item in work] == [
        (s1.id, first, True),
        (s2.id, None, False),
    ]
    assert store.statements.next_waiting([s1.id, s2.id]) == {s1.id: store.statements.get(first.id)}


def test_statement_listing_and_states(store: Store, make_session: Any) -> None:
    session = make_session()
    ids = [store.statements.add(session.id, f"SELECT {i}", now=NOW).id for i in range(3)]
    force_state(store, "statements", ids[1], "running")
    newest = store.statements.list_page(
        session_id=session.id, newest_first=True, window=Window(limit=2)
    )
    assert [s.id for s in newest.items] == [ids[2], ids[1]] and newest.total == 3
    running = store.statements.list_page(states=[StatementState.RUNNING])
    assert [s.id for s in running.items] == [ids[1]]
    assert store.statements.states([*ids, 999]) == {
        ids[0]: StatementState.WAITING,
        ids[1]: StatementState.RUNNING,
        ids[2]: StatementState.WAITING,
    }


def test_progress_only_moves_for_running(store: Store, make_session: Any) -> None:
    session = make_session()
    statement = store.statements.add(session.id, "SELECT 1", now=NOW)
    store.statements.set_progress(statement.id, 0.5, now=NOW)
    assert store.statements.get(statement.id).progress == 0.0
    force_state(store, "statements", statement.id, "running")
    store.statements.set_progress(statement.id, 1.7, now=NOW)
    assert store.statements.get(statement.id).progress == 1.0


def test_task_counts_are_kept_while_running_and_replaced(store: Store, make_session: Any) -> None:
    session = make_session()
    waiting, running = (store.statements.add(session.id, "SELECT 1", now=NOW) for _ in "ab")
    force_state(store, "statements", running.id, "running")
    for statement in (waiting, running):
        store.statements.set_progress(statement.id, 0.25, now=NOW, tasks=TaskCount(1, 4))
    assert store.statements.tasks_of_many([waiting.id, running.id]) == {running.id: TaskCount(1, 4)}
    store.statements.set_progress(running.id, 0.5, now=NOW + 1, tasks=TaskCount(3, 6))
    assert store.statements.tasks_of_many([running.id]) == {running.id: TaskCount(3, 6)}
    assert store.statements.tasks_of_many([]) == {}


def test_task_counts_on_a_schema_before_them_are_not_kept(store: Store, make_session: Any) -> None:
    with store.db.engine.begin() as conn:
        conn.exec_driver_sql("DROP TABLE statement_progress")
        conn.exec_driver_sql("UPDATE alembic_version SET version_num = '0017_saved_queries'")
    old = Store(store.db)
    statement = old.statements.add(make_session().id, "SELECT 1", now=NOW)
    force_state(old, "statements", statement.id, "running")
    old.statements.set_progress(statement.id, 0.5, now=NOW, tasks=TaskCount(1, 2))
    assert old.statements.get(statement.id).progress == 0.5  # the ratio, as before
    assert old.statements.tasks_of_many([statement.id]) == {}


def test_warm_engine_goes_to_one_session_only(
    store: Store, make_engine: Any, make_session: Any
) -> None:
    make_engine(kind=EngineKind.DEDICATED)
    sessions = [
        make_session(state=SessionState.NOT_STARTED, kind=SessionKind.BATCH) for _ in range(4)
    ]
    claims = race(*[lambda s=s: store.engines.claim_warm(s.id, now=NOW) for s in sessions])
    assert sum(claim is not None for claim in claims) == 1
    assert store.engines.warm_count() == 0


def test_shared_engine_with_room(store: Store, make_engine: Any, make_session: Any) -> None:
    assert store.engines.shared_with_room(2) is None
    engine = make_engine(kind=EngineKind.SHARED)
    assert store.engines.shared_with_room(2) == engine
    make_session(engine_id=engine.id)
    make_session(engine_id=engine.id)
    make_session(state=SessionState.DEAD, engine_id=engine.id)  # ended: takes no room
    assert store.engines.shared_with_room(2) is None
    assert store.engines.shared_with_room(3) == engine


def test_stale_engines(store: Store, make_engine: Any) -> None:
    fresh = make_engine(heartbeat_at=NOW)
    late = make_engine(heartbeat_at=NOW - 100)
    never = make_engine(state="starting", heartbeat_at=None)
    make_engine(state="stopped", heartbeat_at=NOW - 100)
    stale = store.engines.stale(now=NOW + 5, heartbeat_timeout=30, start_timeout=300)
    assert [e.id for e in stale] == [late.id]
    stale = store.engines.stale(now=NOW + 400, heartbeat_timeout=30, start_timeout=300)
    assert [e.id for e in stale] == [fresh.id, late.id, never.id]


def test_heartbeat_reports_the_state_the_store_gives(store: Store, make_engine: Any) -> None:
    engine = make_engine()
    assert store.engines.heartbeat(engine.id, now=NOW + 1) is EngineState.RUNNING
    assert store.engines.get(engine.id).heartbeat_at == NOW + 1
    store.transitions.engine(engine.id, EngineState.LOST, now=NOW + 2)
    assert store.engines.heartbeat(engine.id, now=NOW + 3) is EngineState.LOST
    assert store.engines.get(engine.id).heartbeat_at == NOW + 1  # a lost engine stays lost
