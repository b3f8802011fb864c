"""Streaming end to end: SAVE STREAM in interactive sessions (on the shared server), and
durable stream jobs with supervised restarts (on a server of their own, whose engines have
the test UDF ``fail_on``). Outputs are read back with Spark, which honours the file sink's
``_spark_metadata`` log: every row exactly once, or the test fails.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from sparkgate.client import Client, ClientError
from sparkgate.schemas.streams import StreamJobDetail, StreamQuery
from sparkgate.statement_cost import StatementCost
from sparkgate_dev import ServerProcess, eventually, kill_engines, local_test_settings
from tests.e2e.conftest import OpenSession, run

REPO = Path(__file__).resolve().parents[2]


def rows(sg: Client, sql: str, session_id: int) -> list[list[Any]]:
    done = run(sg, sql, session_id)
    assert done.state == "success", done
    page: list[list[Any]] = sg.result(done.id).rows
    return page


def failed(sg: Client, sql: str, session_id: int) -> dict[str, Any]:
    done = run(sg, sql, session_id)
    assert done.state == "failed", done
    assert done.error is not None
    # As the API answers it: code, message and the error's further keys (position, ...).
    return done.error.model_dump()


def output_stats(sg: Client, session_id: int, path: Path) -> tuple[int, int, int, int]:
    """count, distinct values, min, max of a file sink's output, read with Spark."""
    [[count, distinct, low, high]] = rows(
        sg,
        f"SELECT count(*), count(DISTINCT value), min(value), max(value) FROM parquet.`{path}`",
        session_id,
    )
    return count, distinct, low, high


def assert_exactly_once(stats: tuple[int, int, int, int], step: int = 1) -> None:
    count, distinct, low, high = stats
    assert count == distinct, f"duplicates: {stats}"
    assert low == 0 and count == high // step + 1, f"gaps: {stats}"


def checkpoint_at_batch_boundary(checkpoint: str) -> None:
    """Stopped between micro-batches: the last batch planned is the last one committed."""

    def last(kind: str) -> int:
        return max(int(p.name) for p in (Path(checkpoint) / kind).iterdir() if p.name.isdigit())

    assert last("offsets") == last("commits")


# -- interactive sessions (the shared server) ----------------------------------------------


