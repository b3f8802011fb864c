"""keyset indexes: lists filtered by state, session or owner read their page in id order

Each list pages by id (``WHERE id < :after ORDER BY id DESC LIMIT n``): with the filter's
column followed by ``id`` in one index, a page is read in index order, without sorting every
matching row first. ``(state, id)`` replaces ``(state)``, which it serves too.

Revision ID: 0007_keyset_indexes
Revises: 0006_fetch_cursor
"""

from __future__ import annotations

from alembic import op

revision = "0007_keyset_indexes"
down_revision = "0006_fetch_cursor"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.drop_index("ix_statements_state", table_name="statements")
    op.create_index("ix_statements_state_id", "statements", ["state", "id"])
    op.create_index("ix_statements_session_id_id", "statements", ["session_id", "id"])
    op.drop_index("ix_sessions_state", table_name="sessions")
    op.create_index("ix_sessions_state_id", "sessions", ["state", "id"])
    op.create_index("ix_sessions_owner_id", "sessions", ["owner", "id"])


def downgrade() -> None:
    op.drop_index("ix_sessions_owner_id", table_name="sessions")
    op.drop_index("ix_sessions_state_id", table_name="sessions")
    op.create_index("ix_sessions_state", "sessions", ["state"])
    op.drop_index("ix_statements_session_id_id", table_name="statements")
    op.drop_index("ix_statements_state_id", table_name="statements")
    op.create_index("ix_statements_state", "statements", ["state"])
