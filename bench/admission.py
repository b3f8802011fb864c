"""What resource groups cost a statement's store work: admission when nothing is queued, and
the steady state of a flooded group as its queue grows.

    scripts/bench admission [--rounds 400] [--queued 0,100,1000,5000]

At SQLite (a file, as one machine runs) and PostgreSQL (127.0.0.1:5432, database ``test``),
through the store's own calls, as the service and an engine make them:

- **a statement's path**: submit (``statements.add``), claim (``running``), end
  (``success``), with no resource groups, then placed in a group with room; the difference is
  what admission adds (goal: at most 1 ms p50);
- **a flooded group**: a group of 2 at its limit with Q statements queued behind it; each cycle
  submits one (it queues), ends a running one (its transaction admits the next) and claims the
  admitted one. The cycle's time as Q grows shows how the work depends on the queue's length.

Each figure is the median (and 95th percentile) of its rounds, in milliseconds.
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

from rich.console import Console
from rich.table import Table

from sparkgate.states import SessionKind, StatementState
from sparkgate.store import Store
from sparkgate.store.resource_groups import GroupSpec

PG_URL = "postgresql+psycopg://postgres@127.0.0.1:5432/test"
GROUP = "bench"


@contextmanager
def _store(kind: str) -> Iterator[Store]:
    if kind == "sqlite":
        with tempfile.TemporaryDirectory() as home:
            store = Store.open(f"sqlite:///{Path(home) / 'store.db'}", hints=False)
            store.migrate()
            try:
                yield store
            finally:
                store.close()
        return
    store = Store.open(PG_URL, hints=False)
    with store.db.engine.begin() as conn:
        conn.exec_driver_sql("DROP SCHEMA public CASCADE; CREATE SCHEMA public")
    store.migrate()
    try:
        yield store
    finally:
        store.close()


def _configure(store: Store, limit: int, max_queued: int) -> None:
    with store.db.begin() as conn:
        store.resource_groups.sync(conn, [GroupSpec(GROUP, limit, max_queued)])


def _timed(rounds: int, once: Callable[[], None]) -> tuple[float, float]:
    for _ in range(min(20, rounds)):  # warm: statements built and cached, pages in memory
        once()
    times = []
    for _ in range(rounds):
        started = time.perf_counter()
        once()
        times.append((time.perf_counter() - started) * 1000)
    times.sort()
    return statistics.median(times), times[int(len(times) * 0.95) - 1]


def statement_path(store: Store, group: str | None) -> Callable[[], None]:
    session = store.sessions.add(SessionKind.INTERACTIVE, now=time.time(), owner="alice")

    def once() -> None:
        now = time.time()
        added = store.statements.add(session.id, "SELECT 1", now=now, resource_group=group)
        assert added.state is StatementState.WAITING
        store.transitions.statement(added.id, StatementState.RUNNING, now=now)
        store.transitions.statement(added.id, StatementState.SUCCESS, now=now)

    return once


def flooded(store: Store, queued: int) -> Callable[[], None]:
    """A group of 2 at its limit with ``queued`` behind it, each from a user of its own (the
    turns alternate over all of them)."""
    _configure(store, 2, queued + 10)
    now = time.time()
    running: list[int] = []
    for owner in ("heavy-0", "heavy-1"):
        session = store.sessions.add(SessionKind.BATCH, now=now, owner=owner)
        added = store.statements.add(session.id, "SELECT 1", now=now, resource_group=GROUP)
        store.transitions.statement(added.id, StatementState.RUNNING, now=now)
        running.append(added.id)
    for n in range(queued):
        session = store.sessions.add(SessionKind.BATCH, now=now, owner=f"user-{n % 50}")
        store.statements.add(session.id, "SELECT 1", now=now, resource_group=GROUP)
    session = store.sessions.add(SessionKind.INTERACTIVE, now=now, owner="light")

    def once() -> None:
        now = time.time()
        store.statements.add(session.id, "SELECT 1", now=now, resource_group=GROUP)
        ended = running.pop(0)
        store.transitions.statement(ended, StatementState.SUCCESS, now=now)
        admitted = _admitted(store)
        store.transitions.statement(admitted, StatementState.RUNNING, now=now)
        running.append(admitted)

    return once


def _admitted(store: Store) -> int:
    with store.db.read() as conn:
        found = conn.exec_driver_sql(
            "SELECT min(statement_id) FROM group_places p JOIN statements s "
            "ON s.id = p.statement_id WHERE p.state = 'admitted' AND s.state = 'waiting'"
        ).scalar()
    assert found is not None
    return int(found)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=400)
    parser.add_argument("--queued", default="0,100,1000,5000")
    args = parser.parse_args()
    queues = [int(q) for q in args.queued.split(",")]
    console = Console()
    table = Table(title="Resource groups: store work per statement (ms, p50 / p95)")
    table.add_column("case")
    for kind in ("sqlite", "postgresql"):
        table.add_column(kind, justify="right")
    rows: dict[str, list[str]] = {}

    def cell(p50: float, p95: float) -> str:
        return f"{p50:.2f} / {p95:.2f}"

    for kind in ("sqlite", "postgresql"):
        with _store(kind) as store:
            plain = _timed(args.rounds, statement_path(store, None))
            _configure(store, 1000, 1000)
            placed = _timed(args.rounds, statement_path(store, GROUP))
            rows.setdefault("statement, no resource groups", []).append(cell(*plain))
            rows.setdefault("statement, in a group with room", []).append(cell(*placed))
            rows.setdefault("admission adds (p50)", []).append(f"{placed[0] - plain[0]:+.2f}")
        for queued in queues:
            with _store(kind) as store:
                timed = _timed(min(args.rounds, 200), flooded(store, queued))
                rows.setdefault(f"flooded group, {queued} queued: one cycle", []).append(
                    cell(*timed)
                )
    for name, cells in rows.items():
        table.add_row(name, *cells)
    console.print(table)


if __name__ == "__main__":
    main()
