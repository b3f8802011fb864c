"""table_transactions: two-phase table writes (atomic CREATE/REPLACE TABLE AS SELECT)

Revision ID: 0002_tables
Revises: 0001
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects import postgresql

revision = "0002_tables"
down_revision = "0001"
branch_labels = None
depends_on = None

JSON = sa.JSON().with_variant(postgresql.JSONB(), "postgresql")
TIME = sa.Float(precision=53)


def upgrade() -> None:
    op.create_table(
        "table_transactions",
        sa.Column("id", sa.Integer(), autoincrement=True, nullable=False),
        sa.Column("statement_id", sa.Integer(), nullable=False),
        sa.Column("engine_id", sa.Integer(), nullable=True),
        sa.Column("operation", sa.String(length=16), nullable=False),
        sa.Column("database_name", sa.String(length=255), nullable=False),
        sa.Column("table_name", sa.String(length=255), nullable=False),
        sa.Column("staging_table", sa.String(length=255), nullable=True),
        sa.Column("staging_location", sa.Text(), nullable=False),
        sa.Column("target_location", sa.Text(), nullable=False),
        sa.Column("previous_location", sa.Text(), nullable=True),
        sa.Column("state", sa.String(length=16), nullable=False),
        sa.Column("error", JSON, nullable=True),
        sa.Column("catalog_clean", sa.Boolean(), nullable=False),
        sa.Column("staging_removed_at", TIME, nullable=True),
        sa.Column("retire_after", TIME, nullable=True),
        sa.Column("retired_at", TIME, nullable=True),
        sa.Column("version", sa.Integer(), nullable=False),
        sa.Column("created_at", TIME, nullable=False),
        sa.Column("finished_at", TIME, nullable=True),
        sa.Column("updated_at", TIME, nullable=False),
        sa.ForeignKeyConstraint(
            ["statement_id"],
            ["statements.id"],
            name="fk_table_transactions_statement_id_statements",
        ),
        sa.PrimaryKeyConstraint("id", name="pk_table_transactions"),
    )
    op.create_index("ix_table_transactions_state", "table_transactions", ["state"])
    op.create_index("ix_table_transactions_statement_id", "table_transactions", ["statement_id"])


def downgrade() -> None:
    op.drop_table("table_transactions")
