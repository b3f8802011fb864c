"""The store's stream jobs and queries, on SQLite and PostgreSQL: the state tables, claims
that fence superseded sessions, recent progress only, restarts."""

from __future__ import annotations

from typing import Any

import pytest

from sparkgate.errors.streams import (
    StreamJobActive,
    StreamJobExists,
    StreamJobNotFound,
    StreamJobSuperseded,
    StreamQueryNameClash,
)
from sparkgate.recorded import RecordedError
from sparkgate.states import (
    ACTIVE_STREAM_JOB_STATES,
    ACTIVE_STREAM_QUERY_STATES,
    INACTIVE_STREAM_JOB_STATES,
    INACTIVE_STREAM_QUERY_STATES,
    STREAM_JOB_TRANSITIONS,
    STREAM_QUERY_TRANSITIONS,
    SessionState,
    StreamJobState,
    StreamQueryState,
)
from sparkgate.store import Store
from sparkgate.stream_spec import QuerySpec
from tests.conftest import NOW, force_state

J, Q = StreamJobState, StreamQueryState
SPEC = QuerySpec(name="v", view="v", format="console")


@pytest.mark.parametrize(
    ("enum", "active", "inactive", "table"),
    [
        (J, ACTIVE_STREAM_JOB_STATES, INACTIVE_STREAM_JOB_STATES, STREAM_JOB_TRANSITIONS),
        (Q, ACTIVE_STREAM_QUERY_STATES, INACTIVE_STREAM_QUERY_STATES, STREAM_QUERY_TRANSITIONS),
    ],
)
def test_stream_state_groups(enum: Any, active: Any, inactive: Any, table: Any) -> None:
    assert active | inactive == frozenset(enum) and not active & inactive
    assert set(table) == set(enum)
    for state in active:
        assert table[state] & inactive, f"{state} cannot come to rest"
    for state in inactive:  # stopped or failed: only ever started again
        assert table[state] <= active


def test_stream_state_values_are_the_documented_strings() -> None:
    assert [s.value for s in J] == [
        "pending", "starting", "running", "restarting", "stopping", "failing", "stopped", "failed",
    ]  # fmt: skip
    assert [s.value for s in Q] == [
        "starting", "running", "restarting", "stopping", "stopped", "failed",
    ]  # fmt: skip


def session_query(store: Store, session_id: int, name: str = "v") -> Any:
    return store.stream_queries.add_for_session(
        session_id, name, now=NOW, spec=SPEC, checkpoint=None
    )


def test_stream_job_moves_exactly_as_the_table_says(store: Store) -> None:
    # Every (from, to) pair in one test per backend: a fresh row each, one schema per backend.
    for source in J:
        for target in J:
            job = store.stream_jobs.add(f"{source}-{target}", "SAVE STREAM v TO c", now=NOW)
            force_state(store, "stream_jobs", job.id, source.value)
            outcome = store.transitions.stream_job(job.id, target, now=NOW + 1)
            allowed = target in STREAM_JOB_TRANSITIONS[source]
            assert outcome.applied is allowed, (source, target)
            assert store.stream_jobs.get(job.name).state is (target if allowed else source)


def test_stream_query_moves_exactly_as_the_table_says(store: Store, make_session: Any) -> None:
    session = make_session()
    for source in Q:
        for target in Q:
            query = session_query(store, session.id, f"{source}-{target}")
            force_state(store, "stream_queries", query.id, source.value)
            outcome = store.transitions.stream_query(query.id, target, now=NOW + 1)
            allowed = target in STREAM_QUERY_TRANSITIONS[source]
            assert outcome.applied is allowed, (source, target)
            assert store.stream_queries.get(query.id).state is (target if allowed else source)


def test_a_guard_keeps_another_session_from_moving_a_query(store: Store, make_session: Any) -> None:
    session = make_session()
    query = store.stream_queries.add_for_session(
        session.id, "v", now=NOW, spec=SPEC, checkpoint=None
    )
    refused = store.transitions.stream_query(
        query.id, Q.RUNNING, now=NOW, guard={"session_id": session.id + 1}
    )
    assert (refused.applied, refused.state) == (False, Q.STARTING)
    moved = store.transitions.stream_query(
        query.id, Q.RUNNING, now=NOW, guard={"session_id": session.id}, run_id="r1"
    )
    assert moved.applied and store.stream_queries.get(query.id).run_id == "r1"


