"""The audit log: who did what, when, from where, and how it went."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import sqlalchemy as sa
from sqlalchemy.engine import Connection

from sparkgate.store.database import Database
from sparkgate.store.pages import read_page
from sparkgate.store.records import FIRST_PAGE, Page, Window
from sparkgate.store.schema import audit_events

# Built once, its values bound at execution: every statement submitted writes an event, and
# an insert built with its values per call spent more CPU on SQLAlchemy's cache key for
# those values than SQLite spent writing the row.
_ADD = audit_events.insert()


@dataclass(frozen=True)
class AuditRecord:
    id: int
    at: float
    user: str | None
    address: str | None
    action: str
    target: str | None
    outcome: str
    detail: dict[str, Any] | None


class AuditLog:
    def __init__(self, db: Database) -> None:
        self._db = db

    def add(
        self,
        action: str,
        outcome: str,
        *,
        now: float,
        user: str | None,
        address: str | None = None,
        target: str | None = None,
        detail: dict[str, Any] | None = None,
        conn: Connection | None = None,
    ) -> None:
        """With ``conn``, in the caller's transaction: the event commits with what it tells."""
        values = {
            "at": now,
            "user": user,
            "address": address,
            "action": action,
            "target": target,
            "outcome": outcome,
            "detail": detail,
        }
        with self._db.within(conn) as c:
            c.execute(_ADD, values)

    def list_page(
        self,
        *,
        user: str | None = None,
        action: str | None = None,
        outcome: str | None = None,
        since: float | None = None,
        obj: str | None = None,
        window: Window = FIRST_PAGE,
    ) -> Page[AuditRecord]:
        """Events, newest first; ``action`` matches a prefix (``session`` finds session.*);
        ``obj``: the events about one table or view (``hr.salaries``).

        ``window``: which page; its ``after`` pages by keyset, the events older than that id
        (the page's ``next_after`` is the one to pass next); ``count=False`` leaves ``total``
        None.
        """
        where: list[sa.ColumnElement[bool]] = []
        if user is not None:
            where.append(audit_events.c.user == user)
        if action is not None:
            where.append(
                sa.or_(audit_events.c.action == action, audit_events.c.action.like(f"{action}.%"))
            )
        if outcome is not None:
            where.append(audit_events.c.outcome == outcome)
        if since is not None:
            where.append(audit_events.c.at >= since)
        if obj is not None:
            # A table named whole (spark_catalog.hr.salaries) or without its catalog.
            name = obj.strip().lower()
            where.append(
                sa.or_(
                    audit_events.c.target == f"table:{name}",
                    audit_events.c.target == f"table:spark_catalog.{name}",
                )
            )
        return read_page(
            self._db,
            sa.select(audit_events).where(*where),
            sa.select(sa.func.count()).select_from(audit_events).where(*where),
            make=lambda row: AuditRecord(**row),
            by=audit_events.c.id,
            descending=True,
            window=window,
        )
