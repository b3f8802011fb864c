"""users: personal access tokens, the audit log, owners of stream jobs, jobs and deployments,
engines' share keys and UI addresses

Revision ID: 0005_users
Revises: 0004_jobs
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects import postgresql

revision = "0005_users"
down_revision = "0004_jobs"
branch_labels = None
depends_on = None

JSON = sa.JSON().with_variant(postgresql.JSONB(), "postgresql")
TIME = sa.Float(precision=53)


def upgrade() -> None:
    op.add_column("engines", sa.Column("share_key", sa.String(length=255), nullable=True))
    op.add_column("sessions", sa.Column("share_key", sa.String(length=255), nullable=True))
    op.add_column("engines", sa.Column("ui_url", sa.String(length=255), nullable=True))
    op.add_column("stream_jobs", sa.Column("owner", sa.String(length=255), nullable=True))
    op.add_column("jobs", sa.Column("owner", sa.String(length=255), nullable=True))
    op.add_column("deployments", sa.Column("owner", sa.String(length=255), nullable=True))

    op.create_table(
        "tokens",
        sa.Column("id", sa.Integer(), autoincrement=True, nullable=False),
        sa.Column("owner", sa.String(length=255), nullable=False),
        sa.Column("name", sa.String(length=255), nullable=True),
        sa.Column("secret_hash", sa.String(length=64), nullable=False),
        sa.Column("prefix", sa.String(length=16), nullable=False),
        sa.Column("created_at", TIME, nullable=False),
        sa.Column("expires_at", TIME, nullable=True),
        sa.Column("last_used_at", TIME, nullable=True),
        sa.Column("revoked_at", TIME, nullable=True),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_tokens")),
        sa.UniqueConstraint("secret_hash", name=op.f("uq_tokens_secret_hash")),
    )
    op.create_index(op.f("ix_tokens_owner"), "tokens", ["owner"])

    op.create_table(
        "audit_events",
        sa.Column("id", sa.Integer(), autoincrement=True, nullable=False),
        sa.Column("at", TIME, nullable=False),
        sa.Column("user", sa.String(length=255), nullable=True),
        sa.Column("address", sa.String(length=64), nullable=True),
        sa.Column("action", sa.String(length=64), nullable=False),
        sa.Column("target", sa.String(length=255), nullable=True),
        sa.Column("outcome", sa.String(length=16), nullable=False),
        sa.Column("detail", JSON, nullable=True),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_audit_events")),
    )
    op.create_index(op.f("ix_audit_events_at"), "audit_events", ["at"])
    op.create_index(op.f("ix_audit_events_user_at"), "audit_events", ["user", "at"])


def downgrade() -> None:
    op.drop_index(op.f("ix_audit_events_user_at"), table_name="audit_events")
    op.drop_index(op.f("ix_audit_events_at"), table_name="audit_events")
    op.drop_table("audit_events")
    op.drop_index(op.f("ix_tokens_owner"), table_name="tokens")
    op.drop_table("tokens")
    with op.batch_alter_table("deployments") as batch:
        batch.drop_column("owner")
    with op.batch_alter_table("jobs") as batch:
        batch.drop_column("owner")
    with op.batch_alter_table("stream_jobs") as batch:
        batch.drop_column("owner")
    with op.batch_alter_table("sessions") as batch:
        batch.drop_column("share_key")
    with op.batch_alter_table("engines") as batch:
        batch.drop_column("ui_url")
        batch.drop_column("share_key")