def test_jobs_are_unique_by_name_and_listed_by_it(store: Store) -> None:
    store.stream_jobs.add("b", "SAVE STREAM v TO console", now=NOW, conf={"k": "v"})
    store.stream_jobs.add("a", "SAVE STREAM v TO console", now=NOW, checkpoint_root="/ck/a/1")
    with pytest.raises(StreamJobExists, match="already exists"):
        store.stream_jobs.add("a", "SAVE STREAM w TO console", now=NOW)
    page = store.stream_jobs.list_page()
    assert [j.name for j in page.items] == ["a", "b"] and page.total == 2
    assert page.items[0].checkpoint_root == "/ck/a/1" and page.items[1].conf == {"k": "v"}
    assert [j.name for j in store.stream_jobs.active()] == ["a", "b"]
    assert store.stream_jobs.list_page(states=[J.RUNNING]).items == []
    with pytest.raises(StreamJobNotFound):
        store.stream_jobs.get("nope")


def test_redefine_and_delete_only_at_rest(store: Store, make_session: Any) -> None:
    job = store.stream_jobs.add("clicks", "SAVE STREAM v TO console", now=NOW)
    with pytest.raises(StreamJobActive, match="pending"):
        store.stream_jobs.redefine("clicks", now=NOW, sql="SAVE STREAM w TO console")
    with pytest.raises(StreamJobActive):
        store.stream_jobs.delete("clicks")
    force_state(store, "stream_jobs", job.id, "stopped")
    redefined = store.stream_jobs.redefine(
        "clicks", now=NOW, sql="SAVE STREAM w TO console", checkpoint_root="/ck/clicks/2"
    )
    assert (redefined.revision, redefined.sql, redefined.checkpoint_root) == (
        2,
        "SAVE STREAM w TO console",
        "/ck/clicks/2",
    )
    session = make_session()
    force_state(store, "stream_jobs", job.id, "running", session_id=session.id)
    query = store.stream_queries.claim_for_job(
        job.id, "w", session_id=session.id, now=NOW, spec=SPEC, checkpoint="/ck/w"
    )
    store.stream_queries.record_progress(
        query.id, {"batch_id": 0, "input_rows": 1}, now=NOW, keep=5
    )
    store.stream_queries.add_restart(
        job_id=job.id, query_id=query.id, attempt=1, failed_at=NOW, delay=1.0, error=None
    )
    force_state(store, "stream_jobs", job.id, "failed")
    deleted = store.stream_jobs.delete("clicks")
    assert deleted.id == job.id and store.stream_jobs.find("clicks") is None
    assert store.stream_queries.find(query.id) is None
    assert store.stream_queries.progress(query.id) == []


def test_only_the_jobs_current_session_claims_its_queries(store: Store, make_session: Any) -> None:
    old, new = make_session(), make_session()
    job = store.stream_jobs.add("clicks", "SAVE STREAM v TO console", now=NOW)
    force_state(store, "stream_jobs", job.id, "starting", session_id=old.id)
    first = store.stream_queries.claim_for_job(
        job.id, "v", session_id=old.id, now=NOW, spec=SPEC, checkpoint="/ck/v", statement_id=7
    )
    assert (first.state, first.session_id, first.failures) == (Q.STARTING, old.id, 0)
    with pytest.raises(StreamQueryNameClash, match="statement 7 and statement 8"):
        store.stream_queries.claim_for_job(
            job.id, "v", session_id=old.id, now=NOW, spec=SPEC, checkpoint="/ck/v", statement_id=8
        )
    # The job is relaunched in a new session: the old one may no longer claim anything.
    force_state(store, "stream_queries", first.id, "restarting", failures=2, restarts=3)
    force_state(store, "stream_jobs", job.id, "starting", session_id=new.id)
    with pytest.raises(StreamJobSuperseded, match=f"Session {old.id} no longer runs"):
        store.stream_queries.claim_for_job(
            job.id, "v", session_id=old.id, now=NOW, spec=SPEC, checkpoint="/ck/v"
        )
    again = store.stream_queries.claim_for_job(
        job.id, "v", session_id=new.id, now=NOW + 1, spec=SPEC, checkpoint="/ck/v", statement_id=9
    )
    assert again.id == first.id  # one row per job and name, across relaunches
    assert (again.state, again.session_id, again.statement_id) == (Q.STARTING, new.id, 9)
    assert (again.failures, again.restarts) == (2, 3)
    force_state(store, "stream_jobs", job.id, "stopping", session_id=new.id)
    with pytest.raises(StreamJobSuperseded, match="stopping"):
        store.stream_queries.claim_for_job(
            job.id, "w", session_id=new.id, now=NOW, spec=SPEC, checkpoint="/ck/w"
        )


