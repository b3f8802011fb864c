"""The audit log: who did what, when, from where, and how it went; with the access history,
the events of each use of a table or view by a statement (``table.select``, ``table.insert``,
...: its user, door, query, and the columns read, masks and filter applied), written by the
engine with the statement's end."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import sqlalchemy as sa
from sqlalchemy.engine import Connection

from sparkgate.store.database import Database
from sparkgate.store.pages import read_page
from sparkgate.store.presence import TablePresence
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
    door: str | None = None
    query_id: int | None = None


@dataclass(frozen=True)
class TableUseEvent:
    """One use of a privilege on a table or view by a statement: what the access history
    keeps (``action`` ``table.<privilege>``, target ``table:<name>``)."""

    user: str | None
    door: str
    query_id: int
    object: str  # catalog.schema.table, lower-case
    privilege: str  # SELECT, INSERT, DELETE, UPDATE, OWNERSHIP, CREATE
    allowed: bool
    columns: tuple[str, ...] | None = None  # read, where the plan says them
    masked: tuple[str, ...] = ()
    filtered: bool = False

    @classmethod
    def of_row(cls, row: Mapping[Any, Any]) -> TableUseEvent:
        detail = row["detail"] or {}
        columns = detail.get("columns")
        return cls(
            user=row["user"],
            door=row["door"],
            query_id=row["query_id"],
            object=str(row["target"]).removeprefix("table:"),
            privilege=detail.get("privilege") or str(row["action"]).removeprefix("table.").upper(),
            allowed=row["outcome"] == "ok",
            columns=None if columns is None else tuple(columns),
            masked=tuple(detail.get("masked", ())),
            filtered=bool(detail.get("filtered", False)),
        )

    def row(self, now: float) -> dict[str, Any]:
        detail: dict[str, Any] = {"privilege": self.privilege}
        if self.columns is not None:
            detail["columns"] = list(self.columns)
        if self.masked:
            detail["masked"] = list(self.masked)
        if self.filtered:
            detail["filtered"] = True
        return {
            "at": now,
            "user": self.user,
            "address": None,
            "action": f"table.{self.privilege.lower()}",
            "target": f"table:{self.object}"[:_TARGET_MAX],
            "outcome": "ok" if self.allowed else "denied",
            "detail": detail,
            "door": self.door,
            "query_id": self.query_id,
        }


_TARGET_MAX = 255  # the column's width
_HISTORY_COLUMNS = ("door", "query_id")
PRUNE_BATCH = 10_000  # events one prune forgets at most: one short transaction


class AuditLog:
    def __init__(self, db: Database) -> None:
        self._db = db
        # The access history's columns came with a later revision than the log (a node
        # pinned to an earlier one reads and writes the log without them).
        self._history = TablePresence(db, audit_events, "query_id")

    def history_available(self) -> bool:
        return self._history()

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

    def add_uses(
        self, uses: Sequence[TableUseEvent], *, now: float, conn: Connection | None = None
    ) -> None:
        """The access history of one statement, in one executemany (with ``conn``, in the
        transaction that records the statement's end)."""
        if not uses or not self.history_available():
            return
        with self._db.within(conn) as c:
            c.execute(_ADD, [use.row(now) for use in uses])

    def uses_of(self, query_id: int) -> list[TableUseEvent]:
        """The allowed uses a statement recorded (a stream's start: its restarts use the same
        tables again), in the order written."""
        if not self.history_available():
            return []
        query = (
            sa.select(audit_events)
            .where(
                audit_events.c.query_id == query_id,
                audit_events.c.outcome == "ok",
                audit_events.c.action.like("table.%"),
            )
            .order_by(audit_events.c.id)
        )
        with self._db.read() as conn:
            rows = conn.execute(query).mappings().all()
        return [TableUseEvent.of_row(row) for row in rows if row["door"] is not None]

    def prune(self, *, before: float, limit: int = PRUNE_BATCH) -> int:
        """Forget up to ``limit`` events older than ``before``, oldest first (the retention
        duty calls it until it answers fewer): one short transaction at a time."""
        with self._db.begin() as conn:
            last = conn.execute(
                sa.select(audit_events.c.id)
                .where(audit_events.c.at < before)
                .order_by(audit_events.c.id)
                .offset(limit - 1)
                .limit(1)
            ).scalar_one_or_none()
            where = [audit_events.c.at < before]
            if last is not None:
                where.append(audit_events.c.id <= last)
            result = conn.execute(audit_events.delete().where(*where))
            return int(result.rowcount or 0)

    def list_page(
        self,
        *,
        user: str | None = None,
        action: str | None = None,
        outcome: str | None = None,
        since: float | None = None,
        until: float | None = None,
        obj: str | None = None,
        door: str | None = None,
        window: Window = FIRST_PAGE,
    ) -> Page[AuditRecord]:
        """Events, newest first; ``action`` matches a prefix (``session`` finds session.*);
        ``obj``: the events about one table or view (``hr.salaries``); ``since`` and
        ``until``: at or after, and before; ``door``: the access history's door.

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
        if until is not None:
            where.append(audit_events.c.at < until)
        history = self.history_available()
        if door is not None:
            # Without the history's columns, no event came through a door.
            where.append(audit_events.c.door == door if history else sa.false())
        if obj is not None:
            # A table named whole (spark_catalog.hr.salaries) or without its catalog.
            where.append(audit_events.c.target == object_target(obj))
        columns = [c for c in audit_events.c if history or c.name not in _HISTORY_COLUMNS]
        return read_page(
            self._db,
            sa.select(*columns).where(*where),
            sa.select(sa.func.count()).select_from(audit_events).where(*where),
            make=lambda row: AuditRecord(**row),
            by=audit_events.c.id,
            descending=True,
            window=window,
        )


def object_target(obj: str) -> str:
    """The target of a table or view named whole (spark_catalog.hr.salaries) or without its
    catalog (hr.salaries): events name tables whole, so one equality on the (target, id)
    index pages them in constant time, however often the table was read."""
    name = obj.strip().lower()
    if name.count(".") < 2:
        name = f"spark_catalog.{name}"
    return f"table:{name}"
