"""The connection to the state store: SQLite (embedded default) or PostgreSQL, picked by URL.

The differences between the two are kept here and are small:
- SQLite runs in WAL mode with a busy timeout, and write transactions begin IMMEDIATE, so that
  two processes never both read under a shared lock and then deadlock upgrading to write.
  Read transactions begin DEFERRED and never block writers.
- PostgreSQL runs at READ COMMITTED; compare-and-set updates re-check their WHERE clause after
  waiting on a row lock, which is exactly the guard transitions need.
"""

from __future__ import annotations

import os
import sys
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, contextmanager, nullcontext
from pathlib import Path
from typing import Any

import sqlalchemy as sa
from sqlalchemy import event
from sqlalchemy.engine import Connection, Engine
from sqlalchemy.pool import NullPool

from sparkgate.store import hints as hints_module
from sparkgate.store.outage import unavailable_as_error

_SQLITE_BUSY_TIMEOUT_MS = 30_000


# Told the mode ("read" or "write") and seconds of every transaction this object runs.
TransactionObserver = Callable[[str, float], None]


# Hints queued by a write transaction, sent once it commits (SQLite's delivery).
_PENDING_HINTS = "sparkgate_pending_hints"
# How a SQLite connection's next transaction begins (its pool record's info; see writing).
_BEGIN_WITH = "sparkgate_begin_with"


class Database:
    def __init__(self, url: str, *, pool_size: int = 10, hints: bool = True) -> None:
        self.url = url
        self.engine = _create_engine(url, pool_size=pool_size)
        # Set by a server node to time its transactions (its /metrics); engines leave it unset.
        self.observe: TransactionObserver | None = None
        self.hints = hints_module.for_url(url) if hints else hints_module.Hints()
        self._notify_sql = self.hints.notify_sql()
        self._trace = _Trace.from_env(self.engine)

    def hint(self, conn: Connection, channel: str, payload: object = "") -> None:
        """Wake whoever listens on ``channel`` once this write transaction commits."""
        if self._notify_sql is not None:
            # PostgreSQL queues the NOTIFY in the transaction and delivers it at commit.
            conn.execute(sa.text(self._notify_sql), {"channel": channel, "payload": str(payload)})
        else:
            conn.info.setdefault(_PENDING_HINTS, set()).add((channel, str(payload)))

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
        pending: set[tuple[str, str]] | None = None
        try:
            with unavailable_as_error(), writing(self.engine) as conn:
                try:
                    with conn.begin():
                        yield conn
                finally:
                    # The info dict outlives this checkout: never leave hints in it.
                    pending = conn.info.pop(_PENDING_HINTS, None)
            if pending:
                self.hints.send(pending)  # committed: now the receivers will see it
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
            with unavailable_as_error(), self.engine.connect() as conn, conn.begin():
                yield conn
        finally:
            self._timed("read", started)

    def _timed(self, mode: str, started: float) -> None:
        # Whole transactions, waits for a connection or a lock included: what callers feel.
        if self.observe is not None:
            self.observe(mode, time.perf_counter() - started)
        if self._trace is not None:
            self._trace.transaction(mode)

    def dispose(self) -> None:
        self.hints.close()
        self.engine.dispose()


class _Trace:
    """Counts store round trips when ``SPARKGATE_STORE_TRACE`` names a directory (benchmarks):
    a line per transaction, ``mode<TAB>caller<TAB>statements``, in ``<dir>/<pid>.trace``,
    where the caller is the first function outside the store that asked for it."""

    def __init__(self, directory: str, engine: Engine) -> None:
        os.makedirs(directory, exist_ok=True)
        self._file = open(os.path.join(directory, f"{os.getpid()}.trace"), "a", buffering=1)  # noqa: SIM115
        self._lock = threading.Lock()
        self._local = threading.local()  # statements run by this thread's open transaction

        @event.listens_for(engine, "before_cursor_execute")
        def _count(*_args: Any) -> None:
            self._local.statements = getattr(self._local, "statements", 0) + 1

    @classmethod
    def from_env(cls, engine: Engine) -> _Trace | None:
        directory = os.environ.get("SPARKGATE_STORE_TRACE")
        return cls(directory, engine) if directory else None

    def transaction(self, mode: str) -> None:
        frame = sys._getframe(2)
        while frame.f_back is not None and (
            "/sparkgate/store/" in frame.f_code.co_filename
            or frame.f_code.co_filename.endswith("contextlib.py")
        ):
            frame = frame.f_back
        module = frame.f_globals.get("__name__", "?")
        line = f"{mode}\t{module}.{frame.f_code.co_name}\t{getattr(self._local, 'statements', 0)}\n"
        self._local.statements = 0
        with self._lock:
            self._file.write(line)


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

    # pysqlite leaves transactions to us (isolation_level None above): BEGIN is ours to emit,
    # IMMEDIATE on a connection checked out to write (``writing``). It is sent on the
    # driver's own connection by the dialect's do_begin, not by a "begin" event listener
    # through SQLAlchemy's execution path: any engine event listener makes every statement
    # look its events up, and the two were half the CPU of a one-row write transaction
    # (a page's cursor move: 300 to 150 us on a thread that woke for it). A failed BEGIN
    # (the database locked past the busy timeout) is still raised as SQLAlchemy's error.
    def _do_begin(dbapi_connection: Any) -> None:
        dbapi_connection.driver_connection.execute(dbapi_connection.info.get(_BEGIN_WITH, "BEGIN"))

    engine.dialect.do_begin = _do_begin  # type: ignore[method-assign]


@contextmanager
def writing(engine: Engine) -> Iterator[Connection]:
    """A connection whose transactions begin IMMEDIATE on SQLite, so that two processes never
    both read under a shared lock and then deadlock upgrading to write (elsewhere: as usual)."""
    with engine.connect() as conn:
        checked_out = conn.connection  # the pool's hold on the driver's connection
        checked_out.info[_BEGIN_WITH] = "BEGIN IMMEDIATE"
        try:
            yield conn
        finally:
            checked_out.info.pop(_BEGIN_WITH, None)
