"""Job manifests and deploy end to end: a server of this module's own (real engines, real
Spark, the shared Hive metastore), manifests sent through HTTP and the CLI, outputs read back
with Spark (which honours the file sink's log: every row exactly once, or the test fails).

One streaming job is taken through every branch of the deploy graph; batch and code jobs, the
CLI and concurrent deploys share a second test.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import textwrap
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from sparkgate.client import Client, ClientError
from sparkgate.schemas.jobs import Decision, Deployment
from sparkgate.schemas.streams import StreamQuery
from sparkgate_dev import ServerProcess, eventually, kill_engines, local_test_settings
from tests.e2e.conftest import run

# Everything Spark SQL, YAML and the metadata literals could stumble on.
NASTY = "it's a \\ \"test\"; -- not a comment\nsecond line /* nor this */ '' \\u0041"
TEMPLATE = {
    "path": "template.yaml",
    "content": textwrap.dedent(
        """\
        trigger: 300ms
        properties:
          spark.sql.shuffle.partitions: 2
        retry: {min-backoff: 200ms}
        """
    ),
}
DEFINITIONS = {
    "path": "tables.sql",
    "content": "CREATE DATABASE IF NOT EXISTS jobs_e2e;\n"
    "CREATE STREAM numbers USING rate OPTIONS ('rowsPerSecond'='10');\n"
    "CREATE TEMPORARY VIEW small AS SELECT id FROM range(10)",
}
CLICKS = textwrap.dedent(
    """\
    name: clicks
    description: first
    target-table: jobs_e2e.clicks
    sql: SELECT value FROM numbers WHERE value % 2 = 0
    """
)


@pytest.fixture(scope="module")
def jobs_server(
    tmp_path_factory: pytest.TempPathFactory, metastore_uri: str
) -> Iterator[ServerProcess]:
    home = tmp_path_factory.mktemp("jobs-server")
    settings = local_test_settings(
        home,
        metastore_uri=metastore_uri,
        warm_engines=0,
        stream_progress_interval=0.3,
        stream_stop_timeout=20.0,
        deploy_timeout=240.0,
    )
    process = ServerProcess(settings).start()
    try:
        process.wait_engines_running()
        yield process
    finally:
        process.stop()
        kill_engines(settings, signal.SIGKILL)


@pytest.fixture(scope="module")
def api(jobs_server: ServerProcess) -> Iterator[Client]:
    with jobs_server.client() as client:
        yield client


@pytest.fixture(scope="module")
def reader(api: Client) -> Iterator[int]:
    """An interactive session that reads the jobs' tables."""
    session = api.create_session()
    ready = api.wait_session(session.id, {"idle", "error", "dead"}, timeout=240)
    assert ready.state == "idle", ready
    yield session.id
    api.kill_session(session.id)


def manifest(name: str, text: str) -> dict[str, str]:
    return {"path": f"jobs/{name}.yaml", "content": text}


def deploy(api: Client, *manifests: dict[str, str], **options: Any) -> Deployment:
    """Deploy and wait until the deployment has ended."""
    options.setdefault("template", TEMPLATE)
    options.setdefault("definitions", [DEFINITIONS])
    submitted = api.deploy(list(manifests), **options)
    if submitted.plan_only:
        return submitted
    assert submitted.state == "running"
    return api.wait_deployment(submitted.id, timeout=300)


def decision(deployment: Deployment, job: str) -> Decision:
    found = [d for d in deployment.decisions if d.job == job]
    assert len(found) == 1, deployment
    return found[0]


def query(api: Client, job: str) -> StreamQuery:
    found = api.stream(job).queries
    assert len(found) == 1
    return found[0]


def progressed(api: Client, job: str, batches: int, since_run: str | None = None) -> StreamQuery:
    """Wait for ``batches`` micro-batches of the query's current run (other than ``since_run``)."""

    def enough() -> StreamQuery | None:
        found = query(api, job)
        last = found.last_progress or {}
        fresh = found.run_id != since_run and last.get("run_id") == found.run_id
        ok = found.state == "running" and fresh and last.get("batch_id", -1) >= batches
        return found if ok else None

    return eventually(enough, timeout=180, interval=0.3, what=f"{batches} batches of {job}")


