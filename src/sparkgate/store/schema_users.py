"""The tables of users: personal access tokens, and the audit log of what they did (and were
refused). Part of ``schema``, which names every table.
"""

from __future__ import annotations

import sqlalchemy as sa

from sparkgate.store.schema_metadata import Json, Time, metadata

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
    # The access history's: the door a statement came through (rest, cli, livy, hive2,
    # connect, dashboard, stream, job) and its query. NULL on other events.
    sa.Column("door", sa.String(16), nullable=True),
    sa.Column("query_id", sa.Integer, nullable=True),
    sa.Index(None, "at"),
    sa.Index(None, "user", "at"),
    # One table's events, newest first (GET /v1/audit?object=): a table read a million times
    # pages in constant time.
    sa.Index(None, "target", "id"),
)
