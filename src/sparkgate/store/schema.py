"""The store's tables, in SQLAlchemy Core. Migrations (``store/migrations``) create them.

Times are epoch seconds as floats: portable across SQLite and PostgreSQL, cheap to compare, and
trivial to render as ISO 8601 or Livy's epoch milliseconds.
"""

from __future__ import annotations

import sqlalchemy as sa
from sqlalchemy.dialects.postgresql import JSONB

metadata = sa.MetaData(
    naming_convention={
        "ix": "ix_%(table_name)s_%(column_0_N_name)s",
        "uq": "uq_%(table_name)s_%(column_0_N_name)s",
        "fk": "fk_%(table_name)s_%(column_0_name)s_%(referred_table_name)s",
        "pk": "pk_%(table_name)s",
    }
)

# The largest id (or count) an integer column holds: SQLite INTEGER, PostgreSQL BIGINT. Every
# door refuses larger numbers before they reach the store, which would fail on them.
ID_MAX = 2**63 - 1

Json = sa.JSON().with_variant(JSONB(), "postgresql")
Time = sa.Float(precision=53)

engines = sa.Table(
    "engines",
    metadata,
    sa.Column("id", sa.Integer, primary_key=True, autoincrement=True),
    sa.Column("kind", sa.String(16), nullable=False),
    sa.Column("state", sa.String(16), nullable=False),
    # A dedicated engine serves exactly this session; NULL while it waits in the warm pool.
    sa.Column("session_id", sa.Integer, nullable=True),
    sa.Column("conf", Json, nullable=False, default=dict),
    # Whose sessions a shared or streaming engine may host ("user:bob", "group:analysts");
    # NULL: anyone's (share level "server"), or not yet claimed by anyone.
    sa.Column("share_key", sa.String(255), nullable=True),
    sa.Column("node_id", sa.String(128), nullable=True),  # the server node that launched it
    sa.Column("host", sa.String(255), nullable=True),
    sa.Column("pid", sa.Integer, nullable=True),
    sa.Column("app_id", sa.String(128), nullable=True),
    sa.Column("ui_url", sa.String(255), nullable=True),  # its Spark UI, on loopback (or NULL)
    sa.Column("log_path", sa.Text, nullable=True),
    sa.Column("error", Json, nullable=True),
    sa.Column("version", sa.Integer, nullable=False, default=1),
    sa.Column("created_at", Time, nullable=False),
    sa.Column("started_at", Time, nullable=True),
    sa.Column("heartbeat_at", Time, nullable=True),
    sa.Column("finished_at", Time, nullable=True),
    sa.Column("updated_at", Time, nullable=False),
    sa.Index(None, "state"),
    sa.Index(None, "session_id"),
)

sessions = sa.Table(
    "sessions",
    metadata,
    sa.Column("id", sa.Integer, primary_key=True, autoincrement=True),
    sa.Column("kind", sa.String(16), nullable=False),
    sa.Column("name", sa.String(255), nullable=True),
    sa.Column("state", sa.String(16), nullable=False),
    sa.Column("engine_id", sa.Integer, sa.ForeignKey("engines.id"), nullable=True),
    sa.Column("conf", Json, nullable=False, default=dict),
    sa.Column("owner", sa.String(255), nullable=True),
    sa.Column("proxy_user", sa.String(255), nullable=True),
    # Which engines may host it: only those with this share key (see engines.share_key).
    sa.Column("share_key", sa.String(255), nullable=True),
    # Fields other front ends keep per session (Livy's driverMemory, heartbeat timeout, ...).
    sa.Column("attributes", Json, nullable=False, default=dict),
    sa.Column("error", Json, nullable=True),
    # Statements are numbered 0, 1, 2... within their session (Livy's statement ids).
    sa.Column("statement_count", sa.Integer, nullable=False, default=0),
    sa.Column("version", sa.Integer, nullable=False, default=1),
    sa.Column("created_at", Time, nullable=False),
    sa.Column("started_at", Time, nullable=True),
    sa.Column("finished_at", Time, nullable=True),
    sa.Column("last_activity_at", Time, nullable=False),
    sa.Column("updated_at", Time, nullable=False),
    # Lists page by id within a filter (keyset paging): each index ends with the id.
    sa.Index(None, "state", "id"),
    sa.Index(None, "owner", "id"),
    sa.Index(None, "engine_id"),
)

