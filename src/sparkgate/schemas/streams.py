"""Stream jobs and their queries: definitions, progress, restarts and retry policy."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import Field

from sparkgate.schemas.common import Body, Paging, SparkConf, Timestamp
from sparkgate.schemas.errors import RecordedError
from sparkgate.sql.statements import OutputMode
from sparkgate.states import StatementKind, StreamJobState, StreamQueryState


class Step(Body):
    kind: StatementKind
    code: str


class StreamRestart(Body):
    attempt: int
    failed_at: Timestamp
    delay: float
    restart_at: Timestamp
    restarted_at: Timestamp | None
    error: RecordedError | None


class StreamProgress(Body):
    batch_id: int
    at: Timestamp
    input_rows: int
    input_rows_per_second: float | None
    processed_rows_per_second: float | None
    batch_duration_ms: int | None
    watermark: str | None
    state_rows: int | None


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


class StreamJobDetail(StreamJob):
    queries: list[StreamQuery]
    recent_restarts: list[StreamRestart]


class StreamQueryBrief(Body):
    name: str
    state: StreamQueryState
    restarts: int


class StreamJobBrief(StreamJob):
    queries: list[StreamQueryBrief]


class StreamJobList(Paging):
    streams: list[StreamJobBrief]


class DeletedStreamJob(StreamJob):
    deleted: Literal[True]


class SessionStreams(Body):
    queries: list[StreamQuery]
