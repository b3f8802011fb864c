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
    by: sa.ColumnElement[Any],
    descending: bool = False,
    window: Window,
) -> Page[T]:
    """The ``window`` of ``query`` (filtered, not ordered), ``counting`` its count, each row
    made an item by ``make``: ordered by the column ``by``, each list's keyset, and
    ``window.after`` reads only what comes past that value, in that order. The page has
    ``next_after`` (its last row's ``by``) when one more row than ``limit`` was there."""
    offset, limit, after = window.offset, window.limit, window.after
    if after is not None:
        query = query.where(by < after if descending else by > after)
    query = query.order_by(by.desc() if descending else by)
    with db.read() as conn:
        total = conn.execute(counting).scalar_one() if window.count else None
        rows = conn.execute(query.offset(offset).limit(limit + 1)).mappings().all()
    items = [make(row) for row in rows[:limit]]
    more = len(rows) > limit and bool(items)
    return Page(items, total, offset, limit, rows[limit - 1][by] if more else None)