statements = sa.Table(
    "statements",
    metadata,
    sa.Column("id", sa.Integer, primary_key=True, autoincrement=True),
    sa.Column("session_id", sa.Integer, sa.ForeignKey("sessions.id"), nullable=False),
    sa.Column("seq", sa.Integer, nullable=False),
    sa.Column("kind", sa.String(16), nullable=False),
    sa.Column("code", sa.Text, nullable=False),
    sa.Column("state", sa.String(16), nullable=False),
    sa.Column("error", Json, nullable=True),
    # {"schema": [...], "spark_schema": {...}, "row_count": n, "path": "..."} once succeeded
    sa.Column("result", Json, nullable=True),
    # What a REPL statement printed, and extras such as which CTAS path was taken
    sa.Column("output", Json, nullable=True),
    sa.Column("progress", sa.Float, nullable=False, default=0.0),
    sa.Column("version", sa.Integer, nullable=False, default=1),
    sa.Column("created_at", Time, nullable=False),
    sa.Column("started_at", Time, nullable=True),
    sa.Column("finished_at", Time, nullable=True),
    sa.Column("updated_at", Time, nullable=False),
    # Rows a HiveServer2 client has fetched (its FETCH_NEXT cursor), kept here so that any
    # node can serve the next fetch.
    sa.Column("fetched", sa.Integer, nullable=False, default=0, server_default="0"),
    sa.UniqueConstraint("session_id", "seq"),
    # Lists page by id within a filter (keyset paging): each index ends with the id.
    sa.Index(None, "state", "id"),
    sa.Index(None, "session_id", "id"),
    sa.Index(None, "session_id", "state"),
)

leases = sa.Table(
    "leases",
    metadata,
    sa.Column("name", sa.String(128), primary_key=True),
    sa.Column("owner", sa.String(255), nullable=False),
    sa.Column("acquired_at", Time, nullable=False),
    sa.Column("expires_at", Time, nullable=False),
)

# Two-phase table writes (atomic CREATE/REPLACE TABLE AS SELECT). A row is written before any
# data is, so that whatever a crash leaves behind can be found and removed.
table_transactions = sa.Table(
    "table_transactions",
    metadata,
    sa.Column("id", sa.Integer, primary_key=True, autoincrement=True),
    sa.Column("statement_id", sa.Integer, sa.ForeignKey("statements.id"), nullable=False),
    sa.Column("engine_id", sa.Integer, nullable=True),
    sa.Column("operation", sa.String(16), nullable=False),  # create | replace
    sa.Column("database_name", sa.String(255), nullable=False),
    sa.Column("table_name", sa.String(255), nullable=False),
    # create: the hidden table the data is written to before it is renamed into place
    sa.Column("staging_table", sa.String(255), nullable=True),
    # where the data is written; removed if the transaction aborts
    sa.Column("staging_location", sa.Text, nullable=False),
    # where the data ends up: the table's location (create) or its new version (replace)
    sa.Column("target_location", sa.Text, nullable=False),
    # replace: the version readers saw before; removed once retire_after has passed
    sa.Column("previous_location", sa.Text, nullable=True),
    sa.Column("state", sa.String(16), nullable=False),
    sa.Column("error", Json, nullable=True),  # why it aborted
    # False while the catalog may still hold the staging table (only engines can drop it)
    sa.Column("catalog_clean", sa.Boolean, nullable=False, default=True),
    sa.Column("staging_removed_at", Time, nullable=True),
    sa.Column("retire_after", Time, nullable=True),
    sa.Column("retired_at", Time, nullable=True),
    sa.Column("version", sa.Integer, nullable=False, default=1),
    sa.Column("created_at", Time, nullable=False),
    sa.Column("finished_at", Time, nullable=True),
    sa.Column("updated_at", Time, nullable=False),
    sa.Index(None, "state"),
    sa.Index(None, "statement_id"),
)

# -- streaming -----------------------------------------------------------------------------

