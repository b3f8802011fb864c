"""the access history: which door and query each audit event came from, and an index that
pages one table's events (reads included) newest first

Columns and an index only, all nullable: the release before writes its events unchanged
(without a door or query) and reads these rows as it did (expand, then contract).

Revision ID: 0016_access_history
Revises: 0015_engine_policies
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0016_access_history"
down_revision = "0015_engine_policies"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.add_column("audit_events", sa.Column("door", sa.String(length=16), nullable=True))
    op.add_column("audit_events", sa.Column("query_id", sa.Integer(), nullable=True))
    op.create_index(op.f("ix_audit_events_target_id"), "audit_events", ["target", "id"])


def downgrade() -> None:
    op.drop_index(op.f("ix_audit_events_target_id"), table_name="audit_events")
    with op.batch_alter_table("audit_events") as batch:
        batch.drop_column("query_id")
        batch.drop_column("door")
