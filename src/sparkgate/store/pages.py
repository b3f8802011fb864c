"""Reading one page of a list: the rows of the page, whether more follow, and (if asked) the
count of every matching row. Shared by every store list (sessions, statements, stream jobs,
deployments, audit events)."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any, TypeVar

import sqlalchemy as sa

from sparkgate.store.database import Database
from sparkgate.store.records import Page, Window

T = TypeVar("T")


def read_page(
    db: Database,
    query: sa.Select[Any],
    counting: sa.Select[Any],
    *,
    make: Callable[[Mapping[Any, Any]], T],
    key: Callable[[T], int | str],
    window: Window,
) -> Page[T]:
    """``query`` ordered and filtered (keyset included), ``counting`` its count; the page has
    ``next_after`` (``key`` of its last item) when one more row than ``limit`` was there."""
    offset, limit = window.offset, window.limit
    with db.read() as conn:
        total = conn.execute(counting).scalar_one() if window.count else None
        rows = conn.execute(query.offset(offset).limit(limit + 1)).mappings().all()
    items = [make(row) for row in rows[:limit]]
    more = len(rows) > limit and bool(items)
    return Page(items, total, offset, limit, key(items[-1]) if more else None)
