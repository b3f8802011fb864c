"""Usage: what queries cost, summed by user, resource group or a tag's value, and by day, from
the costs their engines recorded (``statement_costs``, and ``stream_costs`` for what streaming
queries' batches cost, counted for the statement that started them), in one SQL aggregate: a
report's totals are exactly the sum of the queries it covers, on SQLite and PostgreSQL alike.

    store.usage.report(since=t0, until=t1, owner="bob", bucket=DAY)
    store.usage.report(by=RESOURCE_GROUP)  # or by=("tag", "team")
    store.usage.by_user(conn)  # every user's totals, for the metrics' counters
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

import sqlalchemy as sa
from sqlalchemy.engine import Connection
from sqlalchemy.ext.compiler import compiles
from sqlalchemy.sql.compiler import SQLCompiler
from sqlalchemy.sql.functions import FunctionElement

from sparkgate.statement_cost import COST_COLUMNS, StatementCost
from sparkgate.store.database import Database
from sparkgate.store.schema import (
    group_places,
    sessions,
    statement_tags,
    statements,
)
from sparkgate.store.statement_costs import RECORDED, StatementCosts

DAY = 86400.0


class _Floor(FunctionElement[float]):
    """floor() of a positive number: PostgreSQL's own; SQLite's integer cast (it truncates,
    which for a positive number is the floor, and needs no math extension)."""

    type = sa.Float()
    inherit_cache = True


@compiles(_Floor)
def _floor(element: _Floor, compiler: SQLCompiler, **kw: Any) -> str:
    return f"floor({compiler.process(element.clauses, **kw)})"


@compiles(_Floor, "sqlite")
def _floor_sqlite(element: _Floor, compiler: SQLCompiler, **kw: Any) -> str:
    return f"CAST({compiler.process(element.clauses, **kw)} AS INTEGER)"


@dataclass(frozen=True)
class Usage:
    """One row of a report: the queries of one key (a user, a resource group, a tag's value)
    that ended in one bucket (or the whole span), and their costs summed (the peak: the
    largest)."""

    key: str | None  # None: no such key (no authentication, no group, untagged)
    bucket: float | None  # the bucket's start (epoch seconds, UTC), None without buckets
    queries: int
    cost: StatementCost


USER = "user"
RESOURCE_GROUP = "resource_group"
By = str | tuple[str, str]  # USER, RESOURCE_GROUP or ("tag", key)


def _with_owner(sc: sa.FromClause) -> sa.Join:
    """Each cost with its query's session, whose owner is the user it counts for."""
    return sc.join(statements, statements.c.id == sc.c.statement_id).join(
        sessions, sessions.c.id == statements.c.session_id
    )


def _total(sc: sa.FromClause, name: str) -> sa.ColumnElement[int]:
    column = sc.c[name]
    return sa.func.max(column) if name == "peak_execution_memory" else sa.func.sum(column)


class UsageReports:
    def __init__(self, db: Database, costs: StatementCosts) -> None:
        self._db = db
        self._costs = costs

    def report(
        self,
        *,
        since: float | None = None,
        until: float | None = None,
        owner: str | None = None,
        bucket: float | None = None,
        by: By = USER,
    ) -> list[Usage]:
        """What the queries that ended in [since, until) cost (only ``owner``'s if given), by
        ``by`` and, with ``bucket`` (seconds), by bucket of their end time; by key, then
        bucket. Nothing before the store has costs."""
        if not self._costs.available():
            return []
        sc = RECORDED[self._costs.streams_available()]
        start = (_Floor(sc.c.at / bucket) * bucket).label("bucket") if bucket else None
        joined: Any = _with_owner(sc)
        if by == USER:
            key: Any = sessions.c.owner
        elif by == RESOURCE_GROUP:
            joined = joined.outerjoin(
                group_places, group_places.c.statement_id == sc.c.statement_id
            )
            key = group_places.c.resource_group
        else:
            joined = joined.outerjoin(
                statement_tags,
                sa.and_(
                    statement_tags.c.statement_id == sc.c.statement_id,
                    statement_tags.c.key == by[1],
                ),
            )
            key = statement_tags.c.value
        keys: list[Any] = [key.label("key"), *([start] if start is not None else [])]
        query = (
            sa.select(
                *keys,
                # a query counted once, however many rows its stream's batches added
                sa.func.count(sa.distinct(sc.c.statement_id)).label("queries"),
                *(_total(sc, name).label(name) for name in COST_COLUMNS),
            )
            .select_from(joined)
            .group_by(*keys)
            .order_by(*keys)
        )
        if since is not None:
            query = query.where(sc.c.at >= since)
        if until is not None:
            query = query.where(sc.c.at < until)
        if owner is not None:
            query = query.where(sessions.c.owner == owner)
        with self._db.read() as conn:
            rows = conn.execute(query).all()
        return [
            Usage(
                key=row.key,
                bucket=float(row.bucket) if start is not None else None,
                queries=int(row.queries),
                cost=StatementCost.of([getattr(row, name) for name in COST_COLUMNS]),
            )
            for row in rows
        ]

    def spent(self, owners: Iterable[str], since: float) -> tuple[float, float]:
        """Executor CPU and run seconds of ``owners``' queries that ended since ``since``: what
        a quota counts (one aggregate, over the index on the costs' end time)."""
        names = sorted(set(owners))
        if not names or not self._costs.available():
            return 0.0, 0.0
        sc = RECORDED[self._costs.streams_available()]
        query = (
            sa.select(
                sa.func.sum(sc.c.executor_cpu_time_ns), sa.func.sum(sc.c.executor_run_time_ms)
            )
            .select_from(_with_owner(sc))
            .where(sc.c.at >= since)
            .where(sessions.c.owner.in_(names))
        )
        with self._db.read() as conn:
            row = conn.execute(query).one()
        cpu_ns: Any = row[0]
        run_ms: Any = row[1]
        return int(cpu_ns or 0) / 1e9, int(run_ms or 0) / 1e3

    def by_user(self, conn: Connection) -> list[tuple[str | None, int, int]]:
        """Every user's executor CPU (ns) and run time (ms) over all their queries: one
        aggregate, for the metrics' counters (a store without costs: a caller's to check)."""
        sc = RECORDED[self._costs.streams_available()]
        query = (
            sa.select(
                sessions.c.owner,
                sa.func.sum(sc.c.executor_cpu_time_ns),
                sa.func.sum(sc.c.executor_run_time_ms),
            )
            .select_from(_with_owner(sc))
            .group_by(sessions.c.owner)
        )
        return [(row[0], int(row[1] or 0), int(row[2] or 0)) for row in conn.execute(query)]
