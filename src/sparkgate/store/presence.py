"""Whether the store's schema has a table (or a table's column) that a later revision added:
an engine of a node pinned to an older revision (``Settings.store_revision``, a rolling
upgrade's old release) records nothing in it until a migration adds it, and asks again now
and then (one catalog read a minute), not on every write.
"""

from __future__ import annotations

import threading
import time

import sqlalchemy as sa

from sparkgate.store.database import Database

# How often a process on a schema without the table asks again whether it came.
RECHECK = 60.0


class TablePresence:
    def __init__(self, db: Database, table: sa.Table, column: str | None = None) -> None:
        self._db = db
        self._name = table.name
        self._column = column
        self._lock = threading.Lock()
        self._present = False
        self._asked_at: float | None = None

    def __call__(self) -> bool:
        with self._lock:
            if self._present:
                return True
            now = time.monotonic()
            if self._asked_at is not None and now - self._asked_at < RECHECK:
                return False
            self._asked_at = now
        with self._db.read() as conn:
            inspector = sa.inspect(conn)
            present = inspector.has_table(self._name) and (
                self._column is None
                or any(c["name"] == self._column for c in inspector.get_columns(self._name))
            )
        with self._lock:
            self._present = self._present or present
            return present
