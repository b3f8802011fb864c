"""The connection to the state store: SQLite (embedded default) or PostgreSQL, picked by URL.

The differences between the two are kept here and are small:
- SQLite runs in WAL mode with a busy timeout, and write transactions begin IMMEDIATE, so that
  two processes never both read under a shared lock and then deadlock upgrading to write.
  Read transactions begin DEFERRED and never block writers.
- PostgreSQL runs at READ COMMITTED; compare-and-set updates re-check their WHERE clause after
  waiting on a row lock, which is exactly the guard transitions need.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, contextmanager, nullcontext
from pathlib import Path
from typing import Any

import sqlalchemy as sa
from sqlalchemy import event
from sqlalchemy.engine import Connection, Engine
from sqlalchemy.pool import NullPool

_SQLITE_BUSY_TIMEOUT_MS = 30_000


# Told the mode ("read" or "write") and seconds of every transaction this object runs.
TransactionObserver = Callable[[str, float], None]


class Database:
    def __init__(self, url: str, *, pool_size: int = 10) -> None:
        self.url = url
        self.engine = _create_engine(url, pool_size=pool_size)
        # Set by a server node to time its transactions (its /metrics); engines leave it unset.
        self.observe: TransactionObserver | None = None

    @property
    def dialect(self) -> str:
        return self.engine.dialect.name

    @property
    def is_sqlite(self) -> bool:
        return self.dialect == "sqlite"

    @contextmanager
    def begin(self) -> Iterator[Connection]:
        """A write transaction (IMMEDIATE on SQLite), committed on success."""
        started = time.perf_counter()
        try:
            with (
                self.engine.connect().execution_options(sparkgate_write=True) as conn,
                conn.begin(),
            ):
                yield conn
        finally:
            self._timed("write", started)

    def within(self, conn: Connection | None) -> AbstractContextManager[Connection]:
        """The caller's transaction when given one, else a write transaction of our own."""
        return nullcontext(conn) if conn is not None else self.begin()

    @contextmanager
    def read(self) -> Iterator[Connection]:
        """A read-only transaction; it never blocks writers."""
        started = time.perf_counter()
        try:
            with self.engine.connect() as conn, conn.begin():
                yield conn
        finally:
            self._timed("read", started)

    def _timed(self, mode: str, started: float) -> None:
        # Whole transactions, waits for a connection or a lock included: what callers feel.
        if self.observe is not None:
            self.observe(mode, time.perf_counter() - started)

    def dispose(self) -> None:
        self.engine.dispose()


def _create_engine(url: str, *, pool_size: int) -> Engine:
    parsed = sa.engine.make_url(url)
    if parsed.get_backend_name() == "sqlite":
        database = parsed.database
        if database and database != ":memory:":
            Path(database).parent.mkdir(parents=True, exist_ok=True)
        engine = sa.create_engine(
            url,
            # Each thread gets its own connection; SQLite connections are cheap and this avoids
            # sharing one across threads, which pysqlite forbids by default.
            poolclass=NullPool if database in (None, "", ":memory:") else None,
            connect_args={"timeout": _SQLITE_BUSY_TIMEOUT_MS / 1000, "check_same_thread": False},
        )
        _install_sqlite_hooks(engine)
        return engine
    kwargs: dict[str, Any] = {
        "pool_size": pool_size,
        "max_overflow": pool_size,
        "pool_pre_ping": True,
    }
    return sa.create_engine(url, **kwargs)


def _install_sqlite_hooks(engine: Engine) -> None:
    @event.listens_for(engine, "connect")
    def _on_connect(dbapi_connection: Any, _record: Any) -> None:
        # Take transaction control away from pysqlite so BEGIN is ours to emit.
        dbapi_connection.isolation_level = None
        cursor = dbapi_connection.cursor()
        cursor.execute("PRAGMA journal_mode=WAL")
        cursor.execute(f"PRAGMA busy_timeout={_SQLITE_BUSY_TIMEOUT_MS}")
        # NORMAL is durable across process crashes in WAL mode; only power loss may drop the
        # last commits, which is the trade every embedded store makes.
        cursor.execute("PRAGMA synchronous=NORMAL")
        cursor.execute("PRAGMA foreign_keys=ON")
        cursor.close()

    @event.listens_for(engine, "begin")
    def _on_begin(conn: Connection) -> None:
        if conn.get_execution_options().get("sparkgate_write"):
            conn.exec_driver_sql("BEGIN IMMEDIATE")
        else:
            conn.exec_driver_sql("BEGIN")
