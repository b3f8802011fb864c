"""Stream jobs whose script has Python steps, and changing what a running job runs next, on a
real store with a launcher that starts no processes."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest

from sparkgate.auth.users import Users
from sparkgate.errors.streams import StreamJobActive
from sparkgate.launcher.placement import Placement
from sparkgate.recorded import RecordedError
from sparkgate.service.sessions import Sessions
from sparkgate.service.stream_jobs import LostRace, Streams
from sparkgate.settings import Settings
from sparkgate.sql.errors import SqlError
from sparkgate.states import StatementKind, StatementState, StreamJobState
from sparkgate.store import Store
from sparkgate.stream_spec import RetryPolicy
from sparkgate.streaming.jobplan import Launch, MarkRunning, Situation, Stop, plan
from sparkgate.streaming.script import Step, launch_steps, script_of
from tests.conftest import NOW, NoProcesses, force_state

SQL, PY = StatementKind.SQL, StatementKind.PYSPARK
STEPS = [
    Step(SQL, "CREATE STREAM r USING rate"),
    Step(PY, "spark.table('r').createOrReplaceTempView('v')"),
    Step(SQL, "SAVE STREAM v TO noop"),
]


@pytest.fixture
def streams(store: Store, tmp_path: Path) -> Streams:
    settings = Settings(home=tmp_path)
    placement = Placement(settings, store, NoProcesses(), "node-1", clock=lambda: NOW)
    sessions = Sessions(settings, store, placement, Users(settings, store), clock=lambda: NOW)
    return Streams(settings, store, sessions, clock=lambda: NOW, rand=lambda: 0.0)


def test_script_of_steps() -> None:
    sql, stored = script_of(STEPS)
    assert sql == "CREATE STREAM r USING rate;\nSAVE STREAM v TO noop"
    assert stored == [s.to_json() for s in STEPS]
    assert launch_steps(sql, stored) == STEPS
    assert script_of([Step(SQL, "SELECT 1")]) == ("SELECT 1", None)  # all SQL: plain script
    assert launch_steps("SELECT 1; SELECT 2", None) == [
        Step(SQL, "SELECT 1"),
        Step(SQL, "SELECT 2"),
    ]
    with pytest.raises(SqlError):
        script_of([Step(SQL, "SELECT 1; SELECT 2")])


def test_a_job_with_python_steps_launches_them_in_order(streams: Streams, store: Store) -> None:
    job = streams.create("coded", STEPS)
    assert job.sql == "CREATE STREAM r USING rate;\nSAVE STREAM v TO noop"
    assert job.steps == [s.to_json() for s in STEPS]
    streams.supervise(NOW)
    job = store.stream_jobs.get("coded")
    assert job.session_id is not None
    launched = store.statements.list_page(session_id=job.session_id).items
    assert [(s.kind, s.code) for s in launched] == [(s.kind, s.code) for s in STEPS]
    # it runs once every step succeeded
    situation = Situation(job, store.sessions.get(job.session_id), launched, [])
    assert plan(situation, RetryPolicy(), now=NOW) is None
    done = [replace(s, state=StatementState.SUCCESS) for s in launched]
    assert isinstance(
        plan(replace(situation, statements=done), RetryPolicy(), now=NOW), MarkRunning
    )
    # a failed Python step fails the job, naming the step and its kind
    error = {"code": "NameError", "message": "name 'x' is not defined", "line": 1}
    failed = [
        done[0],
        replace(done[1], state=StatementState.FAILED, error=RecordedError.stored(error)),
        launched[2],
    ]
    action = plan(replace(situation, statements=failed), RetryPolicy(), now=NOW)
    assert not isinstance(action, Stop)
    assert action is not None and getattr(action, "error", None) == RecordedError.stored(
        {
            **error,
            "statement": 2,
            "statement_kind": "pyspark",
        }
    )


def test_what_a_running_job_runs_next_can_change(streams: Streams, store: Store) -> None:
    job = streams.create("clicks", "CREATE STREAM r USING rate; SAVE STREAM r TO noop")
    force_state(store, "stream_jobs", job.id, StreamJobState.RUNNING.value)
    stale = store.stream_jobs.get("clicks")
    changed = streams.redefine_running(
        "clicks", sql=STEPS, conf={"spark.sql.shuffle.partitions": "3"}
    )
    assert changed.state is StreamJobState.RUNNING  # nothing stopped
    assert (changed.revision, changed.version) == (stale.revision + 1, stale.version + 1)
    assert changed.steps is not None and changed.conf == {"spark.sql.shuffle.partitions": "3"}
    # a supervisor round planned on the old definition loses its race
    force_state(store, "stream_jobs", job.id, StreamJobState.RESTARTING.value)
    with pytest.raises(LostRace):
        streams._launch(replace(stale, state=StreamJobState.RESTARTING), NOW)
    # ...and the relaunch runs the new one
    restarting = store.stream_jobs.get("clicks")
    assert isinstance(plan(Situation(restarting, None, [], []), RetryPolicy(), now=NOW), Launch)
    streams._launch(restarting, NOW)
    relaunched = store.stream_jobs.get("clicks")
    assert relaunched.session_id is not None
    kinds = [s.kind for s in store.statements.list_page(session_id=relaunched.session_id).items]
    assert kinds == [SQL, PY, SQL]
    # while it is starting (its statements being counted), a change must wait
    with pytest.raises(StreamJobActive):
        streams.redefine_running("clicks", sql="CREATE STREAM r USING rate; SAVE STREAM r TO noop")
    # a stopped job's redefinition is the ordinary one
    streams.stop("clicks")
    assert store.stream_jobs.get("clicks").state is StreamJobState.STOPPING
    with pytest.raises(StreamJobActive):
        streams.redefine("clicks", sql="SAVE STREAM r TO noop")
