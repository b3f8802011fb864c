"""Jobs, deployments and batch runs in the store (SQLite and PostgreSQL): versions, decisions,
the deploy planner's view of the store, abandoned deployments, and runs moved step by step."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from sparkgate.auth.users import Users
from sparkgate.errors.jobs import DeployInProgress, JobNotBatch, JobNotFound, ManifestsInvalid
from sparkgate.jobs.bundle import load_bundle
from sparkgate.jobs.files import SourceFile
from sparkgate.launcher.placement import Placement
from sparkgate.recorded import RecordedError
from sparkgate.service.deployer import Deployer
from sparkgate.service.deployment_run import LEASE
from sparkgate.service.job_runs import JobRunner
from sparkgate.service.sessions import Sessions
from sparkgate.service.stream_jobs import Streams
from sparkgate.settings import Settings
from sparkgate.states import (
    DEPLOYMENT_TRANSITIONS,
    JOB_RUN_TRANSITIONS,
    TERMINAL_DEPLOYMENT_STATES,
    TERMINAL_JOB_RUN_STATES,
    ActionKind,
    DeploymentState,
    JobRunState,
    SessionState,
    StatementKind,
    StatementState,
    StreamJobState,
)
from sparkgate.store import Store
from sparkgate.store.jobs import Fingerprints, PlannedDecision
from sparkgate.store.records import DeploymentFiles
from sparkgate.streaming.definitions import retry_defaults
from tests.conftest import NOW, NoProcesses, force_state

FP = Fingerprints("q1", "c1", "s1")


def _pairs(table: Any) -> list[tuple[Any, Any]]:
    return [(a, b) for a in table for b in table]


@pytest.mark.parametrize(
    ("table", "terminal"),
    [
        (DEPLOYMENT_TRANSITIONS, TERMINAL_DEPLOYMENT_STATES),
        (JOB_RUN_TRANSITIONS, TERMINAL_JOB_RUN_STATES),
    ],
)
def test_state_tables(table: Any, terminal: Any) -> None:
    for state, targets in table.items():
        assert (targets == frozenset()) is (state in terminal)


@pytest.mark.parametrize(("source", "target"), _pairs(DEPLOYMENT_TRANSITIONS))
def test_deployment_moves(store: Store, source: DeploymentState, target: DeploymentState) -> None:
    deployment = store.deployments.add([], files=DeploymentFiles(), now=NOW)
    force_state(store, "deployments", deployment.id, source.value)
    outcome = store.transitions.deployment(deployment.id, target, now=NOW + 1)
    assert outcome.applied is (target in DEPLOYMENT_TRANSITIONS[source])
    if outcome.applied:
        assert store.deployments.get(deployment.id).finished_at == NOW + 1


@pytest.mark.parametrize(("source", "target"), _pairs(JOB_RUN_TRANSITIONS))
def test_job_run_moves(store: Store, source: JobRunState, target: JobRunState) -> None:
    run = store.job_runs.add("totals", 1, [], now=NOW)
    force_state(store, "job_runs", run.id, source.value)
    outcome = store.transitions.job_run(run.id, target, now=NOW + 1)
    assert outcome.applied is (target in JOB_RUN_TRANSITIONS[source])


def test_versions_and_manifests(store: Store) -> None:
    with pytest.raises(JobNotFound):
        store.jobs.get("clicks")
    job = store.jobs.add_version("clicks", "streaming", 1, {"a": 1}, FP, query_id="u1", now=NOW)
    assert (job.version, job.query_id, job.query_created_at) == (1, "u1", NOW)
    assert not job.started_before and not job.removed and job.steps == []
    store.jobs.set_steps("clicks", [{"kind": "sql", "code": "SELECT 1"}], now=NOW)
    store.jobs.mark_started("clicks", 2)  # not its version: nothing
    assert not store.jobs.get("clicks").started_before
    store.jobs.mark_started("clicks", 1)
    updated = store.jobs.update_manifest(
        "clicks", {"a": 2}, Fingerprints("q1", "c2", "s1"), now=NOW + 1
    )
    assert updated.started_before and updated.config_fingerprint == "c2"
    assert (updated.version, updated.query_id, updated.manifest) == (1, "u1", {"a": 2})
    store.jobs.mark_removed("clicks", now=NOW + 2)
    assert store.jobs.all(removed=False) == [] and store.jobs.get("clicks").removed
    again = store.jobs.add_version("clicks", "batch", 2, {"a": 3}, FP, query_id="u2", now=NOW + 3)
    assert (again.version, again.mode, again.removed, again.started_before) == (
        2,
        "batch",
        False,
        False,
    )
    assert [(v.version, v.query_id, v.manifest) for v in store.jobs.versions("clicks")] == [
        (2, "u2", {"a": 3}),
        (1, "u1", {"a": 1}),
    ]


def test_deployments_and_their_decisions(store: Store) -> None:
    plan = [
        PlannedDecision("clicks", None, 1, "start-clean", "new job"),
        PlannedDecision("totals", 2, 2, "nothing", "unchanged"),
    ]
    shown = store.deployments.add(
        plan, files=DeploymentFiles(manifests=("a",)), now=NOW, plan_only=True
    )
    assert shown.state is DeploymentState.SUCCEEDED and shown.finished_at == NOW
    assert {d.outcome for d in store.deployments.decisions(shown.id)} == {"plan-only"}
    deployment = store.deployments.add(
        plan, files=DeploymentFiles(), now=NOW + 1, node_id="n1", lease_owner="n1/x", prune=True
    )
    assert deployment.state is DeploymentState.RUNNING and deployment.prune
    assert store.deployments.find_by_owner("n1/x") == deployment
    first, second = store.deployments.decisions(deployment.id)
    assert (first.outcome, first.seq, second.from_version) == ("planned", 0, 2)
    store.deployments.set_outcome(first.id, "in_progress", now=NOW + 2, note="starting")
    store.deployments.set_outcome(first.id, "done", now=NOW + 3, note="running")
    store.deployments.skip_unfinished(deployment.id, now=NOW + 4, note="ended")
    first, second = store.deployments.decisions(deployment.id)
    assert (first.outcome, first.note, first.started_at, first.finished_at) == (
        "done",
        "running",
        NOW + 2,
        NOW + 3,
    )
    assert (second.outcome, second.note) == ("skipped", "ended")
    history = store.deployments.decisions_of_job("clicks")
    assert [d.deployment_id for d in history] == [deployment.id, shown.id]  # newest first
    assert [d.id for d in store.deployments.running()] == [deployment.id]
    assert store.deployments.list_page().items[0].id == deployment.id


def test_a_run_steps_forward_once(store: Store) -> None:
    run = store.job_runs.add("totals", 3, [{"kind": "sql", "code": "SELECT 1"}], now=NOW)
    assert (run.state, run.step, run.statement_id) == (JobRunState.RUNNING, 0, None)
    assert store.job_runs.advance(run.id, submitted=0, statement_id=7)
    assert not store.job_runs.advance(run.id, submitted=0, statement_id=8)  # someone was first
    again = store.job_runs.get(run.id)
    assert (again.step, again.statement_id) == (1, 7)
    assert [r.id for r in store.job_runs.of_job("totals")] == [run.id]
    with pytest.raises(ValueError):
        store.job_runs.update(run.id, state="failed")


# -- the services, on a real store, with no engines --------------------------------------


@pytest.fixture
def node(store: Store, tmp_path: Path) -> tuple[Settings, Sessions, Streams]:
    settings = Settings(home=tmp_path, lease_ttl=10.0)
    placement = Placement(settings, store, NoProcesses(), "node-1", clock=lambda: NOW)
    sessions = Sessions(settings, store, placement, Users(settings, store), clock=lambda: NOW)
    return settings, sessions, Streams(settings, store, sessions, clock=lambda: NOW)


def bundle(*texts: str) -> Any:
    files = [SourceFile(f"m{i}.yaml", t) for i, t in enumerate(texts)]
    loaded = load_bundle(files, None, [], retry_defaults(Settings()))
    assert loaded.ok, loaded.errors
    return loaded


CLICKS = (
    "name: clicks\ntarget-table: t\nsources: [CREATE STREAM r USING rate]\nsql: SELECT * FROM r\n"
)


def test_the_plan_reads_the_store_the_stream_jobs_and_the_checkpoints(
    store: Store, node: tuple[Settings, Sessions, Streams]
) -> None:
    settings, _, streams = node
    deployer = Deployer(settings, store, streams, "node-1", clock=lambda: NOW)
    [job] = bundle(CLICKS).jobs
    [new] = deployer.plan(bundle(CLICKS))
    assert new.kind is ActionKind.START_CLEAN
    store.jobs.add_version("clicks", "streaming", 2, {}, job.fingerprints, query_id="u", now=NOW)
    [stopped] = deployer.plan(bundle(CLICKS))
    assert stopped.kind is ActionKind.START_CLEAN and stopped.reason == "never started"
    store.jobs.mark_started("clicks", 2)
    [gone] = deployer.plan(bundle(CLICKS))
    assert gone.kind is ActionKind.ERROR and "checkpoint is gone" in gone.reason
    offsets = deployer.checkpoint_root("clicks", 2) / "clicks" / "offsets"
    offsets.mkdir(parents=True)
    (offsets / "0").write_text("v1")
    [resume] = deployer.plan(bundle(CLICKS))
    assert resume.kind is ActionKind.RESUME and deployer.has_checkpoint("clicks", 2)
    streams.create("clicks", "CREATE STREAM r USING rate; SAVE STREAM r TO noop")
    [running] = deployer.plan(bundle(CLICKS))  # its stream job is pending: it runs
    assert running.kind is ActionKind.NOTHING
    streams.stop("clicks")
    [again] = deployer.plan(bundle(CLICKS.replace("rate]", "rate OPTIONS ('a'='1')]")))
    assert (again.kind, again.version) == (ActionKind.START_CLEAN, 3)


def test_a_stream_job_deploys_do_not_manage_is_never_taken_over(
    store: Store, node: tuple[Settings, Sessions, Streams]
) -> None:
    settings, _, streams = node
    streams.create("clicks", "CREATE STREAM r USING rate; SAVE STREAM r TO noop")
    deployer = Deployer(settings, store, streams, "node-1", clock=lambda: NOW)
    [action] = deployer.plan(bundle(CLICKS))
    assert action.kind is ActionKind.ERROR and "streams delete clicks --stop" in action.reason


def test_invalid_manifests_change_nothing(
    store: Store, node: tuple[Settings, Sessions, Streams]
) -> None:
    settings, _, streams = node
    deployer = Deployer(settings, store, streams, "node-1", clock=lambda: NOW)
    bad = SourceFile("bad.yaml", "name: bad\ntarget-table: t\n")
    with pytest.raises(ManifestsInvalid) as caught:
        deployer.submit([SourceFile("ok.yaml", CLICKS), bad])
    [error] = caught.value.params["errors"]
    assert (error["file"], error["field"], error["line"]) == ("bad.yaml", "sql", None)
    assert "bad.yaml: sql:" in caught.value.message
    assert store.deployments.list_page().total == 0 and store.jobs.all() == []
    assert store.leases.get(LEASE) is None


def test_a_second_deploy_is_refused_naming_the_first(
    store: Store, node: tuple[Settings, Sessions, Streams]
) -> None:
    settings, _, streams = node
    deployer = Deployer(settings, store, streams, "node-1", clock=lambda: NOW)
    store.leases.acquire(LEASE, "node-9/abc", now=NOW, ttl=60)
    first = store.deployments.add(
        [], files=DeploymentFiles(), now=NOW, node_id="node-9", lease_owner="node-9/abc"
    )
    with pytest.raises(DeployInProgress) as caught:
        deployer.submit([SourceFile("ok.yaml", CLICKS)], wait=0.3)
    assert caught.value.params == {"deployment_id": first.id, "node_id": "node-9"}
    assert f"Deployment {first.id} (on node node-9) is still running" in caught.value.message
    plan = deployer.submit([SourceFile("ok.yaml", CLICKS)], plan_only=True)  # no lease needed
    assert plan.deployment.plan_only and [a.kind for a in plan.actions] == [ActionKind.START_CLEAN]


def test_a_deployment_whose_node_died_is_settled(
    store: Store, node: tuple[Settings, Sessions, Streams]
) -> None:
    settings, _, streams = node
    deployer = Deployer(settings, store, streams, "node-2")
    store.leases.acquire(LEASE, "node-1/abc", now=NOW, ttl=10)
    plan = [PlannedDecision("clicks", None, 1, "start-clean", "new job")]
    deployment = store.deployments.add(
        plan, files=DeploymentFiles(), now=NOW, node_id="node-1", lease_owner="node-1/abc"
    )
    deployer.settle(NOW + 15)  # lapsed, but not for two lease periods: a slow node
    assert store.deployments.get(deployment.id).state is DeploymentState.RUNNING
    deployer.settle(NOW + 21)
    settled = store.deployments.get(deployment.id)
    assert settled.state is DeploymentState.FAILED
    assert settled.error is not None and settled.error.code == "DEPLOYMENT_ABANDONED"
    [decision] = store.deployments.decisions(deployment.id)
    assert decision.outcome == "skipped"
    assert store.leases.get(LEASE) is None  # the next deploy need not wait


def test_a_batch_run_submits_each_step_after_the_last_succeeded(
    store: Store, node: tuple[Settings, Sessions, Streams]
) -> None:
    _, sessions, _ = node
    runner = JobRunner(store, sessions, clock=lambda: NOW)
    steps = [
        {"kind": "sql", "code": "CREATE TEMPORARY VIEW v AS SELECT 1 AS n"},
        {"kind": "pyspark", "code": "output = spark.table('v')"},
        {"kind": "sql", "code": "CREATE OR REPLACE TABLE t AS SELECT * FROM v"},
    ]
    store.jobs.add_version(
        "totals",
        "batch",
        4,
        {"properties": {"spark.sql.shuffle.partitions": "3"}},
        FP,
        query_id="u",
        now=NOW,
    )
    store.jobs.set_steps("totals", steps, now=NOW)
    run = runner.start("totals")
    assert (run.job_version, run.step, run.state) == (4, 1, JobRunState.RUNNING)
    assert run.session_id is not None
    session = store.sessions.get(run.session_id)
    assert session.conf == {"spark.sql.shuffle.partitions": "3"}
    assert session.attributes.job_run == run.id
    submitted = store.statements.list_page(session_id=run.session_id).items
    assert [s.code for s in submitted] == [steps[0]["code"]]
    runner.supervise(NOW)  # the first step still waits: nothing more
    assert store.statements.list_page(session_id=run.session_id).total == 1
    force_state(store, "statements", submitted[0].id, StatementState.SUCCESS.value)
    runner.supervise(NOW)
    second = store.statements.list_page(session_id=run.session_id).items[-1]
    assert (second.kind, second.code) == (StatementKind.PYSPARK, steps[1]["code"])
    force_state(
        store,
        "statements",
        second.id,
        StatementState.FAILED.value,
        error={"code": "X", "message": "boom"},
    )
    runner.supervise(NOW)
    failed = store.job_runs.get(run.id)
    assert failed.state is JobRunState.FAILED and failed.step == 2  # the write never ran
    assert failed.error == RecordedError(
        "X", "boom", {"step": 2, "steps": 3, "query_id": second.id}
    )
    assert store.sessions.get(run.session_id).state is SessionState.KILLED


def test_a_run_succeeds_after_its_last_step_and_ends_with_its_session(
    store: Store, node: tuple[Settings, Sessions, Streams]
) -> None:
    _, sessions, _ = node
    runner = JobRunner(store, sessions, clock=lambda: NOW)
    store.jobs.add_version("totals", "batch", 1, {}, FP, query_id="u", now=NOW)
    store.jobs.set_steps("totals", [{"kind": "sql", "code": "SELECT 1"}], now=NOW)
    run = runner.start("totals")
    assert run.statement_id is not None
    force_state(store, "statements", run.statement_id, StatementState.SUCCESS.value)
    runner.supervise(NOW)
    assert store.job_runs.get(run.id).state is JobRunState.SUCCEEDED
    # a run whose session is killed under it is cancelled
    second = runner.start("totals")
    assert runner.cancel(second.id).state is JobRunState.CANCELLED
    store.jobs.add_version("clicks", "streaming", 1, {}, FP, query_id="u", now=NOW)
    with pytest.raises(JobNotBatch):
        runner.start("clicks")


def test_stream_job_states_are_what_the_plan_calls_running() -> None:
    from sparkgate.service.deployment_run import RUNNING as _RUNNING

    assert {
        StreamJobState.PENDING,
        StreamJobState.STARTING,
        StreamJobState.RUNNING,
        StreamJobState.RESTARTING,
    } == _RUNNING