def test_rate_filter_parquet_in_a_session(
    server: ServerProcess, sg: Client, interactive: OpenSession, tmp_path: Path
) -> None:
    sid = interactive().id
    out = tmp_path / "evens"
    columns = rows(sg, "CREATE STREAM r USING rate OPTIONS ('rowsPerSecond'='20')", sid)
    assert columns == [["timestamp", "timestamp"], ["value", "bigint"]]
    run(sg, "CREATE TEMPORARY VIEW evens AS SELECT value FROM r WHERE value % 2 = 0", sid)
    saved = run(sg, f"SAVE STREAM evens TO parquet TRIGGER 500ms OPTIONS ('path'='{out}')", sid)
    [started] = sg.result(saved.id).rows
    name, spark_id, run_id, state, checkpoint = started
    assert (name, state) == ("evens", "running") and spark_id and run_id
    assert checkpoint == str(
        server.settings.resolved_checkpoints_dir / "_sessions" / str(sid) / "evens"
    )

    # What cannot work says so, at its place, before anything starts.
    error = failed(
        sg, f"SAVE STREAM evens TO parquet OUTPUT MODE UPDATE OPTIONS ('path'='{out}2')", sid
    )
    assert error["code"] == "STREAM_SINK_OUTPUT_MODE_UNSUPPORTED"
    assert (error["line"], error["position"]) == (1, 30)
    error = failed(sg, "SAVE STREAM evens TO console", sid)
    assert error["code"] == "STREAM_QUERY_NAME_CLASH" and "IDENTIFIED BY" in error["message"]
    error = failed(sg, "SAVE STREAM evens TO kafka IDENTIFIED BY k OPTIONS ('topic'='t')", sid)
    assert error["code"] == "KAFKA_DATA_SOURCE_NOT_ENABLED"
    assert "spark-sql-kafka-0-10" in error["message"] and error["position"] == 22
    error = failed(sg, f"CREATE STREAM j USING json OPTIONS ('path'='{tmp_path}')", sid)
    assert error["code"] == "STREAM_SOURCE_SCHEMA_REQUIRED"
    error = failed(sg, "SAVE STREAM evens TO console TRIGGER 5 fortnights", sid)
    assert error["code"] == "PARSE_SYNTAX_ERROR" and error["position"] == 40

    def progressed() -> StreamQuery | None:
        [query] = [q for q in sg.session_streams(sid).queries if q.name == "evens"]
        last = query.last_progress
        return query if last and last["batch_id"] >= 3 else None

    query = eventually(progressed, timeout=120, what="three micro-batches")
    assert query.state == "running" and query.sink == "parquet"
    assert query.recent_progress[0].input_rows >= 0
    assert query.last_progress is not None
    assert query.last_progress["processed_rows_per_second"] is not None

    # What its batches cost accumulates on the query that started it, batch by batch.
    def costs_more(than: int) -> StatementCost | None:
        cost = sg.query(saved.id).cost
        return cost if cost is not None and cost.tasks > than else None

    first = eventually(lambda: costs_more(0), timeout=60, what="a batch's cost")
    eventually(lambda: costs_more(first.tasks), timeout=60, what="a later batch's cost")

    [stopped] = rows(sg, "STOP STREAM evens", sid)
    assert stopped[3] == "stopped"
    checkpoint_at_batch_boundary(checkpoint)
    stats = output_stats(sg, sid, out)
    assert_exactly_once(stats, step=2)
    # Spark's own count of the rows its tasks wrote, summed over every batch, is the output's.
    cost = sg.query(saved.id).cost
    assert cost is not None
    assert cost.output_records == stats[0], (cost, stats)
    assert cost.executor_cpu_time_ns > 0
    error = failed(sg, "STOP STREAM evens", sid)
    assert error["code"] == "STREAM_QUERY_NOT_FOUND"

    # A query ends with its session.
    rows(sg, "SAVE STREAM r TO noop IDENTIFIED BY spin TRIGGER 1s", sid)
    sg.kill_session(sid)

    def spin_state() -> str | None:
        states = {q.name: q.state for q in sg.session_streams(sid).queries}
        return states["spin"] if states["spin"] == "stopped" else None

    eventually(spin_state, timeout=60, what="the query to stop with its session")


def test_windowed_aggregation_in_update_mode(sg: Client, interactive: OpenSession) -> None:
    sid = interactive().id
    run(sg, "CREATE STREAM ticks USING rate OPTIONS ('rowsPerSecond'='10')", sid)
    run(
        sg,
        "CREATE TEMPORARY VIEW per_window AS "
        "SELECT window(timestamp, '2 seconds') AS w, count(*) AS n "
        "FROM ticks WATERMARK timestamp DELAY OF INTERVAL 1 SECOND "
        "GROUP BY window(timestamp, '2 seconds')",
        sid,
    )
    rows(
        sg,
        "SAVE STREAM per_window TO memory IDENTIFIED BY window_counts "
        "OUTPUT MODE UPDATE TRIGGER 500ms",
        sid,
    )

    # Wait on what the sink holds, not on a batch count: how much event time a number of
    # micro-batches covers depends on how fast this machine runs them.
    def four_windows() -> list[list[Any]] | None:
        windows = rows(
            sg,
            "SELECT w.start, max(n), count(*) FROM window_counts GROUP BY w.start ORDER BY 1",
            sid,
        )
        return windows if len(windows) >= 4 else None

    eventually(four_windows, timeout=120, interval=0.5, what="four windows in the memory sink")
    [query] = sg.session_streams(sid).queries
    assert query.output_mode == "update" and query.checkpoint is None
    assert query.last_progress is not None
    assert query.last_progress["state_rows"]
    assert any(p.watermark not in (None, "1970-01-01T00:00:00.000Z") for p in query.recent_progress)
    rows(sg, "STOP STREAM window_counts", sid)

    windows = rows(
        sg,
        "SELECT w.start, max(n), count(*) FROM window_counts GROUP BY w.start ORDER BY 1",
        sid,
    )
    assert len(windows) >= 4, windows
    # Update mode emits a window again whenever its count changes...
    assert any(updates > 1 for _, _, updates in windows), windows
    # ...and every window between the first (partial) and the last (still open) ends with
    # exactly 2 s x 10 rows/s.
    assert [n for _, n, _ in windows[1:-1]] == [20] * (len(windows) - 2), windows


