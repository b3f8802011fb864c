"""The native API's JSON answers as pydantic models: what ``views.py`` and the routes build.

Routes keep building plain dicts (the dashboard reads the same views); each JSON route names
its model (``response_model=``), so the OpenAPI schema lists every key a client sees, and
FastAPI checks every answer against it. The models are closed (``extra="forbid"``): a view
that grows a key its model lacks fails loudly (a 500 in the tests), rather than the schema
quietly lying. Free-form only where the data is: a result row's values, Spark settings,
manifests, stream progress JSON, what a statement printed.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from sparkgate.http.error_bodies import RecordedError
from sparkgate.jobs.plan import ActionKind
from sparkgate.sql.statements import OutputMode
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
)

# ``iso()``'s text: ISO 8601 in UTC with milliseconds, ``2024-05-01T12:00:00.000Z``.
Timestamp = Annotated[str, Field(json_schema_extra={"format": "date-time"})]
# Spark properties as given (``{"spark.sql.shuffle.partitions": "4"}``).
SparkConf = dict[str, str]


class Body(BaseModel):
    model_config = ConfigDict(extra="forbid")


# -- liveness ---------------------------------------------------------------------------------


class Health(Body):
    status: Literal["ok"]
    version: str
    node: str
    store: Literal["sqlite", "postgresql"]


# -- paging -----------------------------------------------------------------------------------


class Paging(Body):
    """The paging keys of a list (``paging.py``)."""

    next: str | None = Field(description="Pass as `?after=` for the next page; null: the last.")
    total: int | None = Field(description="Every matching row; null when not counted.")
    offset: int | None = Field(description="The offset asked; null for a cursor page.")
    limit: int


# -- sessions and queries ---------------------------------------------------------------------


class Session(Body):
    id: int
    kind: SessionKind
    name: str | None
    state: SessionState
    owner: str | None
    proxy_user: str | None
    conf: SparkConf
    engine_id: int | None
    statement_count: int
    created_at: Timestamp
    started_at: Timestamp | None
    finished_at: Timestamp | None
    last_activity_at: Timestamp
    error: RecordedError | None


class SessionList(Paging):
    sessions: list[Session]


class Column(Body):
    name: str
    type: str = Field(description="Spark's type: `bigint`, `decimal(10,2)`, `array<string>`...")


class QueryResult(Body):
    # "schema" shadows a BaseModel attribute: the field has another name and the key as alias.
    columns: list[Column] = Field(alias="schema")
    row_count: int


class QueryAccepted(Body):
    """A query just queued (``POST /v1/queries`` without ``?wait``)."""

    id: int
    session_id: int
    state: StatementState


class Query(Body):
    id: int
    session_id: int
    owner: str | None
    query: str
    kind: StatementKind
    state: StatementState
    progress: float
    created_at: Timestamp
    started_at: Timestamp | None
    finished_at: Timestamp | None
    error: RecordedError | None
    result: QueryResult | None
    output: dict[str, Any] | None = Field(
        description="What the statement printed and how sparkgate ran it (free-form)."
    )


class ResultPage(Body):
    columns: list[Column] = Field(alias="schema")
    rows: list[list[Any]] = Field(description="Each row's values in column order, as JSON.")
    offset: int
    limit: int
    total: int


class WaitedQuery(Query):
    """A query waited for (``?wait=``) that succeeded: with its first result page."""

    page: ResultPage


class QueryList(Paging):
    queries: list[Query]


# -- engines ----------------------------------------------------------------------------------


class Engine(Body):
    id: int
    kind: EngineKind
    state: EngineState
    session_id: int | None
    host: str | None
    pid: int | None
    app_id: str | None
    spark_ui: str | None = Field(description="Its Spark UI through sparkgate (admins).")
    log_path: str | None
    created_at: Timestamp
    started_at: Timestamp | None
    heartbeat_at: Timestamp | None
    finished_at: Timestamp | None
    error: RecordedError | None


class EngineList(Body):
    engines: list[Engine]


# -- streams ----------------------------------------------------------------------------------


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


# -- jobs and deploys -------------------------------------------------------------------------


class Decision(Body):
    deployment_id: int
    job: str
    from_version: int | None
    to_version: int | None
    action: ActionKind
    reason: str
    outcome: Literal["planned", "plan-only", "in_progress", "done", "failed", "skipped"]
    note: str | None
    error: RecordedError | None
    started_at: Timestamp | None
    finished_at: Timestamp | None


class DeployedFiles(Body):
    manifests: list[str]
    template: str | None
    definitions: list[str]


class Deployment(Body):
    id: int
    state: DeploymentState
    plan_only: bool
    prune: bool
    node_id: str | None
    files: DeployedFiles
    error: RecordedError | None
    created_at: Timestamp
    finished_at: Timestamp | None
    decisions: list[Decision]


class DeploymentList(Paging):
    deployments: list[Deployment]


class JobRun(Body):
    id: int
    job: str
    version: int
    state: JobRunState
    session_id: int | None
    steps: int
    steps_submitted: int
    query_id: int | None
    error: RecordedError | None
    created_at: Timestamp
    finished_at: Timestamp | None


class Job(Body):
    name: str
    mode: Literal["streaming", "batch"]
    # ``views.job_view``: removed, batch, or its stream job's state (missing: deleted by hand).
    state: Literal["removed", "batch", "missing"] | StreamJobState
    version: int
    query_id: str
    query_created_at: Timestamp
    started_before: bool
    description: str
    target_table: str | None
    last_error: RecordedError | None
    last_run: JobRun | None
    created_at: Timestamp
    updated_at: Timestamp


class JobList(Body):
    jobs: list[Job]


class JobStreamQuery(Body):
    name: str
    state: StreamQueryState
    restarts: int
    checkpoint: str | None
    last_error: RecordedError | None


class JobStream(StreamJob):
    queries: list[JobStreamQuery]


class JobDetail(Job):
    manifest: dict[str, Any] = Field(description="The manifest as deployed (free-form YAML).")
    steps: list[Step]
    stream: JobStream | None
    runs: list[JobRun]
    decisions: list[Decision]


class JobVersion(Body):
    version: int
    query_id: str
    created_at: Timestamp
    manifest: dict[str, Any]


class JobHistory(Body):
    name: str
    versions: list[JobVersion]
    decisions: list[Decision]


class JobRunList(Body):
    runs: list[JobRun]


# -- users --------------------------------------------------------------------------------


class Whoami(Body):
    user: str
    groups: list[str]
    admin: bool
    rights: list[Literal["sql", "code", "streams", "jobs", "admin"]]
    via: str = Field(description="How the credentials were checked: password, ldap, jwt, ...")


class Token(Body):
    id: int
    name: str | None
    owner: str
    prefix: str = Field(description="The secret's first characters, to tell tokens apart.")
    created_at: Timestamp
    expires_at: Timestamp | None
    last_used_at: Timestamp | None
    revoked_at: Timestamp | None


class NewToken(Token):
    token: str = Field(description="The secret: shown in this answer only.")


class TokenList(Body):
    tokens: list[Token]


class AuditEvent(Body):
    id: int
    at: Timestamp
    user: str | None
    address: str | None
    action: str
    target: str | None
    outcome: Literal["ok", "denied", "failed"]
    detail: dict[str, Any] | None


class AuditList(Paging):
    events: list[AuditEvent]


class AccessExplanation(Body):
    """``GET /v1/access/explain``: why a user may or may not use a privilege on a table."""

    user: str
    privilege: str
    table: str
    allowed: bool
    privileges: list[str]
    hidden_columns: list[str]
    masks: dict[str, str]
    row_filter: str | None
    reasons: list[str]


class TableGrant(Body):
    grantee_type: str  # "user" | "group"
    grantee: str
    privilege: str
    granted_by: str
    granted_at: float


class TableGrants(Body):
    """``GET /v1/tables/{table}/grants``: a table's owner and what was granted on it."""

    table: str
    owner: str | None
    grants: list[TableGrant]


