"""fetch cursor: rows a HiveServer2 client has fetched from a statement's result

Revision ID: 0006_fetch_cursor
Revises: 0005_users
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0006_fetch_cursor"
down_revision = "0005_users"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.add_column(
        "statements", sa.Column("fetched", sa.Integer(), nullable=False, server_default="0")
    )


def downgrade() -> None:
    with op.batch_alter_table("statements") as batch:
        batch.drop_column("fetched")
