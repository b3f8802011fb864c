"""what each statement's Spark tasks cost, as its engine summed them when it ended

A table only: the release before runs on this schema unchanged (expand, then contract).

Revision ID: 0012_statement_costs
Revises: 0011_statement_tables
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0012_statement_costs"
down_revision = "0011_statement_tables"
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
        "statement_costs",
        sa.Column("statement_id", sa.Integer(), nullable=False),
        sa.Column("at", sa.Float(precision=53), nullable=False),
        *(sa.Column(name, sa.BigInteger(), nullable=False) for name in _COUNTERS),
        sa.ForeignKeyConstraint(
            ["statement_id"],
            ["statements.id"],
            name="fk_statement_costs_statement_id_statements",
        ),
        sa.PrimaryKeyConstraint("statement_id", name="pk_statement_costs"),
    )
    op.create_index("ix_statement_costs_at", "statement_costs", ["at"], unique=False)


def downgrade() -> None:
    op.drop_index("ix_statement_costs_at", table_name="statement_costs")
    op.drop_table("statement_costs")
