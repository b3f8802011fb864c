"""Result reuse: table versions, session contexts, results kept for reuse and what each reused
query reused. Part of ``schema``, which names every table.

A table's version is bumped by every write through sparkgate (the engine, with the writing
statement's end), so a kept result read at versions that are no longer current is never served.
A context is what, besides its text, decides a query's answer in a session (its catalog and
schema, its settings, its temporary names), as the engine last reported it.
"""

from __future__ import annotations

import sqlalchemy as sa

from sparkgate.store.schema_metadata import Json, Time, metadata

table_versions = sa.Table(
    "table_versions",
    metadata,
    # A full name, lower-case (catalog.schema.table), as statement_tables keeps it.
    sa.Column("table_name", sa.String(767), primary_key=True),
    sa.Column("version", sa.Integer, nullable=False),
    sa.Column("changed_at", Time, nullable=False),
)

reuse_contexts = sa.Table(
    "reuse_contexts",
    metadata,
    # "s<session id>" for a session's context after its statement ``after_seq`` (-1: before
    # any); "e<engine id>" for what a fresh session of that engine starts with.
    sa.Column("holder", sa.String(32), primary_key=True),
    sa.Column("engine_id", sa.Integer, nullable=True),
    sa.Column("after_seq", sa.Integer, nullable=False),
    sa.Column("context", sa.String(64), nullable=True),  # NULL: nothing in it may be reused
    sa.Column("at", Time, nullable=False),
)

reusable_results = sa.Table(
    "reusable_results",
    metadata,
    sa.Column("id", sa.Integer, primary_key=True, autoincrement=True),
    # sha256 hex of the normalised statement and its session's context (sql.lexed.reuse_key).
    sa.Column("reuse_key", sa.String(64), nullable=False),
    sa.Column("statement_id", sa.Integer, sa.ForeignKey("statements.id"), nullable=False),
    sa.Column("owner", sa.String(255), nullable=True),  # whose query computed it
    # [{"name", "version", "location", "files"}]: each table or view it read, as it was.
    sa.Column("tables", Json, nullable=False),
    # [{"name", "reader", "decision"}]: each access decision its reads took (reader None: the
    # query's own user), as a digest; a repeat by a user whose decisions match may reuse it.
    sa.Column("policy", Json, nullable=False),
    sa.Column("result_bytes", sa.BigInteger, nullable=False),
    sa.Column("created_at", Time, nullable=False),
    sa.Column("expires_at", Time, nullable=False),
    sa.Index(None, "reuse_key", "expires_at"),
    sa.Index(None, "expires_at"),
)

statement_reuse = sa.Table(
    "statement_reuse",
    metadata,
    sa.Column("statement_id", sa.Integer, sa.ForeignKey("statements.id"), primary_key=True),
    sa.Column("reused_from", sa.Integer, nullable=False),
    # What computing it cost the query reused (so what reusing saved): CPU and run seconds.
    sa.Column("saved_cpu_seconds", sa.Float(precision=53), nullable=False),
    sa.Column("saved_run_seconds", sa.Float(precision=53), nullable=False),
)
