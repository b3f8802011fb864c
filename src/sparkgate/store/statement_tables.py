"""What each statement read and wrote, by table: the engine adds a statement's tables when it
records the statement's end (in the same transaction); the catalog reads a table's recent
statements through the index on (table_name, at), never by scanning statements' JSON.

    store.statement_tables.add(7, {"read": ["spark_catalog.hr.salaries"], "written": []},
                               now=time.time(), conn=conn)
    store.statement_tables.recent("spark_catalog.hr.salaries", owner="bob", limit=20)
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass

import sqlalchemy as sa
from sqlalchemy.engine import Connection

from sparkgate.states import StatementState
from sparkgate.store.database import Database
from sparkgate.store.presence import TablePresence
from sparkgate.store.schema import sessions, statement_tables, statements
from sparkgate.store.sessions import in_scope

READ, WRITE = "read", "write"
# The lists the engine's check gives ("read", "written") and how each is stored.
_ACCESS = {"read": READ, "written": WRITE}
_NAME_MAX = 767  # the column's width: a longer name (no catalog keeps one) is not recorded


@dataclass(frozen=True)
class TableUse:
    """A statement that read or wrote a table."""

    statement_id: int
    owner: str | None
    access: str  # READ | WRITE
    at: float
    state: StatementState


class StatementTables:
    def __init__(self, db: Database) -> None:
        self._db = db
        self._present = TablePresence(db, statement_tables)

    def available(self) -> bool:
        """Whether the store's schema has the table (``presence``)."""
        return self._present()

    def add(
        self,
        statement_id: int,
        touched: Mapping[str, Iterable[str]],
        *,
        now: float,
        conn: Connection | None = None,
    ) -> None:
        """``touched``: ``{"read": [names], "written": [names]}``, as the engine's check
        gives it; names are kept lower-case, as Spark's session catalog keeps them."""
        rows = {
            (name.lower(), access)
            for key, access in _ACCESS.items()
            for name in touched.get(key, ())
            if 0 < len(name) <= _NAME_MAX
        }
        if not rows:
            return
        with self._db.within(conn) as c:
            c.execute(
                statement_tables.insert(),
                [
                    {"statement_id": statement_id, "table_name": name, "access": access, "at": now}
                    for name, access in sorted(rows)
                ],
            )

    def recent(
        self,
        table_name: str,
        *,
        owner: str | None = None,
        creator: str | None = None,
        limit: int = 20,
    ) -> list[TableUse]:
        """The newest statements that read or wrote ``table_name`` (a full name), newest
        first, among those ``Scope(owner, creator)`` admits (see ``sessions.in_scope``)."""
        query = (
            sa.select(
                statement_tables.c.statement_id,
                sessions.c.owner,
                statement_tables.c.access,
                statement_tables.c.at,
                statements.c.state,
            )
            .select_from(
                statement_tables.join(
                    statements, statements.c.id == statement_tables.c.statement_id
                ).join(sessions, sessions.c.id == statements.c.session_id)
            )
            .where(statement_tables.c.table_name == table_name.lower(), *in_scope(owner, creator))
            .order_by(statement_tables.c.at.desc(), statement_tables.c.statement_id.desc())
            .limit(limit)
        )
        with self._db.read() as conn:
            rows = conn.execute(query).all()
        return [
            TableUse(
                statement_id=row.statement_id,
                owner=row.owner,
                access=row.access,
                at=row.at,
                state=StatementState(row.state),
            )
            for row in rows
        ]
