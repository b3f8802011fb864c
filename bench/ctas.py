"""The cost of atomic CTAS: the same CREATE TABLE AS SELECT, plain and atomic, in one run.

    scripts/bench ctas [--rows 4000000] [--runs 5]

Starts a sparkgate server (SQLite store, its own Hive metastore, Spark local[2]) in a
temporary home and opens a session on its shared engine. Then, interleaved so that all see
the same machine noise, it runs the same CTAS:
- raw:               spark.sql(ctas) in this process (same Spark conf, same metastore);
- sparkgate plain:   through sparkgate with ``SET spark.sparkgate.ctas.atomic=false``;
- sparkgate atomic:  through sparkgate, two-phase (staged, then renamed into place).
and, for the atomic path, REPLACE TABLE (a new version, then a location switch).

While each sparkgate statement runs, a reader in this process (another Spark driver than the
engine's) polls the catalog; "visible after success" is the time from the query's recorded
success to the reader first seeing the table (negative: visible before the success was
recorded), and "first seen complete" whether what it counted first had every row. "commit
ms" is the atomic switch (rename or location change, with its store updates) as the engine
timed it.
"""

from __future__ import annotations

import argparse
import statistics
import threading
import time
import uuid
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from rich.console import Console
from rich.table import Table

from bench.harness import bench_server, raw_spark
from sparkgate.client import Client
from sparkgate.schemas.queries import Query

WORKLOADS = {
    "flat": "USING parquet AS SELECT id, id % 1000 AS k, concat('row-', id) AS label "
    "FROM range({rows})",
    "16 partitions": "USING parquet PARTITIONED BY (p) AS SELECT id, concat('row-', id) AS "
    "label, id % 16 AS p FROM range({rows})",
}
# A partitioned table cannot be replaced atomically (nor by Spark at all): CTAS only.
REPLACEABLE = {"flat"}


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--rows", type=int, default=4_000_000)
    parser.add_argument("--runs", type=int, default=5)
    args = parser.parse_args()
    console = Console(width=150)

    with bench_server(console) as server, server.client() as sg:
        session = sg.create_session()
        sg.wait_session(session.id, {"idle"}, timeout=300)
        spark = raw_spark(server, "bench-ctas-raw")
        bench = Bench(spark, sg, session.id, args.rows)
        bench.warm_up()
        table = Table(
            title=f"CTAS of {args.rows:,} rows, seconds (median of {args.runs}, "
            "interleaved; 2 cores, local[2])"
        )
        for column in (
            "workload",
            "path",
            "median s",
            "min s",
            "vs raw",
            "commit ms",
            "visible after success, ms",
            "first seen complete",
        ):
            table.add_column(column, justify="left" if column == "workload" else "right")
        for name, clauses in WORKLOADS.items():
            for row in bench.compare(name, clauses, args.runs):
                table.add_row(*row)
        spark.stop()
    console.print(table)
    console.print(
        "visible after success: the reader is a Spark driver in another process, "
        "polling the catalog every ~10 ms; negative means visible before the query's "
        "success was recorded.",
        style="dim",
    )


@dataclass
class Run:
    seconds: float
    table: str
    lag: float | None = None  # seconds from recorded success to visible in another driver
    complete: bool | None = None  # what the other driver saw first had every row
    commit_ms: float | None = None  # the atomic switch, as the engine timed it


LABELS = {
    "raw": "raw PySpark (plain)",
    "plain": "sparkgate plain",
    "atomic": "sparkgate atomic",
    "replace": "sparkgate atomic REPLACE",
}


