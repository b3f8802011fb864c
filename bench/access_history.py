"""What the access history costs: the rows a statement's end writes for it, and reading one
table's history when the table was read very often, on SQLite and PostgreSQL.

    scripts/bench access_history [--rounds 2000] [--events 200000] [--pg URL]

The write side times the transaction an engine commits when a statement ends (its state moved
to success, its tables added: ``reporting.py``), alternately without and with the access
history's rows (two uses: a SELECT with its columns, mask and filter, and an INSERT), and
reports the p50 and p95 of each and what the history adds. The read side fills the log with
``--events`` reads of one table (and as many of others), then times the first page and a
page deep in the history (``?object=&after=``), uncounted as the catalog page reads it: both
should cost the same, whatever the count.
"""

from __future__ import annotations

import argparse
import os
import statistics
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

import sqlalchemy as sa
from rich.console import Console
from rich.table import Table

from sparkgate.states import SessionKind, StatementState
from sparkgate.store import Store
from sparkgate.store.audit import TableUseEvent
from sparkgate.store.records import Window
from sparkgate.store.schema import audit_events, sessions, statements

PG_URL = os.environ.get(
    "SPARKGATE_TEST_PG_URL", "postgresql+psycopg://postgres@127.0.0.1:5432/test"
)
TABLE = "spark_catalog.hr.salaries"
USES = [
    TableUseEvent("bob", "rest", 0, TABLE, "SELECT", True, ("name", "salary"), ("salary",), True),
    TableUseEvent("bob", "rest", 0, "spark_catalog.hr.copy", "INSERT", True),
]


def _statement(store: Store) -> int:
    session = store.sessions.add(SessionKind.INTERACTIVE, now=time.time())
    with store.db.begin() as conn:
        conn.execute(sessions.update().where(sessions.c.id == session.id).values(state="idle"))
    return store.statements.add(session.id, "SELECT name FROM hr.salaries", now=time.time()).id


def _end(store: Store, statement_id: int, history: bool) -> float:
    """One statement's end, as the engine writes it; its seconds."""
    with store.db.begin() as conn:
        conn.execute(
            statements.update()
            .where(statements.c.id == statement_id)
            .values(state=StatementState.RUNNING.value)
        )
    started = time.perf_counter()
    now = time.time()
    with store.db.begin() as conn:
        conn.execute(
            statements.update()
            .where(statements.c.id == statement_id)
            .values(state=StatementState.SUCCESS.value, finished_at=now, updated_at=now)
        )
        store.statement_tables.add(
            statement_id, {"read": [TABLE], "written": []}, now=now, conn=conn
        )
        if history:
            store.audit.add_uses(USES, now=now, conn=conn)
    return time.perf_counter() - started


def _fill(store: Store, events: int) -> None:
    """``events`` reads of the table, as many of other tables, interleaved."""
    batch = 10_000
    now = time.time() - events
    with store.db.begin() as conn:
        for start in range(0, events, batch):
            rows = []
            for n in range(start, min(events, start + batch)):
                for target in (TABLE, f"spark_catalog.other.t{n % 97}"):
                    use = TableUseEvent("bob", "rest", n, target, "SELECT", True, ("a",))
                    rows.append(use.row(now + n))
            conn.execute(audit_events.insert(), rows)


def _ms(samples: list[float], q: float) -> float:
    return statistics.quantiles(samples, n=100)[int(q) - 1] * 1000 if len(samples) > 1 else 0.0


def _time(call: Callable[[], object], rounds: int) -> list[float]:
    samples = []
    for _ in range(rounds):
        started = time.perf_counter()
        call()
        samples.append(time.perf_counter() - started)
    return samples


def measure(url: str, name: str, rounds: int, events: int, table: Table) -> None:
    store = Store.open(url)
    try:
        store.migrate()
        with store.db.begin() as conn:  # a clean log: the read side counts its own rows
            conn.execute(audit_events.delete())
        ids = [_statement(store) for _ in range(rounds)]  # each ends once, as in an engine
        without: list[float] = []
        with_history: list[float] = []
        for n, statement_id in enumerate(ids):  # interleaved: the noise falls on both alike
            (with_history if n % 2 else without).append(_end(store, statement_id, n % 2 == 1))
        added = statistics.median(with_history) - statistics.median(without)
        table.add_row(
            name,
            "statement end, p50 / p95 ms",
            f"{_ms(without, 50):.3f} / {_ms(without, 95):.3f}",
            f"{_ms(with_history, 50):.3f} / {_ms(with_history, 95):.3f}",
            f"{added * 1000:+.3f} ms p50",
        )
        _fill(store, events)
        first = store.audit.list_page(obj="hr.salaries", window=Window(limit=50, count=False))
        deep_after = first.items[0].id - events  # a cursor near the oldest of its reads
        reads = max(5, rounds // 20)
        top = _time(
            lambda: store.audit.list_page(obj="hr.salaries", window=Window(limit=50, count=False)),
            reads,
        )
        deep = _time(
            lambda: store.audit.list_page(
                obj="hr.salaries", window=Window(limit=50, after=deep_after, count=False)
            ),
            reads,
        )
        with store.db.read() as conn:
            total = conn.execute(sa.select(sa.func.count()).select_from(audit_events)).scalar()
        table.add_row(
            name,
            f"a page of 50 of {events:,} reads ({total:,} events), p50 ms",
            f"first {_ms(top, 50):.3f}",
            f"deep {_ms(deep, 50):.3f}",
            f"{statistics.median(deep) / statistics.median(top):.2f}x",
        )
        with store.db.begin() as conn:
            conn.execute(audit_events.delete())
    finally:
        store.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=2000)
    parser.add_argument("--events", type=int, default=200_000)
    parser.add_argument("--pg", default=PG_URL, help="PostgreSQL to measure on ('' skips it)")
    args = parser.parse_args()
    table = Table(title="The access history's cost")
    for column in ("store", "measure", "without", "with", "the history adds"):
        table.add_column(column)
    with tempfile.TemporaryDirectory() as home:
        measure(f"sqlite:///{Path(home) / 'store.db'}", "sqlite", args.rounds, args.events, table)
    if args.pg:
        measure(args.pg, "postgresql", args.rounds, args.events, table)
    Console().print(table)


if __name__ == "__main__":
    main()
