"""Immutable snapshots of store rows, as the rest of sparkgate sees them."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Generic, TypeVar

from sparkgate.recorded import RecordedError
from sparkgate.states import (
    DeploymentState,
    EngineKind,
    EngineState,
    JobRunState,
    SessionKind,
    SessionState,
    StatementKind,
    StatementState,
    StreamJobState,
    StreamQueryState,
    TableOperation,
    TableTxnState,
)
from sparkgate.store.session_attributes import SessionAttributes
from sparkgate.store.snapshot import Snapshot, read_as
from sparkgate.store.statement_output import StatementOutput
from sparkgate.stream_spec import QuerySpec


def read_error(stored: Mapping[str, Any] | None) -> RecordedError | None:
    """A row's ``error`` column (None: it did not fail)."""
    return None if stored is None else RecordedError.stored(stored)


@dataclass(frozen=True)
class EngineRecord(Snapshot):
    id: int
    kind: EngineKind
    state: EngineState
    session_id: int | None
    conf: dict[str, str]
    node_id: str | None
    host: str | None
    pid: int | None
    app_id: str | None
    log_path: str | None
    error: RecordedError | None
    version: int
    created_at: float
    started_at: float | None
    heartbeat_at: float | None
    finished_at: float | None
    updated_at: float
    share_key: str | None = None
    ui_url: str | None = None


@dataclass(frozen=True)
class SessionRecord(Snapshot):
    id: int
    kind: SessionKind
    name: str | None
    state: SessionState
    engine_id: int | None
    conf: dict[str, str]
    owner: str | None
    proxy_user: str | None
    attributes: SessionAttributes
    error: RecordedError | None
    statement_count: int
    version: int
    created_at: float
    started_at: float | None
    finished_at: float | None
    last_activity_at: float
    updated_at: float
    share_key: str | None = None


@dataclass(frozen=True)
class ResultColumn:
    """A result's column: its name and Spark's type (``bigint``, ``array<string>``...)."""

    name: str
    type: str


@dataclass(frozen=True)
class ResultInfo:
    """A query's result, typed: where its files are (None: no rows to keep), its columns as
    the native API shows them and as Spark typed them (the JSON HiveServer2 and Livy type
    their answers by), and its row count. The engine makes one; the row keeps its JSON."""

    path: str | None
    schema: list[ResultColumn]
    spark_schema: Mapping[str, Any] | None
    row_count: int

    @classmethod
    def of(cls, result: Mapping[str, Any] | None) -> ResultInfo | None:
        if result is None:
            return None
        path = result.get("path")
        return cls(
            path=str(path) if path else None,
            schema=[
                ResultColumn(str(c["name"]), str(c["type"])) for c in result.get("schema") or []
            ],
            spark_schema=result.get("spark_schema"),
            row_count=int(result.get("row_count") or 0),
        )

    def to_json(self) -> Mapping[str, Any]:  # the statement row's ``result`` column
        return {
            "schema": [{"name": c.name, "type": c.type} for c in self.schema],
            "spark_schema": self.spark_schema,
            "row_count": self.row_count,
            "path": self.path,
        }


@dataclass(frozen=True)
class StatementRecord(Snapshot):
    id: int
    session_id: int
    seq: int
    kind: StatementKind
    code: str
    state: StatementState
    error: RecordedError | None
    result: ResultInfo | None
    output: StatementOutput | None
    progress: float
    version: int
    created_at: float
    started_at: float | None
    finished_at: float | None
    updated_at: float
    fetched: int = 0  # rows a HiveServer2 client has fetched so far
    owner: str | None = None  # its session's owner, when it was read with its session


@dataclass(frozen=True)
class TaskCount:
    """A running statement's Spark tasks: done, and in all of its jobs' stages so far."""

    done: int
    total: int


@dataclass(frozen=True)
class TableTxnRecord(Snapshot):
    """A two-phase table write: see ``sparkgate.tables``."""

    id: int
    statement_id: int
    engine_id: int | None
    operation: TableOperation
    database_name: str
    table_name: str
    staging_table: str | None
    staging_location: str
    target_location: str
    previous_location: str | None
    state: TableTxnState
    error: RecordedError | None
    catalog_clean: bool
    staging_removed_at: float | None
    retire_after: float | None
    retired_at: float | None
    version: int
    created_at: float
    finished_at: float | None
    updated_at: float


@dataclass(frozen=True)
class TableTxnFacts:
    """A table write with the state of the query and the engine running it (None: gone)."""

    txn: TableTxnRecord
    statement_state: StatementState | None
    engine_state: EngineState | None


T = TypeVar("T")


@dataclass(frozen=True)
class Page(Generic[T]):
    """One page of a list. ``total``: every matching row (None when not counted);
    ``next_after``: the key to pass as ``after`` for the following page (None at the end)."""

    items: list[T]
    total: int | None
    offset: int
    limit: int
    next_after: int | str | None = None

    def with_items(self, items: list[Any]) -> Page[Any]:
        """The same page holding other items (the records made into something else)."""
        return Page(items, self.total, self.offset, self.limit, self.next_after)


