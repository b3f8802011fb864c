"""The stream jobs service and its supervisor duty, on a real store (SQLite and PostgreSQL)
with a launcher that starts no processes: what each round writes, and that nothing it writes
is left half done."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from sparkgate.auth.users import Users
from sparkgate.errors.streams import StreamJobActive, StreamJobBusy
from sparkgate.launcher.placement import Placement
from sparkgate.recorded import RecordedError
from sparkgate.service.sessions import Sessions
from sparkgate.service.stream_jobs import LostRace, Streams
from sparkgate.settings import Settings
from sparkgate.sql.errors import SqlError
from sparkgate.states import (
    EngineKind,
    SessionKind,
    SessionState,
    StreamJobState,
    StreamQueryState,
)
from sparkgate.store import Store
from sparkgate.store.records import StreamJobRecord, StreamQueryRecord
from sparkgate.stream_spec import QuerySpec
from sparkgate.streaming.jobplan import Launch, Situation
from tests.conftest import NOW, NoProcesses, force_state

J, Q = StreamJobState, StreamQueryState
SPEC = QuerySpec(name="v", view="v", format="noop")
SCRIPT = (
    "CREATE STREAM r USING rate;\n"
    "CREATE TEMPORARY VIEW v AS SELECT value FROM r;\n"
    "SAVE STREAM v TO console"
)


@pytest.fixture
def streams(store: Store, tmp_path: Path) -> Streams:
    settings = Settings(home=tmp_path, stream_retry_min_backoff=2.0, stream_retry_max_attempts=2)
    placement = Placement(settings, store, NoProcesses(), "node-1", clock=lambda: NOW)
    sessions = Sessions(settings, store, placement, Users(settings, store), clock=lambda: NOW)
    return Streams(settings, store, sessions, clock=lambda: NOW, rand=lambda: 0.0)


def test_a_new_job_is_launched_in_a_streaming_session(streams: Streams, store: Store) -> None:
    job = streams.create("clicks", SCRIPT, conf={"spark.sql.shuffle.partitions": "3"})
    assert job.state is J.PENDING and job.checkpoint_root is None
    streams.supervise(NOW)
    job = store.stream_jobs.get("clicks")
    assert job.state is J.STARTING and job.session_id is not None
    session = store.sessions.get(job.session_id)
    assert session.kind is SessionKind.STREAMING and session.state is SessionState.STARTING
    assert session.attributes.stream_job_id == job.id
    assert session.conf == {"spark.sql.shuffle.partitions": "3"}
    statements = store.statements.list_page(session_id=session.id).items
    assert [s.code for s in statements] == [
        "CREATE STREAM r USING rate",
        "CREATE TEMPORARY VIEW v AS SELECT value FROM r",
        "SAVE STREAM v TO console",
    ]
    assert session.engine_id is not None
    assert store.engines.get(session.engine_id).kind is EngineKind.STREAMING
    streams.supervise(NOW + 1)  # nothing new: it waits for the engine
    assert store.stream_jobs.get("clicks").session_id == session.id


def test_a_launch_that_loses_its_race_leaves_no_session(streams: Streams, store: Store) -> None:
    job = streams.create("clicks", SCRIPT)
    stale = Situation(job, None, [], [])
    streams.stop("clicks")  # moves the job on before the duty's write
    before = store.sessions.list_page().total
    with pytest.raises(LostRace):  # supervise() plans again next round
        streams._apply(stale, Launch(), NOW)
    assert store.sessions.list_page().total == before
    assert store.stream_jobs.get("clicks").state is J.STOPPED


def test_invalid_jobs_are_refused_before_they_are_stored(streams: Streams, store: Store) -> None:
    with pytest.raises(SqlError) as caught:
        streams.create("clicks", "SAVE STREAM v TO parquet")
    assert caught.value.code == "STREAM_SINK_PATH_REQUIRED"
    with pytest.raises(SqlError, match="needs its columns"):
        streams.create("files", "CREATE STREAM f USING json OPTIONS ('path'='/in');\n" + SCRIPT)
    inferred = streams.create(
        "files",
        "CREATE STREAM f USING json OPTIONS ('path'='/in'); SAVE STREAM f TO console",
        conf={"spark.sql.streaming.schemaInference": "true"},
    )
    assert inferred.state is J.PENDING
    with pytest.raises(Exception, match="absolute path"):
        streams.create("rel", SCRIPT, checkpoint_root="relative/dir")
    assert [j.name for j in store.stream_jobs.list_page().items] == ["files"]


def test_stop_and_start_without_an_engine(streams: Streams, store: Store) -> None:
    streams.create("clicks", SCRIPT)
    assert streams.stop("clicks").state is J.STOPPED  # pending: nothing to ask an engine
    assert streams.stop("clicks").state is J.STOPPED  # again: nothing changes
    started = streams.start("clicks")
    assert started.state is J.PENDING and started.error is None
    assert streams.start("clicks").state is J.PENDING


def _running_query(store: Store, job: StreamJobRecord) -> StreamQueryRecord:
    """The job's query ``v`` as its engine would have started it."""
    assert job.session_id is not None
    query = store.stream_queries.claim_for_job(
        job.id, "v", session_id=job.session_id, now=NOW, spec=SPEC, checkpoint="/ck/v"
    )
    force_state(store, "stream_queries", query.id, "running")
    return query


