"""The tables of engines, the sessions they host and the statements those run; the leases
server nodes hold for their duties; and the idempotency keys of the submits that made a
session or a statement. Part of ``schema``, which names every table.
"""

from __future__ import annotations

import sqlalchemy as sa

from sparkgate.store.schema_metadata import Json, Time, metadata

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

# The access policy an engine was launched to enforce (``Settings.access_policy``: which access
# file, which admins). A driver reads them once, from its environment; a node never places work
# on an engine of another policy, and stops such engines when it starts. A table of its own,
# not a column: a node of the release before, pinned to an older revision, still reads engines.
engine_policies = sa.Table(
    "engine_policies",
    metadata,
    sa.Column("engine_id", sa.Integer, sa.ForeignKey("engines.id"), primary_key=True),
    sa.Column("policy", sa.String(64), nullable=False),
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

# A running statement's Spark tasks, done and in all, as its engine's heartbeat last counted
# them (``progress`` is their ratio): a table of its own, so that a node pinned to the release
# before, which reads ``statements`` whole, is not broken by a new column.
statement_progress = sa.Table(
    "statement_progress",
    metadata,
    sa.Column("statement_id", sa.Integer, sa.ForeignKey("statements.id"), primary_key=True),
    sa.Column("tasks_done", sa.Integer, nullable=False),
    sa.Column("tasks_total", sa.Integer, nullable=False),
    sa.Column("at", Time, nullable=False),
)

leases = sa.Table(
    "leases",
    metadata,
    sa.Column("name", sa.String(128), primary_key=True),
    sa.Column("owner", sa.String(255), nullable=False),
    sa.Column("acquired_at", Time, nullable=False),
    sa.Column("expires_at", Time, nullable=False),
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