def batch_of(found: StreamQuery) -> int:
    """The last micro-batch a query reported."""
    assert found.last_progress is not None, found
    return int(found.last_progress["batch_id"])


def rows(api: Client, sql: str, session_id: int) -> list[list[Any]]:
    done = run(api, sql, session_id)
    assert done.state == "success", done
    page: list[list[Any]] = api.result(done.id).rows
    return page


def exactly_once(api: Client, sid: int, table: str, version: int, step: int) -> int:
    """The version's rows in ``table``: every value once, none missing; how many."""
    [[count, distinct, low, high]] = rows(
        api,
        f"SELECT count(*), count(DISTINCT value), min(value), max(value) FROM {table} "
        f"WHERE __query_version = {version}",
        sid,
    )
    assert count == distinct, f"duplicates in {table}: {count} rows, {distinct} values"
    assert low == 0 and high == (count - 1) * step, f"gaps in {table}: {count}, {low}..{high}"
    return int(count)


def test_a_streaming_job_through_every_branch_of_the_deploy_graph(
    jobs_server: ServerProcess, api: Client, reader: int
) -> None:
    checkpoints = jobs_server.settings.resolved_checkpoints_dir
    invalid_manifest_changes_nothing(api)
    running, tuned = start_then_keep_state(api, reader, checkpoints)
    resumed, tuned = resume_after_a_stop(api, reader, running, tuned)
    changed = new_version_after_a_query_change(api, reader, checkpoints, running, resumed, tuned)
    lost_checkpoint_then_prune(api, checkpoints, changed)


def invalid_manifest_changes_nothing(api: Client) -> None:
    """An invalid manifest among valid ones: every problem listed, nothing changes."""
    broken = manifest("broken", "name: broken\ntarget-table: t\nsql: SELECT 1\ntrigger: soon\n")
    with pytest.raises(ClientError) as caught:
        deploy(api, manifest("clicks", CLICKS), broken)
    assert (caught.value.status, caught.value.code) == (422, "MANIFESTS_INVALID")
    [problem] = caught.value.body["error"]["errors"]
    assert (problem["file"], problem["field"], problem["line"]) == (
        "jobs/broken.yaml",
        "trigger",
        4,
    )
    assert api.jobs().jobs == [] and api.deployments().total == 0
    assert api.streams().streams == []


def start_then_keep_state(api: Client, reader: int, checkpoints: Path) -> tuple[StreamQuery, str]:
    """New: version 1 with clean state; then edits that keep its state, or its very run."""
    first = deploy(api, manifest("clicks", CLICKS))
    assert first.state == "succeeded", first
    made = decision(first, "clicks")
    assert (made.action, made.to_version, made.outcome) == ("start-clean", 1, "done")
    job = api.job("clicks")
    assert (job.version, job.state, job.started_before) == (1, "running", True)
    running = progressed(api, "clicks", 3)
    assert running.checkpoint == str(checkpoints / "clicks" / "1" / "clicks")

    # Only whitespace, comments and keyword case: nothing happens, state and run kept.
    reformatted = CLICKS.replace(
        "sql: SELECT value FROM numbers WHERE value % 2 = 0",
        "sql: |\n  select VALUE\n    from Numbers  -- the rate source\n   where value % 2 = 0",
    )
    same = deploy(api, manifest("clicks", reformatted))
    assert decision(same, "clicks").action == "nothing"
    assert query(api, "clicks").run_id == running.run_id

    # Only the description: recorded, the running query untouched.
    described = reformatted.replace("description: first", f"description: {json.dumps(NASTY)}")
    updated = deploy(api, manifest("clicks", described))
    assert (decision(updated, "clicks").action, updated.state) == ("update", "succeeded")
    assert query(api, "clicks").run_id == running.run_id
    assert api.job("clicks").description == NASTY

    # A property: stop at a batch boundary, resume from the saved state (same version).
    tuned = described + "properties: {spark.sql.shuffle.partitions: 3}\n"
    restarted = deploy(api, manifest("clicks", tuned))
    assert decision(restarted, "clicks").action == "restart-resume"
    assert decision(restarted, "clicks").outcome == "done"
    return running, tuned


