"""A node pinned to an older schema revision (a rolling upgrade's old release)."""

from __future__ import annotations

import importlib
from pathlib import Path
from typing import Any

import pytest
import sqlalchemy as sa

from sparkgate.store import Store

# The module, not the function that sparkgate.store exports under the same name.
migrate_module = importlib.import_module("sparkgate.store.migrate")


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
        assert _revision(store) == "0019_result_reuse"
        store.migrate("0006_fetch_cursor")  # the old release restarts on the newer schema
        assert _revision(store) == "0019_result_reuse"
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


class _Deadlock(Exception):
    sqlstate = "40P01"  # what psycopg's DeadlockDetected carries


def test_a_migration_chosen_to_break_a_deadlock_runs_again(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """PostgreSQL breaks a deadlock between a node's migration and the writes of nodes and
    engines still on the schema before by rolling the migration back (the chaos suite met it);
    the migration, transactional, runs again. Another error is not retried."""
    real = migrate_module.command.upgrade
    calls: list[str] = []

    def upgrade(config: Any, revision: str) -> None:
        calls.append(revision)
        if len(calls) == 1:
            raise sa.exc.OperationalError("CREATE TABLE ...", {}, _Deadlock())
        real(config, revision)

    monkeypatch.setattr(migrate_module, "_BACKOFF", 0.0)
    monkeypatch.setattr(migrate_module.command, "upgrade", upgrade)
    store = Store.open(f"sqlite:///{tmp_path / 'store.db'}")
    try:
        store.migrate()
        assert calls == ["head", "head"]
        assert _revision(store) == "0019_result_reuse"

        def broken(config: Any, revision: str) -> None:
            raise sa.exc.OperationalError("CREATE TABLE ...", {}, ValueError("no"))

        monkeypatch.setattr(migrate_module.command, "upgrade", broken)
        with pytest.raises(sa.exc.OperationalError):
            store.migrate()
    finally:
        store.close()
