"""the access policy each engine was launched to enforce

A table only: the release before runs on this schema unchanged (expand, then contract). Its
engines have no row here; a node of this release treats them as it did before.

Revision ID: 0015_engine_policies
Revises: 0014_stream_costs
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0015_engine_policies"
down_revision = "0014_stream_costs"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "engine_policies",
        sa.Column("engine_id", sa.Integer(), nullable=False),
        sa.Column("policy", sa.String(length=64), nullable=False),
        sa.ForeignKeyConstraint(
            ["engine_id"], ["engines.id"], name="fk_engine_policies_engine_id_engines"
        ),
        sa.PrimaryKeyConstraint("engine_id", name="pk_engine_policies"),
    )


def downgrade() -> None:
    op.drop_table("engine_policies")
