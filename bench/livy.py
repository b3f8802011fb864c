"""Livy API latency: raw PySpark in-process vs a statement through sparkgate's Livy API.

    scripts/bench livy [--iterations 60]

Starts a sparkgate server (SQLite store, in-memory catalog, Spark local[2]) in a temporary
home, opens a warm Livy ``pyspark`` session and a warm ``sql`` one, and times, interleaved so
both see the same machine noise:
- raw:  the same code run in this process (``exec`` / ``spark.sql(q).collect()``);
- livy: POST /sessions/{id}/statements, then GET .../statements/{n} every 5 ms until
  ``available`` (Livy has no long poll; real clients poll every 0.1-1 s, which then dominates).
"""

from __future__ import annotations

import argparse
import time
from collections.abc import Callable
from typing import Any

import httpx
from rich.console import Console
from rich.table import Table

from bench.harness import bench_server, interleaved, median, percentile, raw_spark

CASES = [
    ("pyspark", "python, no Spark", "x = 20\nx * 2 + 2"),
    ("pyspark", "python, 100k-row job", "spark.range(100000).selectExpr('sum(id % 7)').first()[0]"),
    ("sql", "sql, 10 rows", "SELECT id % 10 AS k, count(*) AS n FROM range(100000) GROUP BY k"),
    ("sql", "sql, 10k rows", "SELECT id, id * 2 AS twice FROM range(10000)"),
]


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--iterations", type=int, default=60)
    parser.add_argument("--warmup", type=int, default=10)
    args = parser.parse_args()
    console = Console()

    with (
        bench_server(console, catalog="in-memory") as server,
        httpx.Client(base_url=server.url, timeout=120) as http,
    ):
        sessions = {kind: open_session(http, kind) for kind in ("pyspark", "sql")}
        spark = raw_spark(server, "bench-livy-raw")
        table = Table(title=f"Livy statements, ms ({args.iterations} runs each, interleaved, warm)")
        table.add_column("statement", no_wrap=True)
        for column in ("raw p50", "raw p95", "livy p50", "livy p95", "added p50"):
            table.add_column(column, justify="right")
        namespace: dict[str, Any] = {"spark": spark}
        for kind, name, code in CASES:
            raw_fn = raw_python(code, namespace) if kind == "pyspark" else raw_sql(spark, code)
            raw, livy = interleaved(
                raw_fn,
                lambda k=kind, c=code: run_statement(http, sessions[k], c),  # type: ignore[misc]
                args.iterations,
                args.warmup,
            )
            r50, l50 = median(raw), median(livy)
            table.add_row(
                name,
                f"{r50:.1f}",
                f"{percentile(raw, 0.95):.1f}",
                f"{l50:.1f}",
                f"{percentile(livy, 0.95):.1f}",
                f"{l50 - r50:+.1f}",
            )
        spark.stop()
    console.print(table)


def open_session(http: httpx.Client, kind: str) -> int:
    session_id: int = http.post("/sessions", json={"kind": kind}).json()["id"]
    while http.get(f"/sessions/{session_id}/state").json()["state"] != "idle":
        time.sleep(0.1)
    return session_id


def run_statement(http: httpx.Client, session_id: int, code: str) -> None:
    posted = http.post(f"/sessions/{session_id}/statements", json={"code": code}).json()
    path = f"/sessions/{session_id}/statements/{posted['id']}"
    while True:
        statement = http.get(path).json()
        if statement["state"] == "available":
            assert statement["output"]["status"] == "ok", statement
            return
        time.sleep(0.005)


def raw_python(code: str, namespace: dict[str, Any]) -> Callable[[], None]:
    compiled = compile(code, "<bench>", "exec")
    return lambda: exec(compiled, namespace)


def raw_sql(spark: Any, sql: str) -> Callable[[], None]:
    return lambda: spark.sql(sql).collect()


if __name__ == "__main__":
    main()
