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

import json
from collections.abc import Iterable, Sequence
from dataclasses import asdict, astuple, dataclass, fields
from typing import Any

import sqlalchemy as sa
from sqlalchemy.engine import Connection

from sparkgate.store.database import Database
from sparkgate.store.presence import TablePresence
from sparkgate.store.schema import statement_costs, stream_costs
from sparkgate.store.schema_costs import COST_COLUMNS


@dataclass(frozen=True)
class StatementCost:
    """Spark's own counters, summed over a statement's tasks (the peak: the largest task's)."""

    tasks: int
    executor_run_time_ms: int
    executor_cpu_time_ns: int
    input_bytes: int
    input_records: int
    output_bytes: int
    output_records: int
    shuffle_read_bytes: int
    shuffle_write_bytes: int
    memory_bytes_spilled: int
    disk_bytes_spilled: int
    peak_execution_memory: int

    @classmethod
    def from_json(cls, text: str) -> StatementCost | None:
        """The engine's JSON (``Cost.json``): its figures in the order of ``COST_COLUMNS``;
        None for its ``null`` (no task ran)."""
        found = json.loads(text)
        return None if found is None else cls.of(found)

    @classmethod
    def of(cls, figures: Sequence[int | None]) -> StatementCost:
        """From figures in the order of ``COST_COLUMNS`` (None, as SQL's sum of no rows: 0)."""
        if len(figures) != len(COST_COLUMNS):
            raise ValueError(f"{len(COST_COLUMNS)} figures expected, not {len(figures)}")
        return cls(*(int(value or 0) for value in figures))

    @classmethod
    def total(cls, costs: Iterable[StatementCost]) -> StatementCost:
        """Costs summed as a report sums them (the peak: the largest)."""
        rows = [astuple(cost) for cost in costs]
        return cls.of(
            [
                max(column, default=0) if name == "peak_execution_memory" else sum(column)
                for name, column in zip(COST_COLUMNS, zip(*rows, strict=True), strict=True)
            ]
            if rows
            else [0] * len(COST_COLUMNS)
        )


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


# The dataclass and the table name the same figures (checked once, at import).
assert tuple(f.name for f in fields(StatementCost)) == COST_COLUMNS


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