def test_session_queries_clash_only_with_active_ones(store: Store, make_session: Any) -> None:
    session = make_session()
    first = store.stream_queries.add_for_session(
        session.id, "v", now=NOW, spec=SPEC, checkpoint=None, statement_id=3
    )
    with pytest.raises(StreamQueryNameClash, match="running query of statement 3"):
        store.stream_queries.add_for_session(
            session.id, "v", now=NOW, spec=SPEC, checkpoint=None, statement_id=4
        )
    other = make_session()
    store.stream_queries.add_for_session(other.id, "v", now=NOW, spec=SPEC, checkpoint=None)
    force_state(store, "stream_queries", first.id, "stopped")
    second = store.stream_queries.add_for_session(
        session.id, "v", now=NOW, spec=SPEC, checkpoint=None, statement_id=5
    )
    assert second.id != first.id
    assert [q.id for q in store.stream_queries.of_session(session.id)] == [first.id, second.id]
    assert store.stream_queries.states([first.id, second.id]) == {
        first.id: (Q.STOPPED, session.id),
        second.id: (Q.STARTING, session.id),
    }


def test_progress_keeps_the_newest_samples_and_marks_the_session_active(
    store: Store, make_session: Any
) -> None:
    session = make_session()
    query = store.stream_queries.add_for_session(
        session.id, "v", now=NOW, spec=SPEC, checkpoint=None
    )
    for batch in range(12):
        store.stream_queries.record_progress(
            query.id,
            {"batch_id": batch, "input_rows": 10 * batch, "at": NOW + batch, "extra": "kept"},
            now=NOW + batch,
            keep=5,
            session_id=session.id,
        )
    samples = store.stream_queries.progress(query.id)
    assert [p.batch_id for p in samples] == [11, 10, 9, 8, 7]
    assert samples[0].input_rows == 110
    record = store.stream_queries.get(query.id)
    assert record.last_progress is not None and record.last_progress["batch_id"] == 11
    assert record.last_progress["extra"] == "kept" and record.progress_at == NOW + 11
    assert store.sessions.get(session.id).last_activity_at == NOW + 11


def test_restarts_are_recorded_with_their_delays(store: Store, make_session: Any) -> None:
    session = make_session()
    job = store.stream_jobs.add("clicks", "SAVE STREAM v TO console", now=NOW)
    query = store.stream_queries.add_for_session(
        session.id, "v", now=NOW, spec=SPEC, checkpoint=None
    )
    ids = [
        store.stream_queries.add_restart(
            job_id=None, query_id=query.id, attempt=n, failed_at=NOW + n, delay=2.0**n, error=None
        )
        for n in (1, 2, 3)
    ]
    store.stream_queries.add_restart(
        job_id=job.id,
        query_id=None,
        attempt=1,
        failed_at=NOW,
        delay=1.0,
        error=RecordedError("X", "it failed"),
    )
    store.stream_queries.mark_restarted(ids[0], now=NOW + 5)
    restarts = store.stream_queries.restarts(query_id=query.id)
    assert [(r.attempt, r.delay) for r in restarts] == [(3, 8.0), (2, 4.0), (1, 2.0)]
    assert restarts[-1].restarted_at == NOW + 5 and restarts[-1].restart_at == NOW + 3
    job_restarts = store.stream_queries.restarts(job_id=job.id)
    assert [(r.query_id, r.error) for r in job_restarts] == [
        (None, RecordedError("X", "it failed"))
    ]


def test_orphaned_queries_are_those_of_ended_sessions(store: Store, make_session: Any) -> None:
    alive, ended = make_session(), make_session(state=SessionState.DEAD)
    force_state(store, "sessions", ended.id, "dead", error={"code": "ENGINE_LOST"}, finished_at=NOW)
    store.stream_queries.add_for_session(alive.id, "a", now=NOW, spec=SPEC, checkpoint=None)
    lost = store.stream_queries.add_for_session(ended.id, "b", now=NOW, spec=SPEC, checkpoint=None)
    done = store.stream_queries.add_for_session(ended.id, "c", now=NOW, spec=SPEC, checkpoint=None)
    force_state(store, "stream_queries", done.id, "stopped")
    orphans = store.stream_queries.orphaned()
    assert [(q.id, error, ended_at) for q, error, ended_at in orphans] == [
        (lost.id, RecordedError("ENGINE_LOST", ""), NOW)
    ]
