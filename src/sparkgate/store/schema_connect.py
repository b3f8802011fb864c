"""The tables of the Spark Connect door: where each engine's Connect service listens, and which
sparkgate session and query a Connect client's session and operation are. Part of ``schema``,
which names every table.
"""

from __future__ import annotations

import sqlalchemy as sa

from sparkgate.store.schema_metadata import Time, metadata

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