def resume_after_a_stop(
    api: Client, reader: int, running: StreamQuery, tuned: str
) -> tuple[StreamQuery, str]:
    resumed = progressed(api, "clicks", batch_of(running) + 3, running.run_id)
    assert resumed.spark_id == running.spark_id  # the same query, from its checkpoint
    assert api.stream("clicks").conf == {"spark.sql.shuffle.partitions": "3"}
    exactly_once(api, reader, "jobs_e2e.clicks", 1, step=2)
    descriptions = rows(
        api, "SELECT DISTINCT __query_description FROM jobs_e2e.clicks ORDER BY 1", reader
    )
    assert descriptions == sorted([["first"], [NASTY]])  # the new one from the restart on

    # Stopped and unchanged: resumes from its checkpoint.
    api.stop_stream("clicks")
    assert api.wait_stream("clicks", {"stopped"}, timeout=120).state == "stopped"
    stopped_at = exactly_once(api, reader, "jobs_e2e.clicks", 1, step=2)
    again = deploy(api, manifest("clicks", tuned))
    assert decision(again, "clicks").action == "resume"
    after = progressed(api, "clicks", batch_of(resumed) + 3, resumed.run_id)
    assert after.spark_id == running.spark_id
    assert exactly_once(api, reader, "jobs_e2e.clicks", 1, step=2) > stopped_at
    return after, tuned


def new_version_after_a_query_change(
    api: Client,
    reader: int,
    checkpoints: Path,
    running: StreamQuery,
    resumed: StreamQuery,
    tuned: str,
) -> str:
    """A real query change: a new version with clean state under a new checkpoint path; the
    table version 1 wrote is kept aside, and the new one starts from the first row again."""
    v1 = api.job("clicks")
    before = exactly_once(api, reader, "jobs_e2e.clicks", 1, step=2)
    changed = tuned.replace("value % 2 = 0", "value % 3 = 0")
    deployed = deploy(api, manifest("clicks", changed))
    made = decision(deployed, "clicks")
    assert (made.action, made.from_version, made.to_version) == ("restart-clean", 1, 2)
    v2 = api.job("clicks")
    assert v2.version == 2 and v2.query_id != v1.query_id
    fresh = progressed(api, "clicks", 3, resumed.run_id)
    assert fresh.checkpoint == str(checkpoints / "clicks" / "2" / "clicks")
    assert fresh.spark_id != running.spark_id
    assert exactly_once(api, reader, "jobs_e2e.clicks", 2, step=3) > 0
    assert rows(api, "SELECT DISTINCT __query_version FROM jobs_e2e.clicks", reader) == [[2]]
    [[query_id]] = rows(api, "SELECT DISTINCT __query_id FROM jobs_e2e.clicks", reader)
    assert query_id == v2.query_id
    assert exactly_once(api, reader, "jobs_e2e.clicks__v1", 1, step=2) >= before
    assert [v.version for v in api.job_history("clicks").versions] == [2, 1]
    return changed


def lost_checkpoint_then_prune(api: Client, checkpoints: Path, changed: str) -> None:
    # Stopped, and its checkpoint lost: an error, nothing started.
    api.stop_stream("clicks")
    api.wait_stream("clicks", {"stopped"}, timeout=120)
    shutil.rmtree(checkpoints / "clicks" / "2")
    lost = deploy(api, manifest("clicks", changed))
    assert lost.state == "failed" and lost.error and lost.error.code == "DEPLOY_INCOMPLETE"
    refused = decision(lost, "clicks")
    assert (refused.action, refused.outcome) == ("error", "failed")
    assert "checkpoint is gone" in refused.reason
    assert api.stream("clicks").state == "stopped"

    # Its manifest gone: listed, and removed only with --prune (stream job, checkpoints).
    other = manifest(
        "marker", "name: marker\nmode: batch\ntarget-table: jobs_e2e.marker\nsql: SELECT 1 AS n\n"
    )
    planned = deploy(api, other, plan_only=True)
    assert decision(planned, "clicks").action == "orphaned"
    assert api.stream("clicks").state == "stopped"
    pruned = deploy(api, other, prune=True)
    assert decision(pruned, "clicks").action == "remove" and pruned.state == "succeeded"
    with pytest.raises(ClientError) as caught:
        api.stream("clicks")
    assert caught.value.status == 404
    assert not (checkpoints / "clicks").exists()
    assert [j.name for j in api.jobs().jobs] == ["marker"]
    assert api.job("clicks").state == "removed"


