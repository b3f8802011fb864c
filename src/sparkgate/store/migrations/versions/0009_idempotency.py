"""idempotent submits: the Idempotency-Key of each submit and what it made

A table only: the release before runs on this schema unchanged (expand, then contract).

Revision ID: 0009_idempotency
Revises: 0008_connect
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0009_idempotency"
down_revision = "0008_connect"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "idempotency_keys",
        sa.Column("owner", sa.String(length=255), nullable=False),
        sa.Column("key", sa.String(length=255), nullable=False),
        sa.Column("request", sa.String(length=32), nullable=False),
        sa.Column("fingerprint", sa.String(length=64), nullable=False),
        sa.Column("session_id", sa.Integer(), nullable=False),
        sa.Column("statement_id", sa.Integer(), nullable=True),
        sa.Column("created_at", sa.Float(precision=53), nullable=False),
        sa.ForeignKeyConstraint(
            ["session_id"], ["sessions.id"], name="fk_idempotency_keys_session_id_sessions"
        ),
        sa.ForeignKeyConstraint(
            ["statement_id"],
            ["statements.id"],
            name="fk_idempotency_keys_statement_id_statements",
        ),
        sa.PrimaryKeyConstraint("owner", "key", name="pk_idempotency_keys"),
    )
    op.create_index(
        "ix_idempotency_keys_created_at", "idempotency_keys", ["created_at"], unique=False
    )


def downgrade() -> None:
    op.drop_index("ix_idempotency_keys_created_at", table_name="idempotency_keys")
    op.drop_table("idempotency_keys")
