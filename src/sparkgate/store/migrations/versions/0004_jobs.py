"""jobs, their versions, deployments and their decisions, batch job runs; stream job steps

Revision ID: 0004_jobs
Revises: 0003_streams
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects import postgresql

revision = "0004_jobs"
down_revision = "0003_streams"
branch_labels = None
depends_on = None

JSON = sa.JSON().with_variant(postgresql.JSONB(), "postgresql")
TIME = sa.Float(precision=53)


def upgrade() -> None:
    op.add_column("stream_jobs", sa.Column("steps", JSON, nullable=True))

    op.create_table(
        "jobs",
        sa.Column("id", sa.Integer(), autoincrement=True, nullable=False),
        sa.Column("name", sa.String(length=128), nullable=False),
        sa.Column("mode", sa.String(length=16), nullable=False),
        sa.Column("version", sa.Integer(), nullable=False),
        sa.Column("manifest", JSON, nullable=False),
        sa.Column("steps", JSON, nullable=False),
        sa.Column("query_fingerprint", sa.String(length=64), nullable=False),
        sa.Column("config_fingerprint", sa.String(length=64), nullable=False),
        sa.Column("supervision_fingerprint", sa.String(length=64), nullable=False),
        sa.Column("query_id", sa.String(length=36), nullable=False),
        sa.Column("query_created_at", TIME, nullable=False),
        sa.Column("started_before", sa.Boolean(), nullable=False),
        sa.Column("removed", sa.Boolean(), nullable=False),
        sa.Column("created_at", TIME, nullable=False),
        sa.Column("updated_at", TIME, nullable=False),
        sa.PrimaryKeyConstraint("id", name="pk_jobs"),
        sa.UniqueConstraint("name", name="uq_jobs_name"),
    )

    op.create_table(
        "job_versions",
        sa.Column("id", sa.Integer(), autoincrement=True, nullable=False),
        sa.Column("name", sa.String(length=128), nullable=False),
        sa.Column("version", sa.Integer(), nullable=False),
        sa.Column("manifest", JSON, nullable=False),
        sa.Column("query_id", sa.String(length=36), nullable=False),
        sa.Column("created_at", TIME, nullable=False),
        sa.PrimaryKeyConstraint("id", name="pk_job_versions"),
        sa.UniqueConstraint("name", "version", name="uq_job_versions_name_version"),
    )

    op.create_table(
        "deployments",
        sa.Column("id", sa.Integer(), autoincrement=True, nullable=False),
        sa.Column("state", sa.String(length=16), nullable=False),
        sa.Column("plan_only", sa.Boolean(), nullable=False),
        sa.Column("prune", sa.Boolean(), nullable=False),
        sa.Column("node_id", sa.String(length=255), nullable=True),
        sa.Column("lease_owner", sa.String(length=255), nullable=True),
        sa.Column("files", JSON, nullable=False),
        sa.Column("error", JSON, nullable=True),
        sa.Column("version", sa.Integer(), nullable=False),
        sa.Column("created_at", TIME, nullable=False),
        sa.Column("finished_at", TIME, nullable=True),
        sa.Column("updated_at", TIME, nullable=False),
        sa.PrimaryKeyConstraint("id", name="pk_deployments"),
    )
    op.create_index("ix_deployments_state", "deployments", ["state"])

    op.create_table(
        "job_decisions",
        sa.Column("id", sa.Integer(), autoincrement=True, nullable=False),
        sa.Column("deployment_id", sa.Integer(), nullable=False),
        sa.Column("seq", sa.Integer(), nullable=False),
        sa.Column("job", sa.String(length=128), nullable=False),
        sa.Column("from_version", sa.Integer(), nullable=True),
        sa.Column("to_version", sa.Integer(), nullable=True),
        sa.Column("action", sa.String(length=32), nullable=False),
        sa.Column("reason", sa.Text(), nullable=False),
        sa.Column("outcome", sa.String(length=16), nullable=False),
        sa.Column("note", sa.Text(), nullable=True),
        sa.Column("error", JSON, nullable=True),
        sa.Column("started_at", TIME, nullable=True),
        sa.Column("finished_at", TIME, nullable=True),
        sa.ForeignKeyConstraint(
            ["deployment_id"],
            ["deployments.id"],
            name="fk_job_decisions_deployment_id_deployments",
        ),
        sa.PrimaryKeyConstraint("id", name="pk_job_decisions"),
        sa.UniqueConstraint("deployment_id", "seq", name="uq_job_decisions_deployment_id_seq"),
    )
    op.create_index("ix_job_decisions_job", "job_decisions", ["job"])

    op.create_table(
        "job_runs",
        sa.Column("id", sa.Integer(), autoincrement=True, nullable=False),
        sa.Column("job", sa.String(length=128), nullable=False),
        sa.Column("job_version", sa.Integer(), nullable=False),
        sa.Column("state", sa.String(length=16), nullable=False),
        sa.Column("session_id", sa.Integer(), nullable=True),
        sa.Column("steps", JSON, nullable=False),
        sa.Column("step", sa.Integer(), nullable=False),
        sa.Column("statement_id", sa.Integer(), nullable=True),
        sa.Column("error", JSON, nullable=True),
        sa.Column("version", sa.Integer(), nullable=False),
        sa.Column("created_at", TIME, nullable=False),
        sa.Column("finished_at", TIME, nullable=True),
        sa.Column("updated_at", TIME, nullable=False),
        sa.PrimaryKeyConstraint("id", name="pk_job_runs"),
    )
    op.create_index("ix_job_runs_job", "job_runs", ["job"])
    op.create_index("ix_job_runs_state", "job_runs", ["state"])


def downgrade() -> None:
    op.drop_table("job_runs")
    op.drop_table("job_decisions")
    op.drop_table("deployments")
    op.drop_table("job_versions")
    op.drop_table("jobs")
    op.drop_column("stream_jobs", "steps")
