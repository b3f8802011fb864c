"""result reuse: table versions, session contexts, results kept for reuse, reused queries

New tables only: a node of the release before never reads them; its engines bump no version,
so a node of this release reuses nothing a write of theirs could have changed only while
both run (each kept result also checks its tables' files at lookup).

Revision ID: 0019_result_reuse
Revises: 0018_statement_progress
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects.postgresql import JSONB

revision = "0019_result_reuse"
down_revision = "0018_statement_progress"
branch_labels = None
depends_on = None

_TIME = sa.Float(precision=53)
_JSON = sa.JSON().with_variant(JSONB(), "postgresql")


def upgrade() -> None:
    op.create_table(
        "table_versions",
        sa.Column("table_name", sa.String(length=767), nullable=False),
        sa.Column("version", sa.Integer(), nullable=False),
        sa.Column("changed_at", _TIME, nullable=False),
        sa.PrimaryKeyConstraint("table_name", name=op.f("pk_table_versions")),
    )
    op.create_table(
        "reuse_contexts",
        sa.Column("holder", sa.String(length=32), nullable=False),
        sa.Column("engine_id", sa.Integer(), nullable=True),
        sa.Column("after_seq", sa.Integer(), nullable=False),
        sa.Column("context", sa.String(length=64), nullable=True),
        sa.Column("at", _TIME, nullable=False),
        sa.PrimaryKeyConstraint("holder", name=op.f("pk_reuse_contexts")),
    )
    op.create_table(
        "reusable_results",
        sa.Column("id", sa.Integer(), autoincrement=True, nullable=False),
        sa.Column("reuse_key", sa.String(length=64), nullable=False),
        sa.Column("statement_id", sa.Integer(), nullable=False),
        sa.Column("owner", sa.String(length=255), nullable=True),
        sa.Column("tables", _JSON, nullable=False),
        sa.Column("policy", _JSON, nullable=False),
        sa.Column("result_bytes", sa.BigInteger(), nullable=False),
        sa.Column("created_at", _TIME, nullable=False),
        sa.Column("expires_at", _TIME, nullable=False),
        sa.ForeignKeyConstraint(
            ["statement_id"],
            ["statements.id"],
            name=op.f("fk_reusable_results_statement_id_statements"),
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_reusable_results")),
    )
    op.create_index(
        op.f("ix_reusable_results_reuse_key_expires_at"),
        "reusable_results",
        ["reuse_key", "expires_at"],
    )
    op.create_index(op.f("ix_reusable_results_expires_at"), "reusable_results", ["expires_at"])
    op.create_table(
        "statement_reuse",
        sa.Column("statement_id", sa.Integer(), nullable=False),
        sa.Column("reused_from", sa.Integer(), nullable=False),
        sa.Column("saved_cpu_seconds", sa.Float(precision=53), nullable=False),
        sa.Column("saved_run_seconds", sa.Float(precision=53), nullable=False),
        sa.ForeignKeyConstraint(
            ["statement_id"],
            ["statements.id"],
            name=op.f("fk_statement_reuse_statement_id_statements"),
        ),
        sa.PrimaryKeyConstraint("statement_id", name=op.f("pk_statement_reuse")),
    )


def downgrade() -> None:
    op.drop_table("statement_reuse")
    op.drop_index(op.f("ix_reusable_results_expires_at"), table_name="reusable_results")
    op.drop_index(op.f("ix_reusable_results_reuse_key_expires_at"), table_name="reusable_results")
    op.drop_table("reusable_results")
    op.drop_table("reuse_contexts")
    op.drop_table("table_versions")
