"""resource groups and tags: the groups' configuration, each statement's place in a group and
the counts admission reads, and each statement's tags

Tables only: the release before runs on this schema unchanged (expand, then contract). It
never sees a ``queued`` statement unless resource groups are configured.

Revision ID: 0013_resource_groups
Revises: 0012_statement_costs
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0013_resource_groups"
down_revision = "0012_statement_costs"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "resource_groups",
        sa.Column("name", sa.String(255), nullable=False),
        sa.Column("hard_concurrency_limit", sa.Integer(), nullable=False),
        sa.Column("max_queued", sa.Integer(), nullable=False),
        sa.Column("scheduling_policy", sa.String(16), nullable=False),
        sa.Column("scheduling_weight", sa.Integer(), nullable=False),
        sa.Column("admissions", sa.BigInteger(), server_default="0", nullable=False),
        sa.PrimaryKeyConstraint("name", name="pk_resource_groups"),
    )
    op.create_table(
        "group_places",
        sa.Column("statement_id", sa.Integer(), nullable=False),
        sa.Column("session_id", sa.Integer(), nullable=False),
        sa.Column("owner", sa.String(255), nullable=False),
        sa.Column("resource_group", sa.String(255), nullable=False),
        sa.Column("state", sa.String(8), nullable=False),
        sa.Column("held", sa.Boolean(), nullable=False),
        sa.Column("created_at", sa.Float(precision=53), nullable=False),
        sa.ForeignKeyConstraint(
            ["statement_id"], ["statements.id"], name="fk_group_places_statement_id_statements"
        ),
        sa.PrimaryKeyConstraint("statement_id", name="pk_group_places"),
    )
    op.create_index(
        "ix_group_places_state_resource_group_owner_statement_id",
        "group_places",
        ["state", "resource_group", "owner", "statement_id"],
        unique=False,
    )
    op.create_table(
        "group_counts",
        sa.Column("resource_group", sa.String(255), nullable=False),
        sa.Column("owner", sa.String(255), nullable=False),
        sa.Column("admitted", sa.Integer(), nullable=False),
        sa.Column("queued", sa.Integer(), nullable=False),
        sa.Column("oldest_queued", sa.Integer(), nullable=True),
        sa.PrimaryKeyConstraint("resource_group", "owner", name="pk_group_counts"),
    )
    op.create_index(
        "ix_group_places_session_id_state", "group_places", ["session_id", "state"], unique=False
    )
    op.create_table(
        "statement_tags",
        sa.Column("statement_id", sa.Integer(), nullable=False),
        sa.Column("key", sa.String(64), nullable=False),
        sa.Column("value", sa.String(256), nullable=False),
        sa.ForeignKeyConstraint(
            ["statement_id"], ["statements.id"], name="fk_statement_tags_statement_id_statements"
        ),
        sa.PrimaryKeyConstraint("statement_id", "key", name="pk_statement_tags"),
    )
    op.create_index("ix_statement_tags_key_value", "statement_tags", ["key", "value"], unique=False)


def downgrade() -> None:
    op.drop_index("ix_statement_tags_key_value", table_name="statement_tags")
    op.drop_table("statement_tags")
    op.drop_index("ix_group_places_session_id_state", table_name="group_places")
    op.drop_table("group_counts")
    op.drop_index(
        "ix_group_places_state_resource_group_owner_statement_id", table_name="group_places"
    )
    op.drop_table("group_places")
    op.drop_table("resource_groups")
