"""statement progress: a running statement's Spark tasks, done and in all

A new table only: the release before never reads it, and its engines record the ratio in
``statements.progress`` as before (expand, then contract).

Revision ID: 0018_statement_progress
Revises: 0017_saved_queries
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0018_statement_progress"
down_revision = "0017_saved_queries"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "statement_progress",
        sa.Column("statement_id", sa.Integer(), nullable=False),
        sa.Column("tasks_done", sa.Integer(), nullable=False),
        sa.Column("tasks_total", sa.Integer(), nullable=False),
        sa.Column("at", sa.Float(precision=53), nullable=False),
        sa.ForeignKeyConstraint(["statement_id"], ["statements.id"]),
        sa.PrimaryKeyConstraint("statement_id"),
    )


def downgrade() -> None:
    op.drop_table("statement_progress")
