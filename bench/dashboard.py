"""The dashboard with a full store: page times with 100,000 queries, against the API's own list.

    scripts/bench dashboard [--queries 100000] [--iterations 30]

Starts a sparkgate server (no Spark needed: in-memory catalog, no engines kept), writes
``--queries`` finished queries into its store (in 1,000 sessions of two users), then times, over
a kept-alive connection, the dashboard's pages and fragments next to ``GET /v1/queries``, which
reads the same page of the same store: the difference is what rendering HTML costs. Pages
follow the API's cursors (``?after=``: ``WHERE id < :after ... LIMIT``), so a deep page costs
what the first one does (which also counts the list) whatever the store holds.
"""

from __future__ import annotations

import argparse
import random
import time
from typing import Any

import httpx
import sqlalchemy as sa
from rich.console import Console
from rich.table import Table

from bench.harness import bench_server, median, percentile
from sparkgate.store import Store, schema

SESSIONS = 1000


def fill(store: Store, count: int) -> None:
    """``count`` finished queries, written in bulk as the engines would have left them."""
    rng = random.Random(7)
    now = time.time() - count
    per_session = max(1, count // SESSIONS)
    sessions: list[dict[str, Any]] = [
        {
            "id": 100_000 + i,
            "kind": "interactive",
            "state": "idle",
            "owner": ("alice", "bob")[i % 2],
            "conf": {},
            "attributes": {},
            "statement_count": per_session,
            "version": 1,
            "created_at": now,
            "last_activity_at": now,
            "updated_at": now,
        }
        for i in range(SESSIONS)
    ]
    statements: list[dict[str, Any]] = []
    for n in range(count):
        state = rng.choices(["success", "failed", "cancelled"], [90, 8, 2])[0]
        at = now + n
        statements.append(
            {
                "session_id": 100_000 + n % SESSIONS,
                "seq": n // SESSIONS + 1,
                "kind": "sql",
                "code": f"SELECT id, id * {n} AS x FROM range({n % 1000})",
                "state": state,
                "error": {"code": "DIVIDE_BY_ZERO", "message": "x"} if state == "failed" else None,
                "result": (
                    {"path": "/nonexistent", "schema": [], "row_count": n % 1000}
                    if state == "success"
                    else None
                ),
                "progress": 1.0,
                "version": 3,
                "created_at": at,
                "started_at": at + 0.01,
                "finished_at": at + 0.2,
                "updated_at": at + 0.2,
            }
        )
    with store.db.begin() as conn:
        conn.execute(sa.insert(schema.sessions), sessions)
        for start in range(0, len(statements), 10_000):
            conn.execute(sa.insert(schema.statements), statements[start : start + 10_000])


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--queries", type=int, default=100_000)
    parser.add_argument("--iterations", type=int, default=30)
    args = parser.parse_args()
    console = Console(width=120)
    quiet = {"catalog": "in-memory", "shared_engine": False, "warm_engines": 0}
    with bench_server(console, wait_engines=False, **quiet) as server:
        store = Store.open(server.settings.resolved_store_url)
        try:
            console.print(f"writing {args.queries} queries into the store...")
            fill(store, args.queries)
            deep = max(0, args.queries - 50)
            with store.db.read() as conn:
                one: int = conn.execute(sa.select(sa.func.max(schema.statements.c.id))).scalar_one()
                # The cursor of the page ``deep`` rows down, newest first: the id just above it.
                newest = sa.select(schema.statements.c.id).order_by(schema.statements.c.id.desc())
                cursor: int = conn.execute(newest.offset(max(0, deep - 1)).limit(1)).scalar_one()
        finally:
            store.close()
        paths = [
            ("API list, first page (`/v1/queries?limit=50`)", "/v1/queries?limit=50"),
            ("queries page, first page", "/ui/queries"),
            ("queries table fragment (the 2 s poll)", "/ui/queries"),
            (f"queries page, {deep} deep (cursor)", f"/ui/queries?after={cursor}"),
            ("queries page, state=failed", "/ui/queries?state=failed"),
            ("queries page, one session", "/ui/queries?session_id=100007"),
            ("one query's page", f"/ui/queries/{one}"),
            ("sessions page", "/ui/sessions"),
        ]
        table = Table(title=f"dashboard with {args.queries} queries in the store (ms)")
        for column in ("request", "p50", "p95", "bytes"):
            table.add_column(column, justify="left" if column == "request" else "right")
        with httpx.Client(base_url=server.url, timeout=60) as client:
            for label, path in paths:
                times: list[float] = []
                size = 0
                for i in range(args.iterations + 3):
                    started = time.perf_counter()
                    # The page's poll asks for the table alone, as htmx does.
                    poll = {"HX-Request": "true"} if "poll" in label else {}
                    response = client.get(path, headers=poll)
                    elapsed = (time.perf_counter() - started) * 1000
                    response.raise_for_status()
                    size = len(response.content)
                    if i >= 3:  # the first few warm caches up
                        times.append(elapsed)
                table.add_row(
                    label, f"{median(times):.1f}", f"{percentile(times, 0.95):.1f}", str(size)
                )
        console.print(table)


if __name__ == "__main__":
    main()
