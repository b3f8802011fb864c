"""The tables of what the store keeps about the Spark catalog's tables: two-phase writes in
progress (or whose leftovers are still to remove), the owner of each table made through
sparkgate and its grants, and which tables each statement read and wrote. Part of ``schema``,
which names every table.
"""

from __future__ import annotations

import sqlalchemy as sa

from sparkgate.store.schema_metadata import Json, Time, metadata

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