# -- durable stream jobs (a server of their own) -------------------------------------------


@pytest.fixture(scope="module")
def stream_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServerProcess]:
    """No shared or warm engines: stream jobs start streaming engines as they need them."""
    home = tmp_path_factory.mktemp("stream-server")
    settings = local_test_settings(
        home,
        catalog="in-memory",
        shared_engine=False,
        warm_engines=0,
        udf_modules=["tests.e2e.stream_udfs"],
        stream_progress_interval=0.3,
        stream_retry_min_backoff=0.5,
        stream_stop_timeout=20.0,
    )
    process = ServerProcess(settings)
    # Engines (and their Python workers) import the test UDF module from the repository.
    process.env["PYTHONPATH"] = os.pathsep.join(
        p for p in (str(REPO), process.env.get("PYTHONPATH")) if p
    )
    process.start()
    try:
        yield process
    finally:
        process.stop()
        kill_engines(settings, signal.SIGKILL)


@pytest.fixture
def jobs(stream_server: ServerProcess) -> Iterator[Client]:
    with stream_server.client() as client:
        yield client
        for job in client.streams().streams:  # leave nothing running for the next test
            with contextlib.suppress(ClientError):
                client.stop_stream(job.name)
                client.wait_stream(job.name, {"stopped", "failed"}, timeout=60)


def flaky_script(out: Path, flag: Path, bad: str, **options: str) -> str:
    extra = "".join(f", '{k}'='{v}'" for k, v in options.items())
    return f"""
    -- rate -> a UDF that fails on chosen rows until a flag file exists -> parquet
    CREATE STREAM numbers USING rate OPTIONS ('rowsPerSecond'='20');
    CREATE TEMPORARY VIEW checked AS
      SELECT fail_on(value, '{bad}', '{flag}') AS value FROM numbers;
    SAVE STREAM checked TO parquet TRIGGER 200ms
      OPTIONS ('path'='{out}'{extra});
    """


def test_a_streams_start_and_each_restart_are_in_its_tables_access_history(
    stream_server: ServerProcess, jobs: Client
) -> None:
    home = stream_server.home
    flag = home / "sink-flag"
    sink = jobs.wait(
        jobs.submit("CREATE TABLE default.restarted_sink (value BIGINT) USING parquet").id,
        timeout=240,
    )
    assert sink.state == "success", sink.error
    jobs.create_stream(
        "into_table",
        f"""
        CREATE STREAM numbers USING rate OPTIONS ('rowsPerSecond'='20');
        CREATE TEMPORARY VIEW checked AS
          SELECT fail_on(value, '10', '{flag}') AS value FROM numbers;
        SAVE STREAM checked TO TABLE default.restarted_sink TRIGGER 200ms
          OPTIONS ('retry.min.backoff'='200ms', 'retry.max.backoff'='1s');
        """,
    )

    def restarted() -> bool:
        queries = jobs.stream("into_table").queries
        return bool(queries) and queries[0].restarts >= 1

    eventually(restarted, timeout=240, what="a restart")
    flag.touch()
    jobs.stop_stream("into_table")
    jobs.wait_stream("into_table", {"stopped", "failed"}, timeout=120)
    events = jobs.audit(obj="default.restarted_sink", action="table.insert").events
    assert {(e.door, e.outcome) for e in events} == {("stream", "ok")}, events
    assert len(events) >= 2 and len({e.query_id for e in events}) == 1, events


def sparkgate_cli(server: ServerProcess, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "sparkgate.cli.main", "streams", *args, "--server", server.url],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


