"""A node pinned to an older schema revision (a rolling upgrade's old release)."""

from __future__ import annotations

from pathlib import Path

import sqlalchemy as sa

from sparkgate.store import Store


def _revision(store: Store) -> str:
    with store.db.engine.connect() as conn:
        return str(conn.execute(sa.text("SELECT version_num FROM alembic_version")).scalar_one())


def test_a_pinned_node_upgrades_to_its_revision_and_never_downgrades(tmp_path: Path) -> None:
    store = Store.open(f"sqlite:///{tmp_path / 'store.db'}")
    try:
        store.migrate("0006_fetch_cursor")
        assert _revision(store) == "0006_fetch_cursor"
        store.migrate("0006_fetch_cursor")  # the same node again: nothing to do
        store.migrate()  # the new release upgrades
        assert _revision(store) == "0011_statement_tables"
        store.migrate("0006_fetch_cursor")  # the old release restarts on the newer schema
        assert _revision(store) == "0011_statement_tables"
    finally:
        store.close()


def test_a_node_on_a_schema_before_idempotency_keys_sees_none(tmp_path: Path) -> None:
    """The chaos rig's old release (a node pinned to 0007) runs without the keys' table: its
    service ignores Idempotency-Keys (service/idempotency.py) instead of failing on it."""
    store = Store.open(f"sqlite:///{tmp_path / 'store.db'}")
    try:
        store.migrate("0008_connect")
        assert not store.idempotency.available()
        store.migrate()
        assert store.idempotency.available()
    finally:
        store.close()
