"""How stream jobs and their queries look in the JSON of the doors and on the dashboard:
a job, a query with its recent progress and restarts, a session's streaming query."""

from __future__ import annotations

from typing import Any

from sparkgate.service.streams import QueryDetail, SessionStream, StreamDetail, StreamSummary
from sparkgate.service.views import iso
from sparkgate.store.records import (
    StreamJobRecord,
    StreamProgressRecord,
    StreamQueryRecord,
    StreamRestartRecord,
)


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
    view["queries"] = [query_summary(q) for q in summary.queries]
    return view


def query_summary(query: StreamQueryRecord) -> dict[str, Any]:
    """A stream job's query as its job's lists show it."""
    return {"name": query.name, "state": query.state.value, "restarts": query.restarts}
