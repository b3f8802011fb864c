"""Running the Alembic migrations from code, serialised across server nodes."""

from __future__ import annotations

from pathlib import Path

import sqlalchemy as sa
from alembic import command
from alembic.config import Config
from alembic.runtime.migration import MigrationContext
from alembic.script import ScriptDirectory

from sparkgate.store.database import Database, writing

_MIGRATIONS = Path(__file__).parent / "migrations"
# Any fixed number: the PostgreSQL advisory lock that keeps two nodes from migrating at once.
_PG_MIGRATION_LOCK = 0x5FA6_6A7E


def alembic_config(db: Database) -> Config:
    config = Config()
    config.set_main_option("script_location", str(_MIGRATIONS))
    config.set_main_option("sqlalchemy.url", db.url.replace("%", "%%"))
    return config


def migrate(db: Database, revision: str = "head") -> None:
    config = alembic_config(db)
    # Write mode: on SQLite the IMMEDIATE transaction is the lock between nodes.
    with writing(db.engine) as conn:
        if db.dialect == "postgresql":
            conn.execute(sa.text("SELECT pg_advisory_lock(:k)"), {"k": _PG_MIGRATION_LOCK})
            conn.commit()
        try:
            config.attributes["connection"] = conn
            if revision == "head" or not _reached(config, conn, revision):
                command.upgrade(config, revision)
            conn.commit()
        finally:
            if db.dialect == "postgresql":
                conn.execute(sa.text("SELECT pg_advisory_unlock(:k)"), {"k": _PG_MIGRATION_LOCK})
                conn.commit()


def _reached(config: Config, conn: sa.Connection, revision: str) -> bool:
    """True if the store is at ``revision`` or past it (a node pinned to an older revision
    starting after another node upgraded: it runs on the newer schema, it never downgrades)."""
    current = MigrationContext.configure(conn).get_current_revision()
    if current is None:
        return False
    script = ScriptDirectory.from_config(config)
    return any(r.revision == revision for r in script.iterate_revisions(current, "base"))