# -- the catalog ------------------------------------------------------------------------------


class CatalogEntry(Body):
    # "schema" shadows a BaseModel attribute: the field has another name and the key as alias.
    schema_name: str = Field(alias="schema")
    name: str
    kind: Literal["table", "view"]


class CatalogSchema(Body):
    name: str
    tables: list[CatalogEntry] = Field(description="Those you may see; empty if none.")


class CatalogListing(Body):
    """``GET /v1/tables``: the schemas, and in each the tables and views you may see."""

    schemas: list[CatalogSchema]
    query_id: int = Field(description="The catalog query (kind `catalog`) that listed them.")


class TableColumn(Body):
    name: str
    type: str = Field(description="Spark's type, as you read the column (a mask may change it).")
    nullable: bool | None
    comment: str | None


class TableUse(Body):
    """A query that read or wrote the table."""

    id: int
    user: str | None
    access: Literal["read", "write"]
    at: Timestamp = Field(description="When the query ended.")
    state: StatementState


class TableDetail(Body):
    """``GET /v1/tables/{name}``: a table or view as you may see it."""

    name: str = Field(description="schema.table")
    full_name: str = Field(description="catalog.schema.table")
    schema_name: str = Field(alias="schema")
    table: str
    kind: Literal["table", "view"]
    owner: str | None = Field(
        description="As sparkgate recorded it (table rules), else as Spark's catalog did."
    )
    columns: list[TableColumn] = Field(description="As you see them: hidden columns left out.")
    provider: str | None
    location: str | None
    created_at: Timestamp | None
    comment: str | None
    view_text: str | None
    size_bytes: int | None = Field(description="Of its files; null for a view.")
    files: int | None
    files_complete: bool | None = Field(description="False: more files than were counted.")
    last_change: Timestamp | None = Field(description="Its newest file's modification time.")
    preview: ResultPage | None = Field(description="Its first rows, as you read them.")
    preview_error: RecordedError | None = Field(description="Why there is no preview.")
    recent_queries: list[TableUse] = Field(description="Newest first; yours (admins: all).")
    query_id: int = Field(description="The catalog query (kind `catalog`) that described it.")