class Bench:
    def __init__(self, spark: Any, sg: Client, session_id: int, rows: int) -> None:
        self.spark, self.sg, self.session_id, self.rows = spark, sg, session_id, rows

    def warm_up(self) -> None:
        for path in ("raw", "plain", "atomic"):
            self.run(path, f"USING parquet AS SELECT id FROM range({self.rows // 10})")

    def compare(self, name: str, clauses: str, runs: int) -> list[tuple[str, ...]]:
        results: dict[str, list[Run]] = {path: [] for path in LABELS}
        sql = clauses.format(rows=self.rows)
        for _ in range(runs):
            for path in ("raw", "plain", "atomic"):
                results[path].append(self.run(path, sql))
            if name in REPLACEABLE:
                results["replace"].append(
                    self.run("replace", sql, table=results["atomic"][-1].table)
                )
        raw = statistics.median(r.seconds for r in results["raw"])
        out: list[tuple[str, ...]] = []
        for path, label in LABELS.items():
            if not results[path]:
                continue
            seconds = [r.seconds for r in results[path]]
            lags = [r.lag for r in results[path] if r.lag is not None]
            whole = [r.complete for r in results[path] if r.complete is not None]
            commits = [r.commit_ms for r in results[path] if r.commit_ms is not None]
            out.append(
                (
                    name if path == "raw" else "",
                    label,
                    f"{statistics.median(seconds):.2f}",
                    f"{min(seconds):.2f}",
                    f"{statistics.median(seconds) / raw:.2f}x",
                    f"{statistics.median(commits):.0f}" if commits else "-",
                    f"{statistics.median(lags) * 1000:+.0f}" if lags else "-",
                    f"{sum(whole)}/{len(whole)}" if whole else "-",
                )
            )
        return out

    def run(self, path: str, clauses: str, *, table: str | None = None) -> Run:
        name = table or f"bench_{path}_{uuid.uuid4().hex[:8]}"
        if path == "raw":
            start = time.perf_counter()
            self.spark.sql(f"CREATE TABLE {name} {clauses}").collect()
            return Run(time.perf_counter() - start, name)
        atomic = "false" if path == "plain" else "true"
        self._ok(f"SET spark.sparkgate.ctas.atomic={atomic}")
        verb = "REPLACE" if path == "replace" else "CREATE"
        watcher = Watcher(self.spark, name, replace=path == "replace")
        watcher.start()
        start = time.perf_counter()
        done = self._ok(f"{verb} TABLE {name} {clauses}")
        seconds = time.perf_counter() - start
        ctas = (done.output or {}).get("ctas", {})
        assert ctas.get("path") == ("plain" if path == "plain" else "atomic"), done
        assert done.finished_at is not None
        finished = datetime.fromisoformat(done.finished_at.replace("Z", "+00:00")).timestamp()
        seen_at, count = watcher.wait()
        return Run(seconds, name, seen_at - finished, count == self.rows, ctas.get("commit_ms"))

    def _ok(self, sql: str) -> Query:
        submitted = self.sg.submit(sql, session_id=self.session_id)
        done = self.sg.wait(submitted.id, timeout=1800)
        assert done.state == "success", done
        return done


class Watcher(threading.Thread):
    """Polls the catalog from another Spark driver until the table (or its new version)
    shows up; records when, and how many rows it had then."""

    def __init__(self, spark: Any, table: str, *, replace: bool) -> None:
        super().__init__(daemon=True)
        self.spark, self.table, self.replace = spark, table, replace
        self.before = self._location() if replace else None
        self.seen_at: float | None = None
        self.count: int | None = None

    def _location(self) -> str | None:
        if not self.spark.catalog.tableExists(self.table):
            return None
        rows = self.spark.sql(f"DESCRIBE TABLE EXTENDED {self.table}").collect()
        return next((r.data_type for r in rows if r.col_name == "Location"), None)

    def run(self) -> None:
        while True:
            if self.replace:
                visible = self._location() not in (None, self.before)
            else:
                visible = bool(self.spark.catalog.tableExists(self.table))
            if visible:
                self.seen_at = time.time()
                self.count = self.spark.sql(f"SELECT count(*) FROM {self.table}").collect()[0][0]
                return
            time.sleep(0.01)

    def wait(self) -> tuple[float, int | None]:
        self.join(timeout=600)
        assert self.seen_at is not None, f"{self.table} never became visible"
        return self.seen_at, self.count


if __name__ == "__main__":
    main()
