"""What each statement's Spark tasks cost: the engine adds it when it records the statement's
end (in the same transaction), summed from Spark's task metrics (``QueryCosts.scala``).

    store.statement_costs.add(7, StatementCost(tasks=2, executor_run_time_ms=40, ...),
                              now=time.time(), conn=conn)
    store.statement_costs.of(7)  # -> StatementCost | None (None: it ran no Spark task)

A statement that started a streaming query also counts what the query's micro-batches cost,
which its engine adds as they run (``add_stream``, a row each time it writes the query's
progress: ``schema_costs.stream_costs``).
"""

from __future__ import annotations

from dataclasses import asdict
from typing import Any

import sqlalchemy as sa
from sqlalchemy.engine import Connection

from sparkgate.statement_cost import COST_COLUMNS, StatementCost
from sparkgate.store.database import Database
from sparkgate.store.presence import TablePresence
from sparkgate.store.schema import statement_costs, stream_costs


def _columns(table: sa.Table) -> list[sa.ColumnElement[Any]]:
    return [table.c.statement_id, table.c.at, *(table.c[name] for name in COST_COLUMNS)]


# Every cost recorded, as one table of (statement_id, at, figures): statements' and, on a
# schema that has them (the key: True), streaming queries' batches, counted for the statement
# that started the query. What a query's cost and usage read.
RECORDED = {
    False: statement_costs,
    True: sa.union_all(
        sa.select(*_columns(statement_costs)), sa.select(*_columns(stream_costs))
    ).subquery("costs"),
}


class StatementCosts:
    def __init__(self, db: Database) -> None:
        self._db = db
        self._present = TablePresence(db, statement_costs)
        self._streams_present = TablePresence(db, stream_costs)

    def available(self) -> bool:
        """Whether the store's schema has the table (``presence``)."""
        return self._present()

    def streams_available(self) -> bool:
        """Whether it has streaming queries' costs too (a schema from 0014 on)."""
        return self._streams_present()

    def add_stream(
        self, statement_id: int, stream_query_id: int, cost: StatementCost, *, now: float
    ) -> None:
        """What a streaming query's batches cost since the last call, counted for the
        statement that started it (nothing on a schema without the table)."""
        if not self.streams_available():
            return
        with self._db.begin() as conn:
            conn.execute(
                stream_costs.insert().values(
                    statement_id=statement_id,
                    stream_query_id=stream_query_id,
                    at=now,
                    **asdict(cost),
                )
            )

    def add(
        self, statement_id: int, cost: StatementCost, *, now: float, conn: Connection | None = None
    ) -> None:
        with self._db.within(conn) as c:
            c.execute(
                statement_costs.insert().values(statement_id=statement_id, at=now, **asdict(cost))
            )

    def of(self, statement_id: int) -> StatementCost | None:
        """The statement's cost, with what the streaming queries it started cost so far; None
        if it ran no Spark task, or has not ended."""
        if not self.available():
            return None
        costs = RECORDED[self.streams_available()]
        query = sa.select(*(costs.c[name] for name in COST_COLUMNS)).where(
            costs.c.statement_id == statement_id
        )
        with self._db.read() as conn:
            rows = conn.execute(query).all()
        if not rows:
            return None
        return StatementCost.total(StatementCost.of([int(v) for v in row]) for row in rows)