stream_jobs = sa.Table(
    "stream_jobs",
    metadata,
    sa.Column("id", sa.Integer, primary_key=True, autoincrement=True),
    sa.Column("name", sa.String(128), nullable=False),
    sa.Column("state", sa.String(16), nullable=False),
    sa.Column("owner", sa.String(255), nullable=True),
    sa.Column("sql", sa.Text, nullable=False),  # the script: CREATE STREAM, views, SAVE STREAM
    # The script as ordered steps [{"kind": "sql" | "pyspark", "code"}] when it has Python steps
    # (a deployed `code` job's); NULL: the statements of ``sql``, in order. ``sql`` then holds
    # the SQL steps only (what is checked before anything runs).
    sa.Column("steps", Json, nullable=True),
    sa.Column("conf", Json, nullable=False, default=dict),  # Spark conf of the job's session
    # Where its queries keep their checkpoints (<root>/<query name>); NULL: <checkpoints>/<name>
    sa.Column("checkpoint_root", sa.Text, nullable=True),
    sa.Column("revision", sa.Integer, nullable=False, default=1),  # bumped by each redefinition
    sa.Column("session_id", sa.Integer, nullable=True),  # the session running it now (or last)
    sa.Column("failures", sa.Integer, nullable=False, default=0),  # relaunches in a row
    sa.Column("restarts", sa.Integer, nullable=False, default=0),  # relaunches in all
    sa.Column("next_restart_at", Time, nullable=True),
    sa.Column("error", Json, nullable=True),  # the last error (kept after a relaunch)
    sa.Column("version", sa.Integer, nullable=False, default=1),
    sa.Column("created_at", Time, nullable=False),
    sa.Column("started_at", Time, nullable=True),
    sa.Column("running_since", Time, nullable=True),
    sa.Column("finished_at", Time, nullable=True),
    sa.Column("updated_at", Time, nullable=False),
    sa.UniqueConstraint("name"),
    sa.Index(None, "state"),
)

stream_queries = sa.Table(
    "stream_queries",
    metadata,
    sa.Column("id", sa.Integer, primary_key=True, autoincrement=True),
    # A stream job's query (one row per job and name, reused across relaunches), or else a
    # query started by SAVE STREAM in an interactive session (ends with the session).
    sa.Column("job_id", sa.Integer, sa.ForeignKey("stream_jobs.id"), nullable=True),
    sa.Column("session_id", sa.Integer, nullable=False),
    sa.Column("statement_id", sa.Integer, nullable=True),  # the SAVE STREAM that started it
    sa.Column("engine_id", sa.Integer, nullable=True),
    sa.Column("name", sa.String(255), nullable=False),
    sa.Column("state", sa.String(16), nullable=False),
    sa.Column("spec", Json, nullable=False),  # sink, options, trigger, retry policy
    sa.Column("checkpoint", sa.Text, nullable=True),  # NULL: a sink that cannot resume (memory)
    sa.Column("spark_id", sa.String(64), nullable=True),  # stable across restarts
    sa.Column("run_id", sa.String(64), nullable=True),  # new at each start
    sa.Column("failures", sa.Integer, nullable=False, default=0),  # failures in a row
    sa.Column("restarts", sa.Integer, nullable=False, default=0),
    sa.Column("next_restart_at", Time, nullable=True),
    sa.Column("error", Json, nullable=True),  # the last error
    sa.Column("last_progress", Json, nullable=True),
    sa.Column("progress_at", Time, nullable=True),
    sa.Column("version", sa.Integer, nullable=False, default=1),
    sa.Column("created_at", Time, nullable=False),
    sa.Column("started_at", Time, nullable=True),
    sa.Column("run_started_at", Time, nullable=True),
    sa.Column("finished_at", Time, nullable=True),
    sa.Column("updated_at", Time, nullable=False),
    # NULL job ids are distinct on both backends: session queries are not constrained here.
    sa.UniqueConstraint("job_id", "name"),
    sa.Index(None, "session_id"),
    sa.Index(None, "state"),
)

# Recent progress only: each query keeps its last ``stream_progress_history`` rows.
stream_progress = sa.Table(
    "stream_progress",
    metadata,
    sa.Column("id", sa.Integer, primary_key=True, autoincrement=True),
    sa.Column("query_id", sa.Integer, sa.ForeignKey("stream_queries.id"), nullable=False),
    sa.Column("run_id", sa.String(64), nullable=True),
    sa.Column("batch_id", sa.BigInteger, nullable=False),
    sa.Column("at", Time, nullable=False),  # when the batch started (Spark's timestamp)
    sa.Column("input_rows", sa.BigInteger, nullable=False),
    sa.Column("input_rows_per_second", sa.Float, nullable=True),
    sa.Column("processed_rows_per_second", sa.Float, nullable=True),
    sa.Column("batch_duration_ms", sa.BigInteger, nullable=True),
    sa.Column("watermark", sa.String(64), nullable=True),
    sa.Column("state_rows", sa.BigInteger, nullable=True),
    sa.Index(None, "query_id", "id"),
)

