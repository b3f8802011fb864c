"""The migrations build exactly the schema the code declares, on every backend."""

from __future__ import annotations

from alembic.autogenerate import compare_metadata
from alembic.migration import MigrationContext
from alembic.script import ScriptDirectory

from sparkgate.store import Store
from sparkgate.store.migrate import alembic_config
from sparkgate.store.schema import metadata


def test_migrated_schema_matches_the_models(store: Store) -> None:
    with store.db.engine.connect() as conn:
        differences = compare_metadata(MigrationContext.configure(conn), metadata)
    assert differences == [], "schema.py changed without a migration (or the reverse)"


def test_migrations_form_one_line(store: Store) -> None:
    scripts = ScriptDirectory.from_config(alembic_config(store.db))
    assert len(scripts.get_heads()) == 1, "two migrations claim the same parent"
