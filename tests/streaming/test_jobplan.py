"""What the supervisor duty decides for a stream job, from what the store says."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from sparkgate.recorded import RecordedError
from sparkgate.states import (
    SessionKind,
    SessionState,
    StatementKind,
    StatementState,
    StreamJobState,
    StreamQueryState,
)
from sparkgate.store.records import (
    SessionRecord,
    StatementRecord,
    StreamJobRecord,
    StreamQueryRecord,
)
from sparkgate.store.session_attributes import SessionAttributes
from sparkgate.stream_spec import QuerySpec, RetryPolicy
from sparkgate.streaming.jobplan import (
    Finish,
    Launch,
    MarkRunning,
    Relaunch,
    ResetFailures,
    Situation,
    Stop,
    plan,
    script_error,
)

NOW = 1_800_000_000.0
SPEC = QuerySpec(name="v", view="v", format="noop")
POLICY = RetryPolicy(min_backoff=1.0, max_attempts=3, stable_period=60.0)
SQL = (
    "CREATE STREAM r USING rate;\n"
    "CREATE TEMPORARY VIEW v AS\n"
    "  SELECT nope FROM r;\n"
    "SAVE STREAM v TO console"
)

J, Q = StreamJobState, StreamQueryState


def job(state: StreamJobState, **values: Any) -> StreamJobRecord:
    base = StreamJobRecord(
        id=1, name="clicks", state=state, sql=SQL, conf={}, checkpoint_root=None, revision=1,
        session_id=10, failures=0, restarts=0, next_restart_at=None, error=None, version=1,
        created_at=NOW - 100, started_at=None, running_since=None, finished_at=None,
        updated_at=NOW - 100,
    )  # fmt: skip
    return replace(base, **values)


def session(state: SessionState = SessionState.IDLE, **values: Any) -> SessionRecord:
    base = SessionRecord(
        id=10, kind=SessionKind.STREAMING, name="stream:clicks", state=state, engine_id=3,
        conf={}, owner=None, proxy_user=None, attributes=SessionAttributes(), error=None,
        statement_count=3, version=1, created_at=NOW - 50, started_at=NOW - 50, finished_at=None,
        last_activity_at=NOW - 50, updated_at=NOW - 50,
    )  # fmt: skip
    return replace(base, **values)


def statement(
    seq: int, state: StatementState, error: dict[str, Any] | None = None
) -> StatementRecord:
    return StatementRecord(
        id=100 + seq, session_id=10, seq=seq, kind=StatementKind.SQL, code="...", state=state,
        error=None if error is None else RecordedError.stored(error), result=None, output=None,
        progress=0.0, version=1, created_at=NOW, started_at=None, finished_at=None,
        updated_at=NOW,
    )  # fmt: skip


def query(state: StreamQueryState, **values: Any) -> StreamQueryRecord:
    base = StreamQueryRecord(
        id=5, job_id=1, session_id=10, statement_id=103, engine_id=3, name="v", state=state,
        spec=SPEC, checkpoint="/ck/clicks/v", spark_id="s", run_id="r", failures=0, restarts=0,
        next_restart_at=None, error=None, last_progress=None, progress_at=None, version=1,
        created_at=NOW, started_at=NOW, run_started_at=NOW, finished_at=None, updated_at=NOW,
    )  # fmt: skip
    return replace(base, **values)


def decide(
    j: StreamJobRecord,
    s: SessionRecord | None = None,
    statements: list[StatementRecord] | None = None,
    queries: list[StreamQueryRecord] | None = None,
) -> Any:
    return plan(Situation(j, s, statements or [], queries or []), POLICY, now=NOW)


def test_pending_jobs_are_launched_and_restarting_ones_when_due() -> None:
    assert decide(job(J.PENDING, session_id=None)) == Launch()
    assert decide(job(J.RESTARTING, next_restart_at=NOW + 1)) is None
    assert decide(job(J.RESTARTING, next_restart_at=NOW)) == Launch()


def test_starting_becomes_running_once_every_statement_succeeded() -> None:
    done = [statement(i, StatementState.SUCCESS) for i in range(3)]
    assert decide(job(J.STARTING), session(), done) == MarkRunning()
    assert decide(job(J.STARTING), session(), done[:2]) is None  # not all of them yet
    waiting = [*done[:2], statement(2, StatementState.RUNNING)]
    assert decide(job(J.STARTING), session(), waiting) is None


def test_a_failed_statement_fails_the_job_at_its_place_in_the_script() -> None:
    error = {"code": "UNRESOLVED_COLUMN", "message": "nope?", "line": 2, "position": 10}
    statements = [
        statement(0, StatementState.SUCCESS),
        statement(1, StatementState.FAILED, error),
        statement(2, StatementState.WAITING),
    ]
    decision = decide(job(J.STARTING), session(), statements)
    assert isinstance(decision, Finish) and decision.to is J.FAILED
    assert decision.error is not None
    assert (decision.error.param("line"), decision.error.param("position")) == (3, 10)
    assert decision.error.param("statement") == 2 and decision.error.code == "UNRESOLVED_COLUMN"
    # With a query already running, it is stopped first.
    running = decide(job(J.STARTING), session(), statements, [query(Q.RUNNING)])
    assert isinstance(running, Stop) and running.to is J.FAILING


def test_script_error_on_the_first_line_of_a_statement_shifts_the_position() -> None:
    error = script_error(SQL, statement(2, StatementState.FAILED, {"line": 1, "position": 13}))
    assert (error.param("line"), error.param("position"), error.param("statement")) == (4, 13, 3)
    unplaced = script_error(SQL, statement(0, StatementState.FAILED, {"code": "X"}))
    assert (unplaced.param("line"), unplaced.param("position")) == (1, 1)


def test_a_lost_session_relaunches_with_backoff_until_max_attempts() -> None:
    lost = session(SessionState.DEAD, error=RecordedError("ENGINE_LOST", "gone"))
    delays = []
    for failures in range(3):
        decision = decide(job(J.RUNNING, failures=failures, running_since=NOW - 5), lost)
        assert isinstance(decision, Relaunch)
        assert decision.failures == failures + 1 and decision.error.code == "ENGINE_LOST"
        delays.append(decision.delay)
    assert delays == [1.0, 2.0, 4.0]
    given_up = decide(job(J.RUNNING, failures=3, running_since=NOW - 5), lost)
    assert isinstance(given_up, Finish) and given_up.to is J.FAILED
    assert given_up.error is not None and "retry.max.attempts = 3" in given_up.error.message
    assert isinstance(decide(job(J.STARTING), lost), Relaunch)


def test_a_job_that_ran_stably_before_losing_its_session_starts_counting_again() -> None:
    lost = session(SessionState.DEAD, error=RecordedError("ENGINE_LOST", "gone"))
    progressed = query(Q.RUNNING, progress_at=NOW - 1)
    decision = decide(job(J.RUNNING, failures=3, running_since=NOW - 61), lost, [], [progressed])
    assert isinstance(decision, Relaunch) and (decision.failures, decision.delay) == (1, 1.0)


def test_a_query_failed_for_good_fails_the_job_after_stopping_the_others() -> None:
    failed = query(Q.FAILED, error=RecordedError("PYTHON_EXCEPTION", "bad row"))
    other = query(Q.RUNNING, id=6, name="w")
    decision = decide(job(J.RUNNING), session(), [], [failed, other])
    assert isinstance(decision, Stop) and decision.to is J.FAILING
    assert decision.error is not None
    assert decision.error.to_json() == {
        "code": "PYTHON_EXCEPTION",
        "message": "bad row",
        "query": "v",
    }
    alone = decide(job(J.RUNNING), session(), [], [failed])
    assert isinstance(alone, Finish) and alone.to is J.FAILED


def test_stopping_and_failing_end_once_no_query_runs() -> None:
    error = RecordedError("PYTHON_EXCEPTION", "bad row")
    assert decide(job(J.STOPPING), session(), [], [query(Q.STOPPING)]) is None
    assert decide(job(J.STOPPING), session(), [], [query(Q.STOPPED)]) == Finish(J.STOPPED, None)
    failing = job(J.FAILING, error=error)
    assert decide(failing, session(), [], [query(Q.FAILED)]) == Finish(J.FAILED, error)
    gone = session(SessionState.DEAD)
    assert decide(job(J.STOPPING), gone, [], [query(Q.STOPPING)]) == Finish(J.STOPPED, None)


def test_rows_left_by_an_earlier_run_are_not_this_runs_news() -> None:
    stale = query(Q.FAILED, session_id=9, error=RecordedError("OLD", "old"))
    done = [statement(i, StatementState.SUCCESS) for i in range(3)]
    assert decide(job(J.STARTING), session(), done, [stale]) == MarkRunning()
    assert decide(job(J.STOPPING), session(), [], [query(Q.RESTARTING, session_id=9)]) == Finish(
        J.STOPPED, None
    )


def test_a_stable_job_forgets_its_failures() -> None:
    progressed = query(Q.RUNNING, progress_at=NOW - 1)
    stable = job(J.RUNNING, failures=2, running_since=NOW - 60)
    assert decide(stable, session(), [], [progressed]) == ResetFailures()
    assert decide(replace(stable, running_since=NOW - 59), session(), [], [progressed]) is None
    assert decide(job(J.RUNNING, running_since=NOW - 600), session(), [], [progressed]) is None
