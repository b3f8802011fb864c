"""How records look in the JSON of the doors (``/v1``, the CLI through it) and on the
dashboard: one view of each record."""

from __future__ import annotations

import math
from datetime import UTC, datetime
from typing import Any

from sparkgate.auth.principal import Principal
from sparkgate.service.jobs import DeploymentDetail, JobDetail, JobHistory, JobSummary
from sparkgate.service.queries import ResultPage
from sparkgate.service.streams import QueryDetail, SessionStream, StreamDetail, StreamSummary
from sparkgate.store.audit import AuditRecord
from sparkgate.store.records import (
    DeploymentRecord,
    EngineRecord,
    JobDecisionRecord,
    JobRecord,
    JobRunRecord,
    JobVersionRecord,
    SessionRecord,
    StatementRecord,
    StreamJobRecord,
    StreamProgressRecord,
    StreamQueryRecord,
    StreamRestartRecord,
)
from sparkgate.store.tokens import TokenRecord


def iso(ts: float | None) -> str | None:
    if ts is None or math.isnan(ts):
        return None
    # Clamped to what a datetime holds: an older release stored token expiries past year
    # 9999, and one such row must not break every later read of the list it is in.
    moment = min(max(ts, _EARLIEST), _LATEST)
    return (
        datetime.fromtimestamp(moment, UTC)
        .isoformat(timespec="milliseconds")
        .replace("+00:00", "Z")
    )


_EARLIEST = datetime(1, 1, 2, tzinfo=UTC).timestamp()
_LATEST = datetime(9999, 12, 31, 23, 59, 59, tzinfo=UTC).timestamp()


def session_view(session: SessionRecord) -> dict[str, Any]:
    return {
        "id": session.id,
        "kind": session.kind.value,
        "name": session.name,
        "state": session.state.value,
        "owner": session.owner,
        "proxy_user": session.proxy_user,
        "conf": session.conf,
        "engine_id": session.engine_id,
        "statement_count": session.statement_count,
        "created_at": iso(session.created_at),
        "started_at": iso(session.started_at),
        "finished_at": iso(session.finished_at),
        "last_activity_at": iso(session.last_activity_at),
        "error": session.error,
    }


def query_view(statement: StatementRecord) -> dict[str, Any]:
    info = statement.result_info
    result = None if info is None else {"schema": info.schema, "row_count": info.row_count}
    return {
        "id": statement.id,
        "session_id": statement.session_id,
        "owner": statement.owner,
        "query": statement.code,
        "kind": statement.kind.value,
        "state": statement.state.value,
        "progress": statement.progress,
        "created_at": iso(statement.created_at),
        "started_at": iso(statement.started_at),
        "finished_at": iso(statement.finished_at),
        "error": statement.error,
        "result": result,
        # What the statement printed (a pyspark statement's {"data": ...}, a batch file's
        # log) and how sparkgate ran it (e.g. "ctas": {"path": ...}); None when neither.
        "output": statement.output,
    }


def result_page_view(page: ResultPage) -> dict[str, Any]:
    return {
        "schema": page.schema,
        "rows": page.rows,
        "offset": page.offset,
        "limit": page.limit,
        "total": page.total,
    }


def engine_view(engine: EngineRecord) -> dict[str, Any]:
    return {
        "id": engine.id,
        "kind": engine.kind.value,
        "state": engine.state.value,
        "session_id": engine.session_id,
        "host": engine.host,
        "pid": engine.pid,
        "app_id": engine.app_id,
        # Its Spark UI through sparkgate (admins only), when the engine serves one.
        "spark_ui": f"/v1/engines/{engine.id}/ui/" if engine.ui_url else None,
        "log_path": engine.log_path,
        "created_at": iso(engine.created_at),
        "started_at": iso(engine.started_at),
        "heartbeat_at": iso(engine.heartbeat_at),
        "finished_at": iso(engine.finished_at),
        "error": engine.error,
    }


def stream_restart_view(restart: StreamRestartRecord) -> dict[str, Any]:
    return {
        "attempt": restart.attempt,
        "failed_at": iso(restart.failed_at),
        "delay": restart.delay,
        "restart_at": iso(restart.restart_at),
        "restarted_at": iso(restart.restarted_at),
        "error": restart.error,
    }


def stream_progress_view(progress: StreamProgressRecord) -> dict[str, Any]:
    return {
        "batch_id": progress.batch_id,
        "at": iso(progress.at),
        "input_rows": progress.input_rows,
        "input_rows_per_second": progress.input_rows_per_second,
        "processed_rows_per_second": progress.processed_rows_per_second,
        "batch_duration_ms": progress.batch_duration_ms,
        "watermark": progress.watermark,
        "state_rows": progress.state_rows,
    }


