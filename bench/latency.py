"""Latency: raw PySpark in-process vs submit-to-result through sparkgate, in one run.

    scripts/bench latency [--iterations 100]

Starts a sparkgate server (embedded defaults: SQLite store, Hive metastore, Spark local[2])
in a temporary home, opens a warm interactive session, and times, interleaved so both see the
same machine noise:
- raw:       spark.sql(q).collect() in this process (same Spark conf, same metastore);
- sparkgate: POST /v1/queries -> GET /v1/queries/{id}?wait=... -> GET .../result, over HTTP.
"""

from __future__ import annotations

import argparse

from rich.console import Console
from rich.table import Table

from bench.harness import bench_server, interleaved, median, percentile, raw_spark

QUERIES = {
    "trivial": "SELECT 1 AS one",
    "small aggregation": (
        "SELECT id % 10 AS k, count(*) AS n, sum(id) AS s FROM range(100000) GROUP BY k"
    ),
}


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--iterations", type=int, default=100)
    parser.add_argument("--warmup", type=int, default=20)
    args = parser.parse_args()
    console = Console()

    with bench_server(console) as server, server.client() as sg:
        session = sg.create_session()
        sg.wait_session(session.id, {"idle"}, timeout=300)
        spark = raw_spark(server, "bench-latency-raw")
        table = Table(title=f"Latency, ms ({args.iterations} runs each, interleaved, warm)")
        table.add_column("query", no_wrap=True)
        for column in ("raw p50", "raw p95", "sparkgate p50", "sparkgate p95", "added p50"):
            table.add_column(column, justify="right")
        table.add_column("ratio", justify="right")
        for name, sql in QUERIES.items():

            def through_sparkgate(sql: str = sql) -> None:
                submitted = sg.submit(sql, session_id=session.id)
                done = sg.query(submitted.id, wait=60)
                assert done.state == "success", done
                sg.result(submitted.id)

            raw, gate = interleaved(
                lambda sql=sql: spark.sql(sql).collect(),  # type: ignore[misc]
                through_sparkgate,
                args.iterations,
                args.warmup,
            )
            r50, g50 = median(raw), median(gate)
            table.add_row(
                name,
                f"{r50:.1f}",
                f"{percentile(raw, 0.95):.1f}",
                f"{g50:.1f}",
                f"{percentile(gate, 0.95):.1f}",
                f"{g50 - r50:+.1f}",
                f"{g50 / r50:.2f}x",
            )
        spark.stop()
    console.print(table)
    console.print(
        "target: sparkgate adds under 20% or 30 ms at p50, whichever is larger", style="dim"
    )


if __name__ == "__main__":
    main()