def test_a_failing_query_restarts_with_backoff_and_resumes_exactly_once(
    stream_server: ServerProcess, jobs: Client, sg: Client, interactive: OpenSession
) -> None:
    home = stream_server.home
    out, flag = home / "flaky-out", home / "flaky-flag"
    script = flaky_script(
        out, flag, "30", **{"retry.min.backoff": "200ms", "retry.max.backoff": "5s"}
    )
    created = jobs.create_stream("flaky", script)
    assert created.state == "pending"

    def restarted_three_times() -> StreamJobDetail | None:
        job = jobs.stream("flaky")
        queries = job.queries
        return job if queries and queries[0].restarts >= 3 else None

    job = eventually(restarted_three_times, timeout=240, what="three restarts")
    flag.touch()  # the bad row is fixed: the next restart gets through
    [query] = job.queries
    assert query.last_error is not None
    assert query.last_error.code == "PYTHON_EXCEPTION"
    assert "bad row 30" in query.last_error.message
    delays = [r.delay for r in reversed(query.recent_restarts)]
    assert delays[:3] == [0.2, 0.4, 0.8]  # the backoff, as recorded in the store
    assert job.state == "running"

    def past_the_bad_row() -> bool:
        last = jobs.stream("flaky").queries[0].last_progress or {}
        running = jobs.stream("flaky").queries[0].state == "running"
        return running and int(last.get("batch_id", 0)) >= 4

    eventually(past_the_bad_row, timeout=120, what="batches after the fix")
    stopping = jobs.stop_stream("flaky")
    assert stopping.state in ("stopping", "stopped")
    stopped = jobs.wait_stream("flaky", {"stopped", "failed"}, timeout=120)
    assert stopped.state == "stopped", stopped
    [query] = stopped.queries
    assert query.state == "stopped"
    for restart in query.recent_restarts[:-1]:  # each restart waited its delay
        assert restart.restarted_at is not None
    assert query.checkpoint is not None
    checkpoint_at_batch_boundary(query.checkpoint)
    sid = interactive().id
    first = output_stats(sg, sid, out)
    assert_exactly_once(first)
    assert first[3] > 30

    # Started again, it resumes where its checkpoint says: still every row exactly once.
    jobs.start_stream("flaky")
    restarted = jobs.wait_stream("flaky", {"running", "failed"}, timeout=180)
    assert restarted.state == "running", restarted

    def more_batches() -> bool:
        query = jobs.stream("flaky").queries[0]
        last = query.last_progress or {}
        return bool(
            query.run_id != stopped.queries[0].run_id and last.get("run_id") == query.run_id
        )

    eventually(more_batches, timeout=120, what="progress after the start")
    jobs.stop_stream("flaky")
    assert jobs.wait_stream("flaky", {"stopped"}, timeout=120).state == "stopped"
    second = output_stats(sg, sid, out)
    assert_exactly_once(second)
    assert second[0] > first[0]


def test_max_attempts_reached_fails_the_job_with_its_last_error(
    stream_server: ServerProcess, jobs: Client, tmp_path: Path
) -> None:
    home = stream_server.home
    script = (
        flaky_script(
            home / "doomed-out",
            home / "never",
            "3",
            **{"retry.max.attempts": "2", "retry.min.backoff": "100ms"},
        )
        + "; SAVE STREAM numbers TO noop IDENTIFIED BY bystander TRIGGER 500ms"
    )
    script_file = tmp_path / "doomed.sql"
    script_file.write_text(script)
    made = sparkgate_cli(stream_server, "create", "doomed", str(script_file))
    assert made.returncode == 0 and "pending" in made.stdout, made.stderr

    job = jobs.wait_stream("doomed", {"failed"}, timeout=240)
    queries = {q.name: q for q in job.queries}
    checked = queries["checked"]
    assert checked.state == "failed" and checked.restarts == 2
    assert [r.delay for r in reversed(checked.recent_restarts)] == [0.1, 0.2]
    assert checked.last_error is not None
    assert checked.last_error.code == "PYTHON_EXCEPTION"
    assert "retry.max.attempts = 2" in checked.last_error.param("not_restarted")
    assert queries["bystander"].state == "stopped"  # the job fails as a whole
    assert job.last_error is not None
    assert job.last_error.param("query") == "checked" and "bad row 3" in job.last_error.message

    shown = sparkgate_cli(stream_server, "show", "doomed")
    assert shown.returncode == 0 and "failed" in shown.stdout and "PYTHON_EXCEPTION" in shown.stdout
    listed = json.loads(sparkgate_cli(stream_server, "list", "--json").stdout)
    assert {"name": "checked", "state": "failed", "restarts": 2} in [
        q for s in listed["streams"] if s["name"] == "doomed" for q in s["queries"]
    ]
    deleted = sparkgate_cli(stream_server, "delete", "doomed")
    assert deleted.returncode == 0, deleted.stderr
    with pytest.raises(ClientError) as caught:
        jobs.stream("doomed")
    assert caught.value.status == 404
    assert not (stream_server.settings.resolved_checkpoints_dir / "doomed").exists()


