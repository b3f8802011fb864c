"""data access control: table owners and grants

Tables only: the release before runs on this schema unchanged (expand, then contract).

Revision ID: 0010_table_access
Revises: 0009_idempotency
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0010_table_access"
down_revision = "0009_idempotency"
branch_labels = None
depends_on = None


def _name_columns() -> list[sa.Column[str]]:
    return [
        sa.Column("catalog", sa.String(length=255), nullable=False),
        sa.Column("schema_name", sa.String(length=255), nullable=False),
        sa.Column("table_name", sa.String(length=255), nullable=False),
    ]


def upgrade() -> None:
    op.create_table(
        "table_owners",
        *_name_columns(),
        sa.Column("owner", sa.String(length=255), nullable=False),
        sa.Column("created_at", sa.Float(precision=53), nullable=False),
        sa.PrimaryKeyConstraint("catalog", "schema_name", "table_name", name="pk_table_owners"),
    )
    op.create_table(
        "table_grants",
        *_name_columns(),
        sa.Column("grantee_kind", sa.String(length=16), nullable=False),
        sa.Column("grantee", sa.String(length=255), nullable=False),
        sa.Column("privilege", sa.String(length=32), nullable=False),
        sa.Column("granted_by", sa.String(length=255), nullable=False),
        sa.Column("granted_at", sa.Float(precision=53), nullable=False),
        sa.PrimaryKeyConstraint(
            "catalog",
            "schema_name",
            "table_name",
            "grantee_kind",
            "grantee",
            "privilege",
            name="pk_table_grants",
        ),
    )


def downgrade() -> None:
    op.drop_table("table_grants")
    op.drop_table("table_owners")
