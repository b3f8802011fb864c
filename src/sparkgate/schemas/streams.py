"""Stream jobs and their queries: definitions, progress, restarts and retry policy; each
built from its store record (``StreamJob.of``, ...). What joins several (a job's detail with
its queries) is composed in ``service/stream_views.py``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Literal

from pydantic import Field

from sparkgate.schemas.common import Body, Paging, SparkConf, Timestamp, iso, stamp
from sparkgate.schemas.errors import RecordedError
from sparkgate.sql.statements import OutputMode
from sparkgate.states import StatementKind, StreamJobState, StreamQueryState
from sparkgate.store.records import (
    StreamJobRecord,
    StreamProgressRecord,
    StreamQueryRecord,
    StreamRestartRecord,
)


class Step(Body):
    kind: StatementKind
    code: str

    @classmethod
    def all(cls, steps: Sequence[Mapping[str, str]]) -> list[Step]:
        """A script's steps as the store keeps them (``[{"kind", "code"}]``)."""
        return [cls.model_validate(step) for step in steps]


class StreamRestart(Body):
    attempt: int
    failed_at: Timestamp
    delay: float
    restart_at: Timestamp
    restarted_at: Timestamp | None
    error: RecordedError | None

    @classmethod
    def of(cls, restart: StreamRestartRecord) -> StreamRestart:
        return cls(
            attempt=restart.attempt,
            failed_at=stamp(restart.failed_at),
            delay=restart.delay,
            restart_at=stamp(restart.restart_at),
            restarted_at=iso(restart.restarted_at),
            error=RecordedError.of(restart.error),
        )


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
        return cls(
            batch_id=progress.batch_id,
            at=stamp(progress.at),
            input_rows=progress.input_rows,
            input_rows_per_second=progress.input_rows_per_second,
            processed_rows_per_second=progress.processed_rows_per_second,
            batch_duration_ms=progress.batch_duration_ms,
            watermark=progress.watermark,
            state_rows=progress.state_rows,
        )


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
    next_restart_at: Timestamp | None
    last_error: RecordedError | None
    last_progress: dict[str, Any] | None = Field(
        description="Spark's last progress report (StreamingQueryProgress JSON)."
    )
    progress_at: Timestamp | None
    created_at: Timestamp
    started_at: Timestamp | None
    run_started_at: Timestamp | None
    finished_at: Timestamp | None
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
        """A query with its recent progress samples and restarts."""
        spec = query.spec
        trigger = spec.get("trigger")
        retry = spec.get("retry")
        return cls(
            id=query.id,
            name=query.name,
            state=query.state,
            job_id=query.job_id,
            session_id=query.session_id,
            statement_id=query.statement_id,
            engine_id=query.engine_id,
            source=spec.get("view"),
            sink=spec.get("table") or spec.get("format"),
            output_mode=spec.get("output_mode"),
            trigger=trigger["text"] if trigger else None,
            checkpoint=query.checkpoint,
            spark_id=query.spark_id,
            run_id=query.run_id,
            restarts=query.restarts,
            failures=query.failures,
            next_restart_at=iso(query.next_restart_at),
            last_error=RecordedError.of(query.error),
            last_progress=_progress_summary(query.last_progress),
            progress_at=iso(query.progress_at),
            created_at=stamp(query.created_at),
            started_at=iso(query.started_at),
            run_started_at=iso(query.run_started_at),
            finished_at=iso(query.finished_at),
            retry=None if retry is None else RetryPolicy.model_validate(retry),
            recent_progress=[StreamProgress.of(p) for p in progress],
            recent_restarts=[StreamRestart.of(r) for r in restarts],
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
    next_restart_at: Timestamp | None
    last_error: RecordedError | None
    created_at: Timestamp
    started_at: Timestamp | None
    running_since: Timestamp | None
    finished_at: Timestamp | None

    @classmethod
    def of(cls, job: StreamJobRecord) -> StreamJob:
        # ``StreamJob(...)``, not ``cls``: the subclasses add keys, and say how they are built.
        return StreamJob(
            id=job.id,
            name=job.name,
            state=job.state,
            owner=job.owner,
            revision=job.revision,
            sql=job.sql,
            steps=None if job.steps is None else Step.all(job.steps),
            conf=job.conf,
            checkpoint_root=job.checkpoint_root,
            session_id=job.session_id,
            restarts=job.restarts,
            failures=job.failures,
            next_restart_at=iso(job.next_restart_at),
            last_error=RecordedError.of(job.error),
            created_at=stamp(job.created_at),
            started_at=iso(job.started_at),
            running_since=iso(job.running_since),
            finished_at=iso(job.finished_at),
        )


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
        return cls(name=query.name, state=query.state, restarts=query.restarts)


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