@dataclass(frozen=True)
class Window:
    """Which page of a list to read: ``limit`` rows from ``offset``, or after the keyset
    cursor ``after`` (an id or a name, as the list is ordered); ``count``: count every
    matching row too. What each list method's paging arguments are, in one value."""

    offset: int = 0
    limit: int = 100
    after: int | str | None = None
    count: bool = True


FIRST_PAGE = Window()  # the default of every list: its first 100 rows, counted


@dataclass(frozen=True)
class LeaseRecord:
    name: str
    owner: str
    acquired_at: float
    expires_at: float


@dataclass(frozen=True)
class StreamJobRecord(Snapshot):
    id: int
    name: str
    state: StreamJobState
    sql: str
    conf: dict[str, str]
    checkpoint_root: str | None
    revision: int
    session_id: int | None
    failures: int
    restarts: int
    next_restart_at: float | None
    error: RecordedError | None
    version: int
    created_at: float
    started_at: float | None
    running_since: float | None
    finished_at: float | None
    updated_at: float
    # With Python steps: the whole script, in order ([{"kind", "code"}]); None: ``sql``'s.
    steps: list[dict[str, str]] | None = None
    owner: str | None = None


@dataclass(frozen=True)
class StreamQueryRecord(Snapshot):
    id: int
    job_id: int | None
    session_id: int
    statement_id: int | None
    engine_id: int | None
    name: str
    state: StreamQueryState
    spec: QuerySpec
    checkpoint: str | None
    spark_id: str | None
    run_id: str | None
    failures: int
    restarts: int
    next_restart_at: float | None
    error: RecordedError | None
    last_progress: dict[str, Any] | None
    progress_at: float | None
    version: int
    created_at: float
    started_at: float | None
    run_started_at: float | None
    finished_at: float | None
    updated_at: float


@dataclass(frozen=True)
class StreamProgressRecord(Snapshot):
    id: int
    query_id: int
    run_id: str | None
    batch_id: int
    at: float
    input_rows: int
    input_rows_per_second: float | None
    processed_rows_per_second: float | None
    batch_duration_ms: int | None
    watermark: str | None
    state_rows: int | None


@dataclass(frozen=True)
class StreamRestartRecord(Snapshot):
    id: int
    job_id: int | None
    query_id: int | None
    attempt: int
    failed_at: float
    delay: float
    restart_at: float
    restarted_at: float | None
    error: RecordedError | None


@dataclass(frozen=True)
class JobRecord(Snapshot):
    id: int
    name: str
    mode: str  # streaming | batch
    version: int
    manifest: dict[str, Any]
    steps: list[dict[str, str]]
    query_fingerprint: str
    config_fingerprint: str
    supervision_fingerprint: str
    query_id: str
    query_created_at: float
    started_before: bool
    removed: bool
    created_at: float
    updated_at: float

    @property
    def batch(self) -> bool:
        return self.mode == "batch"

    owner: str | None = None


@dataclass(frozen=True)
class JobVersionRecord(Snapshot):
    id: int
    name: str
    version: int
    manifest: dict[str, Any]
    query_id: str
    created_at: float


@dataclass(frozen=True)
class DeploymentFiles:
    """What a deployment records of its input: the files' names (``sparkgate deploy``'s
    arguments), shown back with it."""

    manifests: tuple[str, ...] = ()
    template: str | None = None
    definitions: tuple[str, ...] = ()

    @classmethod
    def stored(cls, data: Mapping[str, Any] | None) -> DeploymentFiles:
        data = data or {}
        return cls(
            manifests=tuple(data.get("manifests") or ()),
            template=data.get("template"),
            definitions=tuple(data.get("definitions") or ()),
        )

    def to_json(self) -> dict[str, object]:  # the deployment row's ``files`` column
        return {
            "manifests": list(self.manifests),
            "template": self.template,
            "definitions": list(self.definitions),
        }


@dataclass(frozen=True)
class DeploymentRecord(Snapshot):
    id: int
    state: DeploymentState
    plan_only: bool
    prune: bool
    node_id: str | None
    lease_owner: str | None
    files: DeploymentFiles
    error: RecordedError | None
    version: int
    created_at: float
    finished_at: float | None
    updated_at: float
    owner: str | None = None


@dataclass(frozen=True)
class JobDecisionRecord(Snapshot):
    id: int
    deployment_id: int
    seq: int
    job: str
    from_version: int | None
    to_version: int | None
    action: str
    reason: str
    outcome: str  # planned | in_progress | done | failed | skipped | plan-only
    note: str | None
    error: RecordedError | None
    started_at: float | None
    finished_at: float | None


@dataclass(frozen=True)
class JobRunRecord(Snapshot):
    id: int
    job: str
    job_version: int
    state: JobRunState
    session_id: int | None
    steps: list[dict[str, str]]
    step: int
    statement_id: int | None
    error: RecordedError | None
    version: int
    created_at: float
    finished_at: float | None
    updated_at: float


# The fields that a column's JSON is read into by a reader of their own (``Snapshot``).
read_as(RecordedError, RecordedError.stored)
read_as(ResultInfo, ResultInfo.of)
read_as(SessionAttributes, SessionAttributes.stored)
read_as(QuerySpec, QuerySpec.from_json)
read_as(DeploymentFiles, DeploymentFiles.stored)
