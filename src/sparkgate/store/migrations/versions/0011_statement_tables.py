"""the tables each statement read and wrote, by table name and time (the catalog's recent
queries)

A table only: the release before runs on this schema unchanged (expand, then contract).

Revision ID: 0011_statement_tables
Revises: 0010_table_access
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0011_statement_tables"
down_revision = "0010_table_access"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "statement_tables",
        sa.Column("statement_id", sa.Integer(), nullable=False),
        sa.Column("table_name", sa.String(length=767), nullable=False),
        sa.Column("access", sa.String(length=8), nullable=False),
        sa.Column("at", sa.Float(precision=53), nullable=False),
        sa.ForeignKeyConstraint(
            ["statement_id"],
            ["statements.id"],
            name="fk_statement_tables_statement_id_statements",
        ),
        sa.PrimaryKeyConstraint("statement_id", "table_name", "access", name="pk_statement_tables"),
    )
    op.create_index(
        "ix_statement_tables_table_name_at",
        "statement_tables",
        ["table_name", "at"],
        unique=False,
    )


def downgrade() -> None:
    op.drop_index("ix_statement_tables_table_name_at", table_name="statement_tables")
    op.drop_table("statement_tables")
