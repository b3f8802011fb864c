"""How manifest jobs, their runs and versions, and deployments look in the JSON of the doors
and on the dashboard."""

from __future__ import annotations

from typing import Any

from sparkgate.service.jobs import DeploymentDetail, JobDetail, JobHistory, JobSummary
from sparkgate.service.stream_views import query_summary, stream_job_view
from sparkgate.service.views import iso
from sparkgate.store.records import (
    DeploymentRecord,
    JobDecisionRecord,
    JobRecord,
    JobRunRecord,
    JobVersionRecord,
    StreamJobRecord,
)


def decision_view(decision: JobDecisionRecord) -> dict[str, Any]:
    return {
        "deployment_id": decision.deployment_id,
        "job": decision.job,
        "from_version": decision.from_version,
        "to_version": decision.to_version,
        "action": decision.action,
        "reason": decision.reason,
        "outcome": decision.outcome,
        "note": decision.note,
        "error": decision.error,
        "started_at": iso(decision.started_at),
        "finished_at": iso(decision.finished_at),
    }


def deployment_view(
    deployment: DeploymentRecord, decisions: list[JobDecisionRecord]
) -> dict[str, Any]:
    return {
        "id": deployment.id,
        "state": deployment.state.value,
        "plan_only": deployment.plan_only,
        "prune": deployment.prune,
        "node_id": deployment.node_id,
        "files": deployment.files,
        "error": deployment.error,
        "created_at": iso(deployment.created_at),
        "finished_at": iso(deployment.finished_at),
        "decisions": [decision_view(d) for d in decisions],
    }


def job_view(
    job: JobRecord, stream: StreamJobRecord | None, last_run: JobRunRecord | None
) -> dict[str, Any]:
    """A job; ``state``: removed, its stream job's state (a streaming job; ``missing`` if the
    stream job was deleted by hand), or ``batch`` (``last_run`` says how its last run went)."""
    if job.removed:
        state = "removed"
    elif job.batch:
        state = "batch"
    else:
        state = stream.state.value if stream is not None else "missing"
    return {
        "name": job.name,
        "mode": job.mode,
        "state": state,
        "version": job.version,
        "query_id": job.query_id,
        "query_created_at": iso(job.query_created_at),
        "started_before": job.started_before,
        "description": job.manifest.get("description", ""),
        "target_table": job.manifest.get("target-table"),
        "last_error": stream.error if stream is not None else None,
        "last_run": job_run_view(last_run) if last_run is not None else None,
        "created_at": iso(job.created_at),
        "updated_at": iso(job.updated_at),
    }


def job_summary_view(summary: JobSummary) -> dict[str, Any]:
    return job_view(summary.job, summary.stream, summary.last_run)


def job_detail_view(detail: JobDetail) -> dict[str, Any]:
    """A job with its manifest, steps, stream job (and its queries), runs and decisions."""
    view = job_summary_view(detail)
    view["manifest"] = detail.job.manifest
    view["steps"] = detail.job.steps
    stream = None
    if detail.stream is not None:
        stream = stream_job_view(detail.stream)
        stream["queries"] = [
            {**query_summary(q), "checkpoint": q.checkpoint, "last_error": q.error}
            for q in detail.stream_queries
        ]
    view["stream"] = stream
    view["runs"] = [job_run_view(r) for r in detail.runs]
    view["decisions"] = [decision_view(d) for d in detail.decisions]
    return view


def job_history_view(name: str, history: JobHistory) -> dict[str, Any]:
    return {
        "name": name,
        "versions": [job_version_view(v) for v in history.versions],
        "decisions": [decision_view(d) for d in history.decisions],
    }


def deployment_detail_view(detail: DeploymentDetail) -> dict[str, Any]:
    return deployment_view(detail.deployment, detail.decisions)


def job_version_view(version: JobVersionRecord) -> dict[str, Any]:
    return {
        "version": version.version,
        "query_id": version.query_id,
        "created_at": iso(version.created_at),
        "manifest": version.manifest,
    }


def job_run_view(run: JobRunRecord) -> dict[str, Any]:
    return {
        "id": run.id,
        "job": run.job,
        "version": run.job_version,
        "state": run.state.value,
        "session_id": run.session_id,
        "steps": len(run.steps),
        "steps_submitted": run.step,
        "query_id": run.statement_id,
        "error": run.error,
        "created_at": iso(run.created_at),
        "finished_at": iso(run.finished_at),
    }