def stream_query_view(
    query: StreamQueryRecord,
    *,
    progress: list[StreamProgressRecord] | None = None,
    restarts: list[StreamRestartRecord] | None = None,
) -> dict[str, Any]:
    spec = query.spec
    trigger = spec.get("trigger")
    view: dict[str, Any] = {
        "id": query.id,
        "name": query.name,
        "state": query.state.value,
        "job_id": query.job_id,
        "session_id": query.session_id,
        "statement_id": query.statement_id,
        "engine_id": query.engine_id,
        "source": spec.get("view"),
        "sink": spec.get("table") or spec.get("format"),
        "output_mode": spec.get("output_mode"),
        "trigger": trigger["text"] if trigger else None,
        "checkpoint": query.checkpoint,
        "spark_id": query.spark_id,
        "run_id": query.run_id,
        "restarts": query.restarts,
        "failures": query.failures,
        "next_restart_at": iso(query.next_restart_at),
        "last_error": query.error,
        "last_progress": _progress_summary(query.last_progress),
        "progress_at": iso(query.progress_at),
        "created_at": iso(query.created_at),
        "started_at": iso(query.started_at),
        "run_started_at": iso(query.run_started_at),
        "finished_at": iso(query.finished_at),
        "retry": spec.get("retry"),
    }
    if progress is not None:
        view["recent_progress"] = [stream_progress_view(p) for p in progress]
    if restarts is not None:
        view["recent_restarts"] = [stream_restart_view(r) for r in restarts]
    return view


def _progress_summary(progress: dict[str, Any] | None) -> dict[str, Any] | None:
    if progress is None:
        return None
    return {**progress, "at": iso(progress.get("at"))}


def stream_job_view(job: StreamJobRecord) -> dict[str, Any]:
    return {
        "id": job.id,
        "name": job.name,
        "state": job.state.value,
        "owner": job.owner,
        "revision": job.revision,
        "sql": job.sql,
        "steps": job.steps,
        "conf": job.conf,
        "checkpoint_root": job.checkpoint_root,
        "session_id": job.session_id,
        "restarts": job.restarts,
        "failures": job.failures,
        "next_restart_at": iso(job.next_restart_at),
        "last_error": job.error,
        "created_at": iso(job.created_at),
        "started_at": iso(job.started_at),
        "running_since": iso(job.running_since),
        "finished_at": iso(job.finished_at),
    }


def stream_detail_view(detail: StreamDetail) -> dict[str, Any]:
    """A stream job, each query with its recent progress and restarts, and the job's own."""
    view = stream_job_view(detail.job)
    view["queries"] = [query_detail_view(q) for q in detail.queries]
    view["recent_restarts"] = [stream_restart_view(r) for r in detail.restarts]
    return view


def query_detail_view(detail: QueryDetail) -> dict[str, Any]:
    return stream_query_view(detail.query, progress=detail.progress, restarts=detail.restarts)


def session_stream_view(stream: SessionStream, detail: QueryDetail | None = None) -> dict[str, Any]:
    """A session's streaming query (with its recent progress and restarts, given ``detail``),
    with whose it is: the session's owner, and the session's state."""
    view = stream_query_view(stream.query) if detail is None else query_detail_view(detail)
    view["owner"] = stream.session.owner
    view["session_state"] = stream.session.state.value
    return view


def stream_summary_view(summary: StreamSummary) -> dict[str, Any]:
    view = stream_job_view(summary.job)
    view["queries"] = [_query_summary(q) for q in summary.queries]
    return view


def _query_summary(query: StreamQueryRecord) -> dict[str, Any]:
    """A stream job's query as its job's lists show it."""
    return {"name": query.name, "state": query.state.value, "restarts": query.restarts}


# -- jobs and deploys ---------------------------------------------------------------------


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
            {**_query_summary(q), "checkpoint": q.checkpoint, "last_error": q.error}
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


def principal_view(user: Principal) -> dict[str, Any]:
    """Who the credentials say the caller is."""
    return {
        "user": user.name,
        "groups": sorted(user.groups),
        "admin": user.admin,
        "rights": sorted(user.rights),
        "via": user.via,
    }


def token_view(record: TokenRecord) -> dict[str, Any]:
    """A personal access token, never its secret."""
    return {
        "id": record.id,
        "name": record.name,
        "owner": record.owner,
        "prefix": record.prefix,
        "created_at": iso(record.created_at),
        "expires_at": iso(record.expires_at),
        "last_used_at": iso(record.last_used_at),
        "revoked_at": iso(record.revoked_at),
    }


def audit_event_view(event: AuditRecord) -> dict[str, Any]:
    return {
        "id": event.id,
        "at": iso(event.at),
        "user": event.user,
        "address": event.address,
        "action": event.action,
        "target": event.target,
        "outcome": event.outcome,
        "detail": event.detail,
    }
