"""saved queries: SQL kept under a name by its owner, private or shared with a group

A new table only: the release before never reads it (expand, then contract).

Revision ID: 0017_saved_queries
Revises: 0016_access_history
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects.postgresql import JSONB

revision = "0017_saved_queries"
down_revision = "0016_access_history"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "saved_queries",
        sa.Column("id", sa.Integer(), autoincrement=True, nullable=False),
        sa.Column("owner", sa.String(length=255), nullable=False),
        sa.Column("name", sa.String(length=200), nullable=False),
        sa.Column("sql", sa.Text(), nullable=False),
        sa.Column("description", sa.Text(), nullable=True),
        sa.Column("group_name", sa.String(length=255), nullable=True),
        sa.Column("tags", sa.JSON().with_variant(JSONB(), "postgresql"), nullable=True),
        sa.Column("created_at", sa.Float(precision=53), nullable=False),
        sa.Column("updated_at", sa.Float(precision=53), nullable=False),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_saved_queries")),
        sa.UniqueConstraint("owner", "name", name=op.f("uq_saved_queries_owner_name")),
    )
    op.create_index(
        op.f("ix_saved_queries_owner_updated_at"), "saved_queries", ["owner", "updated_at"]
    )
    op.create_index(
        op.f("ix_saved_queries_group_name_updated_at"),
        "saved_queries",
        ["group_name", "updated_at"],
    )


def downgrade() -> None:
    op.drop_index(op.f("ix_saved_queries_group_name_updated_at"), table_name="saved_queries")
    op.drop_index(op.f("ix_saved_queries_owner_updated_at"), table_name="saved_queries")
    op.drop_table("saved_queries")
