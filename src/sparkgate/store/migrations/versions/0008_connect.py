"""the Spark Connect door: engines' Connect services, client sessions and operations

Tables only: the release before runs on this schema unchanged (expand, then contract).

Revision ID: 0008_connect
Revises: 0007_keyset_indexes
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0008_connect"
down_revision = "0007_keyset_indexes"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "engine_connect",
        sa.Column("engine_id", sa.Integer(), nullable=False),
        sa.Column("url", sa.String(length=255), nullable=False),
        sa.Column("secret", sa.String(length=128), nullable=False),
        sa.ForeignKeyConstraint(
            ["engine_id"], ["engines.id"], name="fk_engine_connect_engine_id_engines"
        ),
        sa.PrimaryKeyConstraint("engine_id", name="pk_engine_connect"),
    )
    op.create_table(
        "connect_sessions",
        sa.Column("owner", sa.String(length=255), nullable=False),
        sa.Column("client_session", sa.String(length=64), nullable=False),
        sa.Column("session_id", sa.Integer(), nullable=False),
        sa.Column("created_at", sa.Float(precision=53), nullable=False),
        sa.ForeignKeyConstraint(
            ["session_id"],
            ["sessions.id"],
            name="fk_connect_sessions_session_id_sessions",
        ),
        sa.PrimaryKeyConstraint("owner", "client_session", name="pk_connect_sessions"),
    )
    op.create_index(
        "ix_connect_sessions_session_id", "connect_sessions", ["session_id"], unique=False
    )
    op.create_table(
        "connect_operations",
        sa.Column("statement_id", sa.Integer(), nullable=False),
        sa.Column("operation_id", sa.String(length=64), nullable=False),
        sa.Column("session_id", sa.Integer(), nullable=False),
        sa.ForeignKeyConstraint(
            ["statement_id"],
            ["statements.id"],
            name="fk_connect_operations_statement_id_statements",
        ),
        sa.PrimaryKeyConstraint("statement_id", name="pk_connect_operations"),
        sa.UniqueConstraint(
            "session_id", "operation_id", name="uq_connect_operations_session_id_operation_id"
        ),
    )


def downgrade() -> None:
    op.drop_table("connect_operations")
    op.drop_index("ix_connect_sessions_session_id", table_name="connect_sessions")
    op.drop_table("connect_sessions")
    op.drop_table("engine_connect")