def test_a_stop_while_starting_waits_for_the_queries_then_ends_the_session(
    streams: Streams, store: Store
) -> None:
    streams.create("clicks", SCRIPT)
    streams.supervise(NOW)
    job = store.stream_jobs.get("clicks")
    assert job.session_id is not None
    force_state(store, "sessions", job.session_id, "idle")
    force_state(store, "stream_jobs", job.id, "running", session_id=job.session_id)
    query = _running_query(store, job)
    assert streams.stop("clicks").state is J.STOPPING
    assert store.stream_queries.get(query.id).state is Q.STOPPING
    with pytest.raises(StreamJobBusy):
        streams.start("clicks")
    streams.supervise(NOW + 1)  # the engine has not stopped it yet
    assert store.stream_jobs.get("clicks").state is J.STOPPING
    force_state(store, "stream_queries", query.id, "stopped")  # ...now it has
    streams.supervise(NOW + 2)
    assert store.stream_jobs.get("clicks").state is J.STOPPED
    assert store.sessions.get(job.session_id).state is SessionState.KILLED


def test_a_lost_engine_relaunches_the_job_after_its_backoff(streams: Streams, store: Store) -> None:
    streams.create("clicks", SCRIPT)
    streams.supervise(NOW)
    job = store.stream_jobs.get("clicks")
    assert job.session_id is not None
    force_state(store, "stream_jobs", job.id, "running", session_id=job.session_id)
    query = _running_query(store, job)
    lost = {"code": "ENGINE_LOST", "message": "Engine 1 stopped heartbeating."}
    force_state(store, "sessions", job.session_id, "dead", error=lost)

    streams.supervise(NOW + 10)
    job = store.stream_jobs.get("clicks")
    assert (job.state, job.failures, job.next_restart_at) == (J.RESTARTING, 1, NOW + 12)
    assert job.error is not None and job.error.code == "ENGINE_LOST"
    assert store.stream_queries.get(query.id).state is Q.RESTARTING
    [restart] = store.stream_queries.restarts(job_id=job.id)
    assert (restart.delay, restart.restarted_at) == (2.0, None)

    streams.supervise(NOW + 11)  # still waiting out the backoff
    assert store.stream_jobs.get("clicks").state is J.RESTARTING
    streams.supervise(NOW + 12)
    relaunched = store.stream_jobs.get("clicks")
    assert relaunched.state is J.STARTING and relaunched.restarts == 1
    assert relaunched.session_id != job.session_id
    assert store.stream_queries.restarts(job_id=job.id)[0].restarted_at == NOW + 12


def test_delete_takes_the_checkpoints_in_the_servers_directory(
    streams: Streams, store: Store
) -> None:
    base = streams.settings.resolved_checkpoints_dir
    streams.create("own", SCRIPT)
    streams.create("versioned", SCRIPT, checkpoint_root=str(base / "versioned" / "v2"))
    streams.create("everything", SCRIPT, checkpoint_root=str(base))
    streams.create("kept", SCRIPT)
    for name in ("own", "versioned/v2", "kept", "unrelated"):
        (base / name / "q" / "offsets").mkdir(parents=True)
    with pytest.raises(StreamJobActive):
        streams.delete("own")
    for name in ("own", "versioned", "everything", "kept"):
        streams.stop(name)
    streams.delete("own")
    streams.delete("versioned")
    streams.delete("everything")  # a root that is the whole directory is never removed
    streams.delete("kept", keep_checkpoints=True)
    assert sorted(p.name for p in base.iterdir()) == ["kept", "unrelated", "versioned"]
    assert not (base / "versioned" / "v2").exists()


def test_interactive_queries_left_by_a_dead_engine_are_settled(
    streams: Streams, store: Store, make_session: Any, make_engine: Any
) -> None:
    engine = make_engine(state="lost")
    session = make_session(state=SessionState.DEAD, engine_id=engine.id)
    force_state(store, "sessions", session.id, "dead", error={"code": "ENGINE_LOST"})
    query = store.stream_queries.add_for_session(
        session.id,
        "v",
        now=NOW,
        spec=SPEC,
        checkpoint=None,
        engine_id=engine.id,
    )
    streams.supervise(NOW)
    settled = store.stream_queries.get(query.id)
    assert settled.state is Q.FAILED and settled.error == RecordedError("ENGINE_LOST", "")
