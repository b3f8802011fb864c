"""How stream jobs and their queries look in the JSON of the doors and on the dashboard: the
schemas' models composed from what the service reads (a job with its queries' progress and
restarts). A single record's view is its model's ``of`` (``StreamJob.of``, ...)."""

from __future__ import annotations

from sparkgate.schemas.streams import (
    StreamJob,
    StreamJobBrief,
    StreamJobDetail,
    StreamQuery,
    StreamQueryBrief,
    StreamRestart,
)
from sparkgate.service.streams import QueryDetail, StreamDetail, StreamSummary


def stream_detail_view(detail: StreamDetail) -> StreamJobDetail:
    """A stream job, each query with its recent progress and restarts, and the job's own."""
    return StreamJobDetail(
        **dict(StreamJob.of(detail.job)),
        queries=[query_detail_view(q) for q in detail.queries],
        recent_restarts=[StreamRestart.of(r) for r in detail.restarts],
    )


def query_detail_view(detail: QueryDetail) -> StreamQuery:
    return StreamQuery.of(detail.query, progress=detail.progress, restarts=detail.restarts)


def stream_summary_view(summary: StreamSummary) -> StreamJobBrief:
    return StreamJobBrief(
        **dict(StreamJob.of(summary.job)),
        queries=[StreamQueryBrief.of(q) for q in summary.queries],
    )
