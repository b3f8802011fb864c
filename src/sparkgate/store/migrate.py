"""Running the Alembic migrations from code, serialised across server nodes."""

from __future__ import annotations

import logging
import time
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
_TRIES = 5
_BACKOFF = 0.5  # seconds, times the try

log = logging.getLogger("sparkgate.store")


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
            for attempt in range(1, _TRIES + 1):
                try:
                    if revision == "head" or not _reached(config, conn, revision):
                        command.upgrade(config, revision)
                    conn.commit()
                    break
                except sa.exc.DBAPIError as exc:
                    conn.rollback()  # PostgreSQL's DDL is transactional: nothing of it stays
                    if not _deadlocked(exc) or attempt == _TRIES:
                        raise
                    log.warning("migrating the store deadlocked (try %d); again", attempt)
                    time.sleep(_BACKOFF * attempt)
        finally:
            if db.dialect == "postgresql":
                conn.execute(sa.text("SELECT pg_advisory_unlock(:k)"), {"k": _PG_MIGRATION_LOCK})
                conn.commit()


def _deadlocked(exc: sa.exc.DBAPIError) -> bool:
    # 40P01: PostgreSQL chose this transaction to break a deadlock. The other nodes and the
    # engines (on the schema before) write while a node migrates, and a migration's DDL takes
    # table locks in its own order: rolled back whole, it can simply run again.
    return getattr(exc.orig, "sqlstate", None) == "40P01"


def _reached(config: Config, conn: sa.Connection, revision: str) -> bool:
    """True if the store is at ``revision`` or past it (a node pinned to an older revision
    starting after another node upgraded: it runs on the newer schema, it never downgrades)."""
    current = MigrationContext.configure(conn).get_current_revision()
    if current is None:
        return False
    script = ScriptDirectory.from_config(config)
    return any(r.revision == revision for r in script.iterate_revisions(current, "base"))