# Every restart: of a query after it failed (query_id set), or of a whole job after its
# session or engine was lost (query_id NULL).
stream_restarts = sa.Table(
    "stream_restarts",
    metadata,
    sa.Column("id", sa.Integer, primary_key=True, autoincrement=True),
    sa.Column("job_id", sa.Integer, sa.ForeignKey("stream_jobs.id"), nullable=True),
    sa.Column("query_id", sa.Integer, sa.ForeignKey("stream_queries.id"), nullable=True),
    sa.Column("attempt", sa.Integer, nullable=False),  # failures in a row, this one included
    sa.Column("failed_at", Time, nullable=False),
    sa.Column("delay", sa.Float, nullable=False),  # the backoff, in seconds
    sa.Column("restart_at", Time, nullable=False),
    sa.Column("restarted_at", Time, nullable=True),
    sa.Column("error", Json, nullable=True),
    sa.Index(None, "job_id"),
    sa.Index(None, "query_id"),
)


# -- jobs (manifests and deploy) -----------------------------------------------------------

# One row per job name ever deployed. A pruned job keeps its row (``removed``), so that its
# versions continue from the highest if the name is declared again: no state is ever reused.
jobs = sa.Table(
    "jobs",
    metadata,
    sa.Column("id", sa.Integer, primary_key=True, autoincrement=True),
    sa.Column("name", sa.String(128), nullable=False),
    sa.Column("mode", sa.String(16), nullable=False),  # streaming | batch
    sa.Column("owner", sa.String(255), nullable=True),  # who deployed it first
    sa.Column("version", sa.Integer, nullable=False),  # the current version (1, 2, ...)
    sa.Column("manifest", Json, nullable=False),  # as deployed: template merged, kebab-case keys
    # What it runs ([{"kind", "code"}]): the stream job's script, or a batch run's statements
    # (the shared definitions it uses are known only at deploy time, so they are kept here).
    sa.Column("steps", Json, nullable=False),
    # What the deploy decision compares (jobs.fingerprint): a changed query needs a new version
    # and clean state; changed run config a restart from the saved state; changed supervision
    # (description, retry) neither.
    sa.Column("query_fingerprint", sa.String(64), nullable=False),
    sa.Column("config_fingerprint", sa.String(64), nullable=False),
    sa.Column("supervision_fingerprint", sa.String(64), nullable=False),
    sa.Column("query_id", sa.String(36), nullable=False),  # a UUID, new with each version
    sa.Column("query_created_at", Time, nullable=False),  # when the current version was made
    sa.Column("started_before", sa.Boolean, nullable=False, default=False),  # ran in this version
    sa.Column("removed", sa.Boolean, nullable=False, default=False),  # pruned
    sa.Column("created_at", Time, nullable=False),
    sa.Column("updated_at", Time, nullable=False),
    sa.UniqueConstraint("name"),
)

job_versions = sa.Table(
    "job_versions",
    metadata,
    sa.Column("id", sa.Integer, primary_key=True, autoincrement=True),
    sa.Column("name", sa.String(128), nullable=False),
    sa.Column("version", sa.Integer, nullable=False),
    sa.Column("manifest", Json, nullable=False),  # the manifest the version was made from
    sa.Column("query_id", sa.String(36), nullable=False),
    sa.Column("created_at", Time, nullable=False),
    sa.UniqueConstraint("name", "version"),
)

deployments = sa.Table(
    "deployments",
    metadata,
    sa.Column("id", sa.Integer, primary_key=True, autoincrement=True),
    sa.Column("state", sa.String(16), nullable=False),
    sa.Column("owner", sa.String(255), nullable=True),
    sa.Column("plan_only", sa.Boolean, nullable=False, default=False),
    sa.Column("prune", sa.Boolean, nullable=False, default=False),
    sa.Column("node_id", sa.String(255), nullable=True),  # the node that runs it
    sa.Column("lease_owner", sa.String(255), nullable=True),  # its hold on the deploy lease
    sa.Column("files", Json, nullable=False),  # {"manifests": [...], "template", "definitions"}
    sa.Column("error", Json, nullable=True),
    sa.Column("version", sa.Integer, nullable=False, default=1),
    sa.Column("created_at", Time, nullable=False),
    sa.Column("finished_at", Time, nullable=True),
    sa.Column("updated_at", Time, nullable=False),
    sa.Index(None, "state"),
)