def sparkgate(server: ServerProcess, *args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "COLUMNS": "250"}  # tables wide enough that names are not folded
    return subprocess.run(
        [sys.executable, "-m", "sparkgate.cli.main", *args, "--server", server.url],
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
        env=env,
    )


@dataclass
class Files:
    jobs: Path
    options: list[str]

    def contents(self, **replaced: str) -> list[dict[str, str]]:
        found = {p.name: p.read_text() for p in sorted(self.jobs.glob("*.yaml"))}
        found.update({f"{name}.yaml": text for name, text in replaced.items()})
        return [{"path": name, "content": text} for name, text in found.items()]


def test_batch_and_code_jobs_through_the_cli(
    jobs_server: ServerProcess, api: Client, reader: int, tmp_path: Path
) -> None:
    files = write_jobs(tmp_path)
    planned = sparkgate(jobs_server, "deploy", str(files.jobs), *files.options, "--plan")
    assert planned.returncode == 0, planned.stderr
    assert "plan (nothing changed)" in planned.stdout and "register" in planned.stdout
    assert "start-clean" in planned.stdout
    assert {j.name for j in api.jobs().jobs} <= {"marker"}
    deployed = sparkgate(jobs_server, "deploy", str(files.jobs), *files.options)
    assert deployed.returncode == 0, deployed.stderr + deployed.stdout
    assert "succeeded" in deployed.stdout

    batch_runs(jobs_server, api, reader)
    streaming_code_job_and_what_the_cli_shows(jobs_server, api, reader)
    failures_through_the_cli(jobs_server, api, reader, files)
    two_deploys_at_once(api, files)


def write_jobs(tmp_path: Path) -> Files:
    jobs = tmp_path / "jobs"
    jobs.mkdir()
    (tmp_path / "template.yaml").write_text(TEMPLATE["content"])
    (tmp_path / "tables.sql").write_text(DEFINITIONS["content"])
    (jobs / "totals.yaml").write_text(
        "name: totals\nmode: batch\ntarget-table: jobs_e2e.totals\n"
        "sql: SELECT id % 3 AS k, count(*) AS n FROM small GROUP BY 1\n"
    )
    (jobs / "squares.yaml").write_text(
        "name: squares\nmode: batch\ntarget-table: jobs_e2e.squares\n"
        "code: |\n  output = spark.table('small').selectExpr('id', 'id * id AS square')\n"
    )
    (jobs / "stream_squares.yaml").write_text(
        "name: stream_squares\ntarget-table: jobs_e2e.stream_squares\n"
        "code: |\n"
        "  from pyspark.sql import functions as F\n"
        "  # the shared definition 'numbers' is a streaming view\n"
        "  output = spark.table('numbers').select('value', (F.col('value') ** 2).alias('sq'))\n"
    )
    options = ["--template", str(tmp_path / "template.yaml")]
    return Files(jobs, [*options, "--definitions", str(tmp_path / "tables.sql")])


def batch_runs(jobs_server: ServerProcess, api: Client, reader: int) -> None:
    """A batch run: sources, then one atomic replace of the table, with metadata columns."""
    ran = sparkgate(jobs_server, "jobs", "run", "totals")
    assert ran.returncode == 0 and "succeeded" in ran.stdout, ran.stderr
    [first] = api.job("totals").runs
    assert first.query_id is not None
    output = api.query(first.query_id).output
    assert output is not None
    ctas = output["ctas"]
    assert (ctas["path"], ctas["outcome"]) == ("atomic", "created")
    totals = rows(
        api, "SELECT k, n, __query_name, __query_version FROM jobs_e2e.totals ORDER BY k", reader
    )
    assert totals == [[0, 4, "totals", 1], [1, 3, "totals", 1], [2, 3, "totals", 1]]
    again = api.wait_job_run("totals", api.run_job("totals").id, timeout=300)
    assert again.state == "succeeded"
    assert again.query_id is not None
    output = api.query(again.query_id).output
    assert output is not None
    ctas = output["ctas"]
    assert (ctas["path"], ctas["operation"]) == ("atomic", "replace")
    assert rows(api, "SELECT count(*) FROM jobs_e2e.totals", reader) == [[3]]

    squared = sparkgate(jobs_server, "jobs", "run", "squares", "--json")
    assert squared.returncode == 0, squared.stderr
    assert json.loads(squared.stdout)["state"] == "succeeded"
    assert rows(api, "SELECT max(square), count(*) FROM jobs_e2e.squares", reader) == [[81, 10]]


