"""what a streaming query's micro-batches cost, taken batch by batch by its engine

A table only: the release before runs on this schema unchanged (expand, then contract).

Revision ID: 0014_stream_costs
Revises: 0013_resource_groups
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0014_stream_costs"
down_revision = "0013_resource_groups"
branch_labels = None
depends_on = None

# As in sparkgate.store.schema_costs when this revision was written (a migration never
# changes with the models).
_COUNTERS = (
    "tasks",
    "executor_run_time_ms",
    "executor_cpu_time_ns",
    "input_bytes",
    "input_records",
    "output_bytes",
    "output_records",
    "shuffle_read_bytes",
    "shuffle_write_bytes",
    "memory_bytes_spilled",
    "disk_bytes_spilled",
    "peak_execution_memory",
)


def upgrade() -> None:
    op.create_table(
        "stream_costs",
        sa.Column("id", sa.Integer(), autoincrement=True, nullable=False),
        sa.Column("statement_id", sa.Integer(), nullable=False),
        sa.Column("stream_query_id", sa.Integer(), nullable=False),
        sa.Column("at", sa.Float(precision=53), nullable=False),
        *(sa.Column(name, sa.BigInteger(), nullable=False) for name in _COUNTERS),
        sa.ForeignKeyConstraint(
            ["statement_id"], ["statements.id"], name="fk_stream_costs_statement_id_statements"
        ),
        sa.PrimaryKeyConstraint("id", name="pk_stream_costs"),
    )
    op.create_index("ix_stream_costs_statement_id", "stream_costs", ["statement_id"], unique=False)
    op.create_index("ix_stream_costs_at", "stream_costs", ["at"], unique=False)


def downgrade() -> None:
    op.drop_index("ix_stream_costs_at", table_name="stream_costs")
    op.drop_index("ix_stream_costs_statement_id", table_name="stream_costs")
    op.drop_table("stream_costs")
