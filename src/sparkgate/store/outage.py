"""Telling a store that cannot be reached from a store that refused a write.

The first passes (the database restarts, the network comes back): callers answer 503, retry,
and must not judge anyone by the heartbeats it kept from being written. The second is final:
retrying the same write gets the same refusal."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

import sqlalchemy as sa

from sparkgate.errors import StoreUnavailable

# SQLite's "cannot reach" is a lock held too long or a file that cannot be opened; its other
# OperationalErrors (no such table, syntax) are refusals.
_SQLITE_TRANSIENT = ("database is locked", "unable to open", "disk i/o error")


def is_unreachable(exc: BaseException) -> bool:
    """True if ``exc`` (or what caused it) says the store could not be reached."""
    seen: set[int] = set()
    current: BaseException | None = exc
    while current is not None and id(current) not in seen:
        seen.add(id(current))
        if isinstance(current, StoreUnavailable | sa.exc.TimeoutError):
            return True
        if isinstance(current, sa.exc.DBAPIError):
            if current.connection_invalidated:
                return True
            if isinstance(current, sa.exc.OperationalError | sa.exc.InterfaceError):
                module = type(current.orig).__module__ if current.orig is not None else ""
                if not module.startswith("sqlite3"):
                    return True
                return any(t in str(current.orig).lower() for t in _SQLITE_TRANSIENT)
        current = current.__cause__ or current.__context__
    return False


@contextmanager
def unavailable_as_error() -> Iterator[None]:
    """Raise :class:`StoreUnavailable` for an unreachable store, with the cause attached."""
    try:
        yield
    except sa.exc.SQLAlchemyError as exc:
        if is_unreachable(exc):
            raise StoreUnavailable(
                "The store (sparkgate's database) cannot be reached right now; nothing was "
                "changed. Retry in a few seconds.",
            ) from exc
        raise
