"""Stream jobs and their queries: definitions, progress, restarts and retry policy; each
built from its store record (``StreamJob.of``, ...). What joins several (a job's detail with
its queries) is composed in ``service/stream_views.py``.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, Literal

from pydantic import Field

from sparkgate.schemas.common import Body, OptionalTimestamp, Paging, SparkConf, Timestamp, iso
from sparkgate.schemas.errors import RecordedError
from sparkgate.sql.statements import OutputMode
from sparkgate.states import StatementKind, StreamJobState, StreamQueryState

if TYPE_CHECKING:  # the records its models are built from, for the type checker only
    from sparkgate.store.records import (
        StreamJobRecord,
        StreamProgressRecord,
        StreamQueryRecord,
        StreamRestartRecord,
    )


class Step(Body):
    kind: StatementKind
    code: str


class StreamRestart(Body):
    attempt: int
    failed_at: Timestamp
    delay: float
    restart_at: Timestamp
    restarted_at: OptionalTimestamp
    error: RecordedError | None

    @classmethod
    def of(cls, restart: StreamRestartRecord) -> StreamRestart:
        return cls.model_validate(restart)


class StreamProgress(Body):
    batch_id: int
    at: Timestamp
    input_rows: int
    input_rows_per_second: float | None
    processed_rows_per_second: float | None
    batch_duration_ms: int | None
    watermark: str | None
    state_rows: int | None

    @classmethod
    def of(cls, progress: StreamProgressRecord) -> StreamProgress:
        return cls.model_validate(progress)


class RetryPolicy(Body):
    enabled: bool
    max_attempts: int
    min_backoff: float
    max_backoff: float
    random_factor: float
    stable_period: float


class StreamQuery(Body):
    id: int
    name: str
    state: StreamQueryState
    job_id: int | None
    session_id: int
    statement_id: int | None
    engine_id: int | None
    source: str | None
    sink: str | None
    output_mode: OutputMode | None
    trigger: str | None
    checkpoint: str | None
    spark_id: str | None
    run_id: str | None
    restarts: int
    failures: int
    next_restart_at: OptionalTimestamp
    last_error: RecordedError | None
    last_progress: dict[str, Any] | None = Field(
        description="Spark's last progress report (StreamingQueryProgress JSON)."
    )
    progress_at: OptionalTimestamp
    created_at: Timestamp
    started_at: OptionalTimestamp
    run_started_at: OptionalTimestamp
    finished_at: OptionalTimestamp
    retry: RetryPolicy | None
    recent_progress: list[StreamProgress]
    recent_restarts: list[StreamRestart]

    @classmethod
    def of(
        cls,
        query: StreamQueryRecord,
        *,
        progress: Sequence[StreamProgressRecord],
        restarts: Sequence[StreamRestartRecord],
    ) -> StreamQuery:
        """A query with its recent progress samples and restarts; what it reads and writes,
        how and how often, and its retry policy, from its definition (``spec``)."""
        spec = query.spec
        return cls.from_record(
            query,
            source=spec.view,
            sink=spec.table or spec.format,
            output_mode=spec.output_mode,
            trigger=spec.trigger.text if spec.trigger else None,
            last_error=query.error,
            last_progress=_progress_summary(query.last_progress),
            retry=RetryPolicy.model_validate(spec.retry),
            recent_progress=progress,
            recent_restarts=restarts,
        )


def _progress_summary(progress: dict[str, Any] | None) -> dict[str, Any] | None:
    """Spark's progress report as stored (free-form), its time as every other timestamp."""
    if progress is None:
        return None
    return {**progress, "at": iso(progress.get("at"))}


class StreamJob(Body):
    id: int
    name: str
    state: StreamJobState
    owner: str | None
    revision: int
    sql: str
    steps: list[Step] | None
    conf: SparkConf
    checkpoint_root: str | None
    session_id: int | None
    restarts: int
    failures: int
    next_restart_at: OptionalTimestamp
    last_error: RecordedError | None
    created_at: Timestamp
    started_at: OptionalTimestamp
    running_since: OptionalTimestamp
    finished_at: OptionalTimestamp

    @classmethod
    def of(cls, job: StreamJobRecord) -> StreamJob:
        # ``StreamJob``, not ``cls``: the subclasses add keys, and say how they are built.
        return StreamJob.from_record(job, last_error=job.error)


class StreamJobDetail(StreamJob):
    queries: list[StreamQuery]
    recent_restarts: list[StreamRestart]


class StreamQueryBrief(Body):
    name: str
    state: StreamQueryState
    restarts: int

    @classmethod
    def of(cls, query: StreamQueryRecord) -> StreamQueryBrief:
        """A stream job's query as its job's lists show it."""
        return cls.model_validate(query)


class StreamJobBrief(StreamJob):
    queries: list[StreamQueryBrief]


class StreamJobList(Paging):
    streams: list[StreamJobBrief]


class DeletedStreamJob(StreamJob):
    deleted: Literal[True]

    @classmethod
    def of(cls, job: StreamJobRecord) -> DeletedStreamJob:
        return cls(**dict(StreamJob.of(job)), deleted=True)


class SessionStreams(Body):
    queries: list[StreamQuery]
