"""Status reads and list pages with a full store: 100,000 queries, on SQLite and PostgreSQL.

    scripts/bench status [--queries 100000] [--reads 3000] [--pages 200] [--backend sqlite]

For each backend, starts a sparkgate server (no Spark needed: in-memory catalog, no engines)
on a fresh store (PostgreSQL: a database created for the run on --pg and dropped after),
writes ``--queries`` finished queries into it (in 1,000 sessions of two users), then times
over a kept-alive HTTP connection:

- ``GET /v1/queries/{id}`` for random ids: a status read, one lookup by key whatever the
  store holds;
- a list page deep in the list (90% down, newest first) reached by its cursor
  (``?after=``), against the same page reached by ``?offset=``, which reads every row it skips
  (and, by default, counts the whole list: the ``total``);
- keyset pages with a state or an owner filter.

PostgreSQL's tables are ANALYZEd after the bulk write, as autovacuum would soon do.
"""

from __future__ import annotations

import argparse
import random
import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager

import httpx
import sqlalchemy as sa
from rich.console import Console
from rich.table import Table

from bench.dashboard import fill
from bench.harness import bench_server, median, percentile
from sparkgate.store import Store, schema

PAGE = 50


@contextmanager
def fresh_pg_database(admin_url: str) -> Iterator[str]:
    """A new, empty PostgreSQL database for the run (its URL); dropped afterwards."""
    name = f"sparkgate_bench_{uuid.uuid4().hex[:8]}"
    admin = sa.create_engine(admin_url, isolation_level="AUTOCOMMIT")
    with admin.connect() as conn:
        conn.exec_driver_sql(f'CREATE DATABASE "{name}"')
    try:
        yield admin_url.rsplit("/", 1)[0] + f"/{name}"
    finally:
        with admin.connect() as conn:
            conn.exec_driver_sql(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
        admin.dispose()


def timed(client: httpx.Client, path: str, count: int, warmup: int = 20) -> list[float]:
    """Milliseconds per ``GET path`` (the answer checked), after ``warmup`` untimed ones."""
    times = []
    for i in range(warmup + count):
        started = time.perf_counter()
        response = client.get(path)
        elapsed = (time.perf_counter() - started) * 1000
        response.raise_for_status()
        if i >= warmup:
            times.append(elapsed)
    return times


def run_backend(
    console: Console, backend: str, store_url: str | None, args: argparse.Namespace
) -> list[tuple[str, list[float]]]:
    quiet = {"catalog": "in-memory", "shared_engine": False, "warm_engines": 0}
    if store_url is not None:
        quiet["store_url"] = store_url
    with bench_server(console, wait_engines=False, **quiet) as server:
        store = Store.open(server.settings.resolved_store_url)
        try:
            console.print(f"{backend}: writing {args.queries} queries into the store...")
            started = time.perf_counter()
            fill(store, args.queries)
            if store.db.dialect == "postgresql":
                with store.db.engine.connect().execution_options(
                    isolation_level="AUTOCOMMIT"
                ) as conn:
                    conn.exec_driver_sql("ANALYZE")
            console.print(f"{backend}: written in {time.perf_counter() - started:.1f} s")
            statements = schema.statements
            with store.db.read() as conn:
                ids: list[int] = list(conn.execute(sa.select(statements.c.id)).scalars())
                deep = int(len(ids) * 0.9)
                # The cursor of the page at offset ``deep``: the id just before it, newest first.
                cursor = sorted(ids, reverse=True)[deep - 1]
            # The store read alone, in this process: what the status read asks the store.
            sample = random.Random(5).choices(ids, k=args.reads)
            for statement_id in sample[:50]:  # warm up
                store.statements.find_with_session(statement_id)
            in_store = []
            for statement_id in sample:
                started = time.perf_counter()
                store.statements.find_with_session(statement_id)
                in_store.append((time.perf_counter() - started) * 1000)
        finally:
            store.close()

        rng = random.Random(11)
        lists = [
            ("list, first page (counts the total)", ""),
            (f"list, {deep:,} deep by cursor (?after=)", f"&after={cursor}"),
            (f"list, {deep:,} deep by offset (counts the total)", f"&offset={deep}"),
            (f"list, {deep:,} deep by offset, ?total=false", f"&offset={deep}&total=false"),
            ("list by cursor, deep, state=failed", f"&after={cursor}&state=failed"),
            ("list by cursor, deep, owner=alice", f"&after={cursor}&owner=alice"),
        ]
        results = [("store read alone (find_with_session)", in_store)]
        with httpx.Client(base_url=server.url, timeout=60) as client:
            console.print(f"{backend}: {args.reads} status reads...")
            for _ in range(50):  # warm up
                client.get(f"/v1/queries/{rng.choice(ids)}").raise_for_status()
            reads = [
                timed(client, f"/v1/queries/{rng.choice(ids)}", 1, warmup=0)[0]
                for _ in range(args.reads)
            ]
            results.append(("GET /v1/queries/{id}, random ids", reads))
            # What a status read costs beside the HTTP round trip and the store read: the floor.
            results.append(("GET /healthz (HTTP floor)", timed(client, "/healthz", args.reads)))
            for label, params in lists:
                console.print(f"{backend}: {label}...")
                results.append(
                    (label, timed(client, f"/v1/queries?limit={PAGE}{params}", args.pages))
                )
        return results


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--queries", type=int, default=100_000)
    parser.add_argument("--reads", type=int, default=3000, help="status reads per backend")
    parser.add_argument("--pages", type=int, default=200, help="list pages per kind")
    parser.add_argument(
        "--backend", choices=["sqlite", "postgresql"], action="append", help="default: both"
    )
    parser.add_argument(
        "--pg",
        default="postgresql+psycopg://postgres@127.0.0.1:5432/postgres",
        help="a PostgreSQL URL allowed to create and drop databases",
    )
    args = parser.parse_args()
    console = Console(width=120)
    table = Table(title=f"status reads and list pages, {args.queries:,} queries in the store (ms)")
    for column in ("backend", "request", "n", "p50", "p95", "p99"):
        table.add_column(column, justify="left" if column in {"backend", "request"} else "right")
    for backend in args.backend or ["sqlite", "postgresql"]:
        if backend == "sqlite":
            results = run_backend(console, backend, None, args)
        else:
            with fresh_pg_database(args.pg) as url:
                results = run_backend(console, backend, url, args)
        for label, times in results:
            table.add_row(
                backend,
                label,
                str(len(times)),
                f"{median(times):.2f}",
                f"{percentile(times, 0.95):.2f}",
                f"{percentile(times, 0.99):.2f}",
            )
        table.add_section()
    console.print(table)


if __name__ == "__main__":
    main()