# Every decision of every deploy (plans included): what was decided for a job, why, and how
# carrying it out went.
job_decisions = sa.Table(
    "job_decisions",
    metadata,
    sa.Column("id", sa.Integer, primary_key=True, autoincrement=True),
    sa.Column("deployment_id", sa.Integer, sa.ForeignKey("deployments.id"), nullable=False),
    sa.Column("seq", sa.Integer, nullable=False),  # the order of the plan
    sa.Column("job", sa.String(128), nullable=False),
    sa.Column("from_version", sa.Integer, nullable=True),
    sa.Column("to_version", sa.Integer, nullable=True),
    sa.Column("action", sa.String(32), nullable=False),  # jobs.plan.ActionKind
    sa.Column("reason", sa.Text, nullable=False),
    # planned | in_progress | done | failed | skipped (the deployment ended before it) |
    # plan-only (a --plan: nothing was to be done)
    sa.Column("outcome", sa.String(16), nullable=False),
    sa.Column("note", sa.Text, nullable=True),  # what was done: "running", "stopped", ...
    sa.Column("error", Json, nullable=True),
    sa.Column("started_at", Time, nullable=True),
    sa.Column("finished_at", Time, nullable=True),
    sa.UniqueConstraint("deployment_id", "seq"),
    sa.Index(None, "job"),
)

# Runs of batch jobs: a session runs the steps one after the other (sources, then the atomic
# write of the target table); the ``job-runs`` duty submits each step when the one before it
# succeeded, and settles the run.
job_runs = sa.Table(
    "job_runs",
    metadata,
    sa.Column("id", sa.Integer, primary_key=True, autoincrement=True),
    sa.Column("job", sa.String(128), nullable=False),
    sa.Column("job_version", sa.Integer, nullable=False),
    sa.Column("state", sa.String(16), nullable=False),
    sa.Column("session_id", sa.Integer, nullable=True),
    sa.Column("steps", Json, nullable=False),  # [{"kind": "sql" | "pyspark", "code"}]
    sa.Column("step", sa.Integer, nullable=False, default=0),  # steps submitted so far
    sa.Column("statement_id", sa.Integer, nullable=True),  # the step submitted last
    sa.Column("error", Json, nullable=True),
    sa.Column("version", sa.Integer, nullable=False, default=1),
    sa.Column("created_at", Time, nullable=False),
    sa.Column("finished_at", Time, nullable=True),
    sa.Column("updated_at", Time, nullable=False),
    sa.Index(None, "job"),
    sa.Index(None, "state"),
)


# -- users ---------------------------------------------------------------------------------

# Personal access tokens. Only a hash of the secret is kept; ``prefix`` (its first characters)
# is what lists show so that a user can tell their tokens apart.
tokens = sa.Table(
    "tokens",
    metadata,
    sa.Column("id", sa.Integer, primary_key=True, autoincrement=True),
    sa.Column("owner", sa.String(255), nullable=False),
    sa.Column("name", sa.String(255), nullable=True),
    sa.Column("secret_hash", sa.String(64), nullable=False),  # sha256 hex of the whole token
    sa.Column("prefix", sa.String(16), nullable=False),
    sa.Column("created_at", Time, nullable=False),
    sa.Column("expires_at", Time, nullable=True),
    sa.Column("last_used_at", Time, nullable=True),
    sa.Column("revoked_at", Time, nullable=True),
    sa.UniqueConstraint("secret_hash"),
    sa.Index(None, "owner"),
)

# Every action that changes something, every refused attempt and every failed login.
audit_events = sa.Table(
    "audit_events",
    metadata,
    sa.Column("id", sa.Integer, primary_key=True, autoincrement=True),
    sa.Column("at", Time, nullable=False),
    sa.Column("user", sa.String(255), nullable=True),  # NULL: a login that failed
    sa.Column("address", sa.String(64), nullable=True),
    sa.Column("action", sa.String(64), nullable=False),  # session.create, query.cancel, ...
    sa.Column("target", sa.String(255), nullable=True),  # session:12, query:40, stream:clicks
    sa.Column("outcome", sa.String(16), nullable=False),  # ok | denied | failed
    sa.Column("detail", Json, nullable=True),
    sa.Index(None, "at"),
    sa.Index(None, "user", "at"),
)


# -- the Spark Connect door ------------------------------------------------------------------

