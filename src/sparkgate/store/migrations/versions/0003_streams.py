"""stream jobs, stream queries, their progress and restarts

Revision ID: 0003_streams
Revises: 0002_tables
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects import postgresql

revision = "0003_streams"
down_revision = "0002_tables"
branch_labels = None
depends_on = None

JSON = sa.JSON().with_variant(postgresql.JSONB(), "postgresql")
TIME = sa.Float(precision=53)


def upgrade() -> None:
    op.create_table(
        "stream_jobs",
        sa.Column("id", sa.Integer(), autoincrement=True, nullable=False),
        sa.Column("name", sa.String(length=128), nullable=False),
        sa.Column("state", sa.String(length=16), nullable=False),
        sa.Column("sql", sa.Text(), nullable=False),
        sa.Column("conf", JSON, nullable=False),
        sa.Column("checkpoint_root", sa.Text(), nullable=True),
        sa.Column("revision", sa.Integer(), nullable=False),
        sa.Column("session_id", sa.Integer(), nullable=True),
        sa.Column("failures", sa.Integer(), nullable=False),
        sa.Column("restarts", sa.Integer(), nullable=False),
        sa.Column("next_restart_at", TIME, nullable=True),
        sa.Column("error", JSON, nullable=True),
        sa.Column("version", sa.Integer(), nullable=False),
        sa.Column("created_at", TIME, nullable=False),
        sa.Column("started_at", TIME, nullable=True),
        sa.Column("running_since", TIME, nullable=True),
        sa.Column("finished_at", TIME, nullable=True),
        sa.Column("updated_at", TIME, nullable=False),
        sa.PrimaryKeyConstraint("id", name="pk_stream_jobs"),
        sa.UniqueConstraint("name", name="uq_stream_jobs_name"),
    )
    op.create_index("ix_stream_jobs_state", "stream_jobs", ["state"])

    op.create_table(
        "stream_queries",
        sa.Column("id", sa.Integer(), autoincrement=True, nullable=False),
        sa.Column("job_id", sa.Integer(), nullable=True),
        sa.Column("session_id", sa.Integer(), nullable=False),
        sa.Column("statement_id", sa.Integer(), nullable=True),
        sa.Column("engine_id", sa.Integer(), nullable=True),
        sa.Column("name", sa.String(length=255), nullable=False),
        sa.Column("state", sa.String(length=16), nullable=False),
        sa.Column("spec", JSON, nullable=False),
        sa.Column("checkpoint", sa.Text(), nullable=True),
        sa.Column("spark_id", sa.String(length=64), nullable=True),
        sa.Column("run_id", sa.String(length=64), nullable=True),
        sa.Column("failures", sa.Integer(), nullable=False),
        sa.Column("restarts", sa.Integer(), nullable=False),
        sa.Column("next_restart_at", TIME, nullable=True),
        sa.Column("error", JSON, nullable=True),
        sa.Column("last_progress", JSON, nullable=True),
        sa.Column("progress_at", TIME, nullable=True),
        sa.Column("version", sa.Integer(), nullable=False),
        sa.Column("created_at", TIME, nullable=False),
        sa.Column("started_at", TIME, nullable=True),
        sa.Column("run_started_at", TIME, nullable=True),
        sa.Column("finished_at", TIME, nullable=True),
        sa.Column("updated_at", TIME, nullable=False),
        sa.ForeignKeyConstraint(
            ["job_id"], ["stream_jobs.id"], name="fk_stream_queries_job_id_stream_jobs"
        ),
        sa.PrimaryKeyConstraint("id", name="pk_stream_queries"),
        sa.UniqueConstraint("job_id", "name", name="uq_stream_queries_job_id_name"),
    )
    op.create_index("ix_stream_queries_session_id", "stream_queries", ["session_id"])
    op.create_index("ix_stream_queries_state", "stream_queries", ["state"])

    op.create_table(
        "stream_progress",
        sa.Column("id", sa.Integer(), autoincrement=True, nullable=False),
        sa.Column("query_id", sa.Integer(), nullable=False),
        sa.Column("run_id", sa.String(length=64), nullable=True),
        sa.Column("batch_id", sa.BigInteger(), nullable=False),
        sa.Column("at", TIME, nullable=False),
        sa.Column("input_rows", sa.BigInteger(), nullable=False),
        sa.Column("input_rows_per_second", sa.Float(), nullable=True),
        sa.Column("processed_rows_per_second", sa.Float(), nullable=True),
        sa.Column("batch_duration_ms", sa.BigInteger(), nullable=True),
        sa.Column("watermark", sa.String(length=64), nullable=True),
        sa.Column("state_rows", sa.BigInteger(), nullable=True),
        sa.ForeignKeyConstraint(
            ["query_id"], ["stream_queries.id"], name="fk_stream_progress_query_id_stream_queries"
        ),
        sa.PrimaryKeyConstraint("id", name="pk_stream_progress"),
    )
    op.create_index("ix_stream_progress_query_id_id", "stream_progress", ["query_id", "id"])

    op.create_table(
        "stream_restarts",
        sa.Column("id", sa.Integer(), autoincrement=True, nullable=False),
        sa.Column("job_id", sa.Integer(), nullable=True),
        sa.Column("query_id", sa.Integer(), nullable=True),
        sa.Column("attempt", sa.Integer(), nullable=False),
        sa.Column("failed_at", TIME, nullable=False),
        sa.Column("delay", sa.Float(), nullable=False),
        sa.Column("restart_at", TIME, nullable=False),
        sa.Column("restarted_at", TIME, nullable=True),
        sa.Column("error", JSON, nullable=True),
        sa.ForeignKeyConstraint(
            ["job_id"], ["stream_jobs.id"], name="fk_stream_restarts_job_id_stream_jobs"
        ),
        sa.ForeignKeyConstraint(
            ["query_id"],
            ["stream_queries.id"],
            name="fk_stream_restarts_query_id_stream_queries",
        ),
        sa.PrimaryKeyConstraint("id", name="pk_stream_restarts"),
    )
    op.create_index("ix_stream_restarts_job_id", "stream_restarts", ["job_id"])
    op.create_index("ix_stream_restarts_query_id", "stream_restarts", ["query_id"])


def downgrade() -> None:
    op.drop_table("stream_restarts")
    op.drop_table("stream_progress")
    op.drop_table("stream_queries")
    op.drop_table("stream_jobs")
