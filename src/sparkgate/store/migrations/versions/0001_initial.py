"""sessions, statements, engines, leases

Revision ID: 0001
Revises:
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects import postgresql

revision = "0001"
down_revision = None
branch_labels = None
depends_on = None

JSON = sa.JSON().with_variant(postgresql.JSONB(), "postgresql")
TIME = sa.Float(precision=53)


def upgrade() -> None:
    op.create_table(
        "engines",
        sa.Column("id", sa.Integer(), autoincrement=True, nullable=False),
        sa.Column("kind", sa.String(length=16), nullable=False),
        sa.Column("state", sa.String(length=16), nullable=False),
        sa.Column("session_id", sa.Integer(), nullable=True),
        sa.Column("conf", JSON, nullable=False),
        sa.Column("node_id", sa.String(length=128), nullable=True),
        sa.Column("host", sa.String(length=255), nullable=True),
        sa.Column("pid", sa.Integer(), nullable=True),
        sa.Column("app_id", sa.String(length=128), nullable=True),
        sa.Column("log_path", sa.Text(), nullable=True),
        sa.Column("error", JSON, nullable=True),
        sa.Column("version", sa.Integer(), nullable=False),
        sa.Column("created_at", TIME, nullable=False),
        sa.Column("started_at", TIME, nullable=True),
        sa.Column("heartbeat_at", TIME, nullable=True),
        sa.Column("finished_at", TIME, nullable=True),
        sa.Column("updated_at", TIME, nullable=False),
        sa.PrimaryKeyConstraint("id", name="pk_engines"),
    )
    op.create_index("ix_engines_session_id", "engines", ["session_id"])
    op.create_index("ix_engines_state", "engines", ["state"])

    op.create_table(
        "leases",
        sa.Column("name", sa.String(length=128), nullable=False),
        sa.Column("owner", sa.String(length=255), nullable=False),
        sa.Column("acquired_at", TIME, nullable=False),
        sa.Column("expires_at", TIME, nullable=False),
        sa.PrimaryKeyConstraint("name", name="pk_leases"),
    )

    op.create_table(
        "sessions",
        sa.Column("id", sa.Integer(), autoincrement=True, nullable=False),
        sa.Column("kind", sa.String(length=16), nullable=False),
        sa.Column("name", sa.String(length=255), nullable=True),
        sa.Column("state", sa.String(length=16), nullable=False),
        sa.Column("engine_id", sa.Integer(), nullable=True),
        sa.Column("conf", JSON, nullable=False),
        sa.Column("owner", sa.String(length=255), nullable=True),
        sa.Column("proxy_user", sa.String(length=255), nullable=True),
        sa.Column("attributes", JSON, nullable=False),
        sa.Column("error", JSON, nullable=True),
        sa.Column("statement_count", sa.Integer(), nullable=False),
        sa.Column("version", sa.Integer(), nullable=False),
        sa.Column("created_at", TIME, nullable=False),
        sa.Column("started_at", TIME, nullable=True),
        sa.Column("finished_at", TIME, nullable=True),
        sa.Column("last_activity_at", TIME, nullable=False),
        sa.Column("updated_at", TIME, nullable=False),
        sa.ForeignKeyConstraint(
            ["engine_id"], ["engines.id"], name="fk_sessions_engine_id_engines"
        ),
        sa.PrimaryKeyConstraint("id", name="pk_sessions"),
    )
    op.create_index("ix_sessions_engine_id", "sessions", ["engine_id"])
    op.create_index("ix_sessions_state", "sessions", ["state"])

    op.create_table(
        "statements",
        sa.Column("id", sa.Integer(), autoincrement=True, nullable=False),
        sa.Column("session_id", sa.Integer(), nullable=False),
        sa.Column("seq", sa.Integer(), nullable=False),
        sa.Column("kind", sa.String(length=16), nullable=False),
        sa.Column("code", sa.Text(), nullable=False),
        sa.Column("state", sa.String(length=16), nullable=False),
        sa.Column("error", JSON, nullable=True),
        sa.Column("result", JSON, nullable=True),
        sa.Column("output", JSON, nullable=True),
        sa.Column("progress", sa.Float(), nullable=False),
        sa.Column("version", sa.Integer(), nullable=False),
        sa.Column("created_at", TIME, nullable=False),
        sa.Column("started_at", TIME, nullable=True),
        sa.Column("finished_at", TIME, nullable=True),
        sa.Column("updated_at", TIME, nullable=False),
        sa.ForeignKeyConstraint(
            ["session_id"], ["sessions.id"], name="fk_statements_session_id_sessions"
        ),
        sa.PrimaryKeyConstraint("id", name="pk_statements"),
        sa.UniqueConstraint("session_id", "seq", name="uq_statements_session_id_seq"),
    )
    op.create_index("ix_statements_session_id_state", "statements", ["session_id", "state"])
    op.create_index("ix_statements_state", "statements", ["state"])


def downgrade() -> None:
    op.drop_table("statements")
    op.drop_table("sessions")
    op.drop_table("leases")
    op.drop_table("engines")