# Where an engine's Spark Connect service listens ("host:port") and the secret it takes:
# nodes forward the Connect door's calls there. The secret is for nodes only; no view shows
# it. (A table of its own, not columns of engines: a node of the release before, reading
# engines, runs on this schema unchanged.)
engine_connect = sa.Table(
    "engine_connect",
    metadata,
    sa.Column("engine_id", sa.Integer, sa.ForeignKey("engines.id"), primary_key=True),
    sa.Column("url", sa.String(255), nullable=False),
    sa.Column("secret", sa.String(128), nullable=False),
)

# Which sparkgate session a Connect client's session id is, for its user: any node finds the
# engine that holds it. Keyed by owner too, so that another user's session id is another
# session (Spark Connect keys its sessions by user id and session id the same way).
connect_sessions = sa.Table(
    "connect_sessions",
    metadata,
    sa.Column("owner", sa.String(255), primary_key=True),
    sa.Column("client_session", sa.String(64), primary_key=True),
    sa.Column("session_id", sa.Integer, sa.ForeignKey("sessions.id"), nullable=False),
    sa.Column("created_at", Time, nullable=False),
    sa.Index(None, "session_id"),
)

# A Connect operation (an ExecutePlan) and the sparkgate query that records it: a reattach
# through another node, and a cancel, find it by either.
connect_operations = sa.Table(
    "connect_operations",
    metadata,
    sa.Column("statement_id", sa.Integer, sa.ForeignKey("statements.id"), primary_key=True),
    sa.Column("operation_id", sa.String(64), nullable=False),
    sa.Column("session_id", sa.Integer, nullable=False),
    sa.UniqueConstraint("session_id", "operation_id"),
)


# -- idempotent submits ----------------------------------------------------------------------

# A submit's Idempotency-Key and what it made: a repeat by the same user answers that query
# (or session) instead of making another. Written in the transaction that makes it, so a key
# never names nothing and nothing made with a key is without it. ``fingerprint`` is a hash of
# the request (service/idempotency.py): the same key with another request is refused.
idempotency_keys = sa.Table(
    "idempotency_keys",
    metadata,
    sa.Column("owner", sa.String(255), primary_key=True),
    sa.Column("key", sa.String(255), primary_key=True),
    sa.Column("request", sa.String(32), nullable=False),  # "query" | "session"
    sa.Column("fingerprint", sa.String(64), nullable=False),  # sha256 hex
    sa.Column("session_id", sa.Integer, sa.ForeignKey("sessions.id"), nullable=False),
    sa.Column("statement_id", sa.Integer, sa.ForeignKey("statements.id"), nullable=True),
    sa.Column("created_at", Time, nullable=False),
    sa.Index(None, "created_at"),  # the cleanup's range
)

# Data access control (sparkgate.auth.tables): who owns each table or view made through
# sparkgate, and what its owner granted to whom. Names are stored lower-case, as Spark's
# session catalog keeps them.
table_owners = sa.Table(
    "table_owners",
    metadata,
    sa.Column("catalog", sa.String(255), primary_key=True),
    sa.Column("schema_name", sa.String(255), primary_key=True),
    sa.Column("table_name", sa.String(255), primary_key=True),
    sa.Column("owner", sa.String(255), nullable=False),
    sa.Column("created_at", Time, nullable=False),
)

table_grants = sa.Table(
    "table_grants",
    metadata,
    sa.Column("catalog", sa.String(255), primary_key=True),
    sa.Column("schema_name", sa.String(255), primary_key=True),
    sa.Column("table_name", sa.String(255), primary_key=True),
    sa.Column("grantee_kind", sa.String(16), primary_key=True),  # "user" | "group"
    sa.Column("grantee", sa.String(255), primary_key=True),
    sa.Column("privilege", sa.String(32), primary_key=True),
    sa.Column("granted_by", sa.String(255), nullable=False),
    sa.Column("granted_at", Time, nullable=False),
)

# What each statement read and wrote (the engine's check of its plans, rules or not): the
# catalog finds a table's recent statements here by name and time, not by scanning their
# JSON. ``table_name`` is the full name (``spark_catalog.hr.salaries``), ``access`` "read" or
# "write"; ``at``: when the statement ended.
statement_tables = sa.Table(
    "statement_tables",
    metadata,
    sa.Column("statement_id", sa.Integer, sa.ForeignKey("statements.id"), primary_key=True),
    sa.Column("table_name", sa.String(767), primary_key=True),
    sa.Column("access", sa.String(8), primary_key=True),
    sa.Column("at", Time, nullable=False),
    sa.Index(None, "table_name", "at"),
)