def test_requests_that_cannot_make_or_change_a_job_are_refused_clearly(
    stream_server: ServerProcess, jobs: Client
) -> None:
    with pytest.raises(ClientError) as caught:
        jobs.create_stream("bad", "CREATE STREAM r USING rate;\nSAVE STREAM r TO json")
    assert caught.value.status == 422 and caught.value.code == "STREAM_SINK_PATH_REQUIRED"
    assert (caught.value.body["error"]["line"], caught.value.body["error"]["position"]) == (2, 18)
    with pytest.raises(ClientError) as caught:
        jobs.create_stream("bad/name", "SAVE STREAM r TO console")
    assert caught.value.status == 422
    jobs.create_stream("spinner", "CREATE STREAM r USING rate; SAVE STREAM r TO noop")
    with pytest.raises(ClientError) as caught:
        jobs.create_stream("spinner", "CREATE STREAM r USING rate; SAVE STREAM r TO noop")
    assert (caught.value.status, caught.value.code) == (409, "STREAM_JOB_EXISTS")
    with pytest.raises(ClientError) as caught:
        jobs.delete_stream("spinner")
    assert (caught.value.status, caught.value.code) == (409, "STREAM_JOB_ACTIVE")
    with pytest.raises(ClientError) as caught:
        jobs.stop_stream("nope")
    assert (caught.value.status, caught.value.code) == (404, "STREAM_JOB_NOT_FOUND")
    assert jobs.wait_stream("spinner", {"running"}, timeout=240).state == "running"
    stopped = sparkgate_cli(stream_server, "stop", "spinner")  # waits until it is stopped
    assert stopped.returncode == 0 and "spinner: stopped" in stopped.stdout, stopped.stderr
    assert jobs.stream("spinner").queries[0].state == "stopped"
    assert jobs.delete_stream("spinner").deleted is True


def test_a_job_whose_engine_is_killed_is_relaunched_and_resumes(
    stream_server: ServerProcess, jobs: Client, sg: Client, interactive: OpenSession
) -> None:
    out = stream_server.home / "survivor-out"
    jobs.create_stream(
        "survivor",
        "CREATE STREAM numbers USING rate OPTIONS ('rowsPerSecond'='20');\n"
        f"SAVE STREAM numbers TO parquet TRIGGER 200ms OPTIONS ('path'='{out}')",
    )

    def batches(minimum: int) -> StreamJobDetail | None:
        job = jobs.stream("survivor")
        queries = job.queries
        last = (queries[0].last_progress or {}) if queries else {}
        ok = job.state == "running" and queries[0].state == "running"
        return job if ok and last.get("batch_id", -1) >= minimum else None

    before = eventually(lambda: batches(3), timeout=240, what="the job to run")
    with stream_server.store() as store:
        engine_id = before.queries[0].engine_id
        assert engine_id is not None
        engine = store.engines.get(engine_id)
    assert engine.pid is not None and engine.kind.value == "streaming"
    os.killpg(engine.pid, signal.SIGKILL)  # driver and JVM, no goodbye
    progress = before.queries[0].last_progress
    assert progress is not None
    batch = progress["batch_id"]

    after = eventually(lambda: batches(batch + 3), timeout=240, what="the job to resume")
    assert after.restarts == 1 and after.session_id != before.session_id
    assert after.queries[0].engine_id != engine.id
    assert after.queries[0].spark_id == before.queries[0].spark_id  # same checkpoint
    assert after.last_error is not None and after.last_error.code == "ENGINE_LOST"
    [relaunch] = after.recent_restarts
    assert relaunch.delay == 0.5 and relaunch.restarted_at is not None

    jobs.stop_stream("survivor")
    assert jobs.wait_stream("survivor", {"stopped"}, timeout=120).state == "stopped"
    sid = interactive().id
    assert_exactly_once(output_stats(sg, sid, out))