def streaming_code_job_and_what_the_cli_shows(
    jobs_server: ServerProcess, api: Client, reader: int
) -> None:
    progressed(api, "stream_squares", 2)
    [[count, bad, name]] = rows(
        api,
        "SELECT count(*), count_if(sq != value * value), first(__query_name) "
        "FROM jobs_e2e.stream_squares",
        reader,
    )
    assert count > 0 and bad == 0 and name == "stream_squares"
    with pytest.raises(ClientError) as caught:
        api.run_job("stream_squares")
    assert caught.value.code == "JOB_NOT_BATCH"

    listed = sparkgate(jobs_server, "jobs", "list")
    assert listed.returncode == 0 and "stream_squares" in listed.stdout, listed.stderr
    assert "last run succeeded" in listed.stdout
    shown = sparkgate(jobs_server, "jobs", "show", "stream_squares")
    assert shown.returncode == 0 and "running" in shown.stdout and "start-clean" in shown.stdout
    history = json.loads(sparkgate(jobs_server, "jobs", "history", "totals", "--json").stdout)
    assert [d["action"] for d in history["decisions"]][-2:] == ["register", "register"]


def failures_through_the_cli(
    jobs_server: ServerProcess, api: Client, reader: int, files: Files
) -> None:
    # A run whose query fails: the run fails, the table stays as it was.
    (files.jobs / "totals.yaml").write_text(
        "name: totals\nmode: batch\ntarget-table: jobs_e2e.totals\nsql: SELECT nope FROM small\n"
    )
    assert sparkgate(jobs_server, "deploy", str(files.jobs), *files.options).returncode == 0
    failed = sparkgate(jobs_server, "jobs", "run", "totals")
    assert failed.returncode == 1 and "UNRESOLVED_COLUMN" in failed.stderr, failed.stderr
    counted = rows(api, "SELECT count(*), max(__query_version) FROM jobs_e2e.totals", reader)
    assert counted == [[3, 1]]

    # Invalid manifests: every problem, with its file and line; exit 1, nothing deployed.
    bad = files.jobs / "bad.yaml"
    bad.write_text("name: bad\ntarget-table: t\ncode: x = 1\nextra: 2\n")
    refused = sparkgate(jobs_server, "deploy", str(files.jobs), *files.options)
    assert refused.returncode == 1
    assert (
        f"{bad}:3: code:" in refused.stderr and f"{bad}:4: extra: unknown field" in refused.stderr
    )
    bad.unlink()


def two_deploys_at_once(api: Client, files: Files) -> None:
    """The second waits for the first, or is refused naming it."""
    slow = (files.jobs / "stream_squares.yaml").read_text()
    slow += "properties: {spark.sql.shuffle.partitions: 4}\n"
    contents = files.contents(stream_squares=slow)
    first = api.deploy(contents, template=TEMPLATE, definitions=[DEFINITIONS])
    with pytest.raises(ClientError) as caught:
        api.deploy(contents, template=TEMPLATE, definitions=[DEFINITIONS])
    assert (caught.value.status, caught.value.code) == (409, "DEPLOY_IN_PROGRESS")
    assert f"Deployment {first.id}" in caught.value.message
    waited = api.deploy(contents, template=TEMPLATE, definitions=[DEFINITIONS], wait=240)
    done = api.deployment(first.id)
    assert done.state == "succeeded", done
    assert decision(done, "stream_squares").action == "restart-resume"
    assert decision(waited, "stream_squares").action == "nothing"  # planned after the first
    assert api.wait_deployment(waited.id).state == "succeeded"
