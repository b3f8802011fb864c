"""HiveServer2 over Thrift: sparkgate vs Spark Thrift Server (STS), through PyHive, in one run.

    scripts/bench hive2 [--iterations 50] [--aggregations 5] [--arraysizes 10000,1000]

Starts a sparkgate server (SQLite store, in-memory catalog, binary Thrift port, one shared
engine) in a temporary home, and STS from pyspark's own jars (``spark-submit --class
HiveThriftServer2``, no download), both with the same Spark: local[2], 2 shuffle partitions,
no UI, a 768m driver, the in-memory catalog. One PyHive connection to each (SASL PLAIN, auth
NONE); after warm-up rounds, calls alternate between the two so both see the same machine noise:
- ``SELECT 1``: cursor.execute + fetchall, p50 and p95;
- a 100k-row aggregation (10 rows back): median;
- 1M rows (``id, CAST(id AS STRING)``) fetched fully, ``cursor.arraysize`` rows per
  FetchResults: median time and rows/s, the median CPU time of each fetch (whole process
  trees: sparkgate's server and engine, of which its server alone; STS's JVM), and the peak
  RSS (/proc sampled every 20 ms during these fetches) of sparkgate's server, of its engine
  (Python + its JVM) and of the STS JVM. CPU time is the figure to compare when other work
  loads the machine: it counts what each side spent, not what it waited for.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import signal
import sys
import threading
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pyhive import hive
from rich.console import Console
from rich.table import Table

from bench.harness import (
    bench_server,
    cpu_ticks,
    interleaved,
    median,
    percentile,
    spark_thrift_server,
)
from sparkgate_dev import ServerProcess, free_port

TRIVIAL = "SELECT 1"
AGGREGATION = "SELECT id % 10 AS k, count(*), sum(id) FROM range(100000) GROUP BY 1 ORDER BY 1"
FETCH_ROWS = 1_000_000
FETCH = f"SELECT id, CAST(id AS STRING) AS s FROM range({FETCH_ROWS})"


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--iterations", type=int, default=50, help="SELECT 1 runs per server")
    parser.add_argument("--warmup", type=int, default=10, help="untimed SELECT 1 rounds")
    parser.add_argument("--aggregations", type=int, default=5, help="aggregation runs")
    parser.add_argument("--fetches", type=int, default=2, help="1M-row fetches per arraysize")
    parser.add_argument(
        "--arraysizes",
        default="10000,1000",
        help="comma-separated cursor.arraysize values for the 1M-row fetch (e.g. 10000,1000)",
    )
    args = parser.parse_args()
    console = Console()
    # A plain `kill` of the bench must also stop what it started: run the finally blocks.
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    compare(
        console,
        iterations=args.iterations,
        warmup=args.warmup,
        aggregations=args.aggregations,
        fetches=args.fetches,
        arraysizes=[int(size) for size in args.arraysizes.split(",")],
    )


@dataclass
class Figures:
    """What floor.py quotes: medians of sparkgate's and of STS's, per measure."""

    select1: tuple[float, float] = (0.0, 0.0)  # ms
    rows_per_s: dict[int, tuple[float, float]] = field(default_factory=dict)  # by arraysize
    cpu_s: dict[int, tuple[float, float]] = field(default_factory=dict)  # per fetch, by arraysize


def compare(
    console: Console,
    *,
    iterations: int = 50,
    warmup: int = 10,
    aggregations: int = 5,
    fetches: int = 2,
    arraysizes: tuple[int, ...] | list[int] = (10000, 1000),
) -> Figures:
    """Run the comparison and print its table; the headline figures."""
    figures = Figures()
    with (
        bench_server(console, catalog="in-memory", thrift_port=free_port()) as server,
        spark_thrift_server(console) as sts,
        connection(server.settings.thrift_port) as sg_conn,
        connection(sts.port) as sts_conn,
    ):
        sg, spark = sg_conn.cursor(), sts_conn.cursor()
        table = Table(title="HiveServer2 through PyHive: sparkgate vs Spark Thrift Server")
        table.add_column("measure", no_wrap=True)
        for column in ("sparkgate", "STS", "ratio"):
            table.add_column(column, justify="right")

        console.print(f"SELECT 1 x {iterations}...")
        gate, ref = interleaved(
            lambda: run(sg, TRIVIAL, 1),
            lambda: run(spark, TRIVIAL, 1),
            iterations,
            warmup,
        )
        figures.select1 = (median(gate), median(ref))
        add_row(table, "SELECT 1 p50, ms", median(gate), median(ref))
        add_row(table, "SELECT 1 p95, ms", percentile(gate, 0.95), percentile(ref, 0.95))

        console.print(f"100k-row aggregation x {aggregations}...")
        gate, ref = interleaved(
            lambda: run(sg, AGGREGATION, 10),
            lambda: run(spark, AGGREGATION, 10),
            aggregations,
            1,
        )
        add_row(table, "aggregation 100k rows, ms", median(gate), median(ref))

        engine = tree(engine_pid(server, sg_conn))
        groups = {
            "server": tree(server_pid(server), exclude=set(engine)),
            "engine": engine,
            "sts": tree(sts.pid),
        }
        table.add_section()
        with PeakRss(groups) as memory:
            for size in arraysizes:
                console.print(f"1M rows, arraysize {size} x {fetches}...")
                sg.arraysize = spark.arraysize = size
                spent: dict[str, list[float]] = {"sparkgate": [], "server": [], "sts": []}
                gate, ref = interleaved(
                    with_cpu(lambda: run(sg, FETCH, FETCH_ROWS), groups, spent, "sparkgate"),
                    with_cpu(lambda: run(spark, FETCH, FETCH_ROWS), groups, spent, "sts"),
                    fetches,
                    0,
                )
                g, r = median(gate) / 1000, median(ref) / 1000
                figures.rows_per_s[size] = (FETCH_ROWS / g, FETCH_ROWS / r)
                add_row(table, f"1M rows by {size}, s", g, r, digits=2)
                add_row(
                    table,
                    f"1M rows by {size}, k rows/s",
                    FETCH_ROWS / g / 1000,
                    FETCH_ROWS / r / 1000,
                    digits=0,
                )
                cpu = (median(spent["sparkgate"]), median(spent["sts"]))
                figures.cpu_s[size] = cpu
                add_row(table, f"1M rows by {size}, CPU s", *cpu, digits=2)
                table.add_row(
                    f"1M rows by {size}, CPU s: server", f"{median(spent['server']):,.2f}", "", ""
                )
        before, peak = memory.before, memory.peak
        table.add_section()
        table.add_row("peak RSS MB (idle): server", mb(peak["server"], before["server"]), "", "")
        table.add_row("peak RSS MB (idle): engine", mb(peak["engine"], before["engine"]), "", "")
        total = memory.peak_total(("server", "engine"))
        table.add_row(
            "peak RSS MB (idle): total",
            mb(total, before["server"] + before["engine"]),
            mb(peak["sts"], before["sts"]),
            f"{total / peak['sts']:.2f}x",
        )
    console.print(table)
    console.print(
        f"Latencies are client-side (PyHive execute + fetchall) over one warm connection per "
        f"server, calls alternating between the servers; SELECT 1 over {iterations} runs, "
        f"the aggregation over {aggregations}, each 1M-row fetch over {fetches}. "
        "sparkgate runs each statement in its engine, which writes the result to a file that "
        "the server pages out per FetchResults; STS collects the result in its driver JVM "
        "(spark.sql.thriftServer.incrementalCollect=false, its default) and pages from memory. "
        "CPU and RSS are summed over each process tree (sparkgate: server + engine, the "
        "engine being Python + its JVM; STS: its JVM); CPU per fetch, the query's run "
        "included; RSS sampled every 20 ms while the 1M-row fetches ran, idle RSS before "
        "them in parentheses. ratio = sparkgate / STS: above 1 is slower or bigger, except "
        "for rows/s, where above 1 is faster.",
        style="dim",
    )
    return figures


@contextlib.contextmanager
def connection(port: int) -> Iterator[Any]:
    """A PyHive connection (auth NONE: SASL PLAIN). Closing it after an interrupted call can
    fail on the half-read reply: that must not hide why we stopped, nor the cleanup."""
    conn = hive.connect("127.0.0.1", port=port, username="bench")
    try:
        yield conn
    finally:
        with contextlib.suppress(Exception):
            conn.close()


def run(cursor: Any, sql: str, expected_rows: int) -> None:
    cursor.execute(sql)
    rows = cursor.fetchall()
    assert len(rows) == expected_rows, (sql, len(rows))


def with_cpu(
    fetch: Callable[[], None],
    groups: dict[str, list[int]],
    spent: dict[str, list[float]],
    side: str,
) -> Callable[[], None]:
    """``fetch``, adding the CPU seconds it cost to ``spent``: STS's tree for ``sts``; else
    sparkgate's server and engine (``sparkgate``) and its server alone (``server``)."""
    names = {"sts": ["sts"]}.get(side, ["server", "engine"])

    def measured() -> None:
        before = cpu_ticks({name: groups[name] for name in names})
        fetch()
        after = cpu_ticks({name: groups[name] for name in names})
        seconds = {name: (after[name] - before[name]) / _TICKS for name in names}
        spent[side].append(sum(seconds.values()))
        if side != "sts":
            spent["server"].append(seconds["server"])

    return measured


_TICKS = os.sysconf("SC_CLK_TCK")


def add_row(table: Table, name: str, gate: float, ref: float, *, digits: int = 1) -> None:
    table.add_row(name, f"{gate:,.{digits}f}", f"{ref:,.{digits}f}", f"{gate / ref:.2f}x")


def mb(peak_kb: int, before_kb: int) -> str:
    return f"{peak_kb / 1024:,.0f} ({before_kb / 1024:,.0f})"


# -- processes and their memory -----------------------------------------------------------------


def server_pid(server: ServerProcess) -> int:
    assert server.process is not None
    return server.process.pid


def engine_pid(server: ServerProcess, conn: Any) -> int:
    """The pid of the engine behind a PyHive connection: its session id is in the handle."""
    session_id = int.from_bytes(conn.sessionHandle.sessionId.guid[8:], "big")
    with server.store() as store:
        engine_id = store.sessions.get(session_id).engine_id
        assert engine_id is not None, f"session {session_id} has no engine"
        pid = store.engines.get(engine_id).pid
    assert pid is not None, f"engine {engine_id} has no pid"
    return pid


def tree(root: int, exclude: set[int] | None = None) -> list[int]:
    """``root`` and its descendants (from /proc), leaving out ``exclude`` and theirs."""
    children: dict[int, list[int]] = {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        with contextlib.suppress(OSError):
            stat = (entry / "stat").read_text()
            ppid = int(stat.rsplit(")", 1)[1].split()[1])
            children.setdefault(ppid, []).append(int(entry.name))
    found, todo = [], [root]
    while todo:
        pid = todo.pop()
        if exclude and pid in exclude:
            continue
        found.append(pid)
        todo.extend(children.get(pid, []))
    return found


def rss_kb(pid: int) -> int:
    with contextlib.suppress(OSError):
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    return 0


class PeakRss:
    """Samples the summed RSS (kB) of process groups in a thread: ``before`` (first sample),
    ``peak`` per group, and ``peak_total`` of several groups at the same instant."""

    def __init__(self, groups: dict[str, list[int]], interval: float = 0.02) -> None:
        self.groups = groups
        self.interval = interval
        self.samples: list[dict[str, int]] = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._sample, daemon=True)

    def __enter__(self) -> PeakRss:
        self.samples.append(self._measure())
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()

    def _measure(self) -> dict[str, int]:
        return {name: sum(rss_kb(pid) for pid in pids) for name, pids in self.groups.items()}

    def _sample(self) -> None:
        while not self._stop.wait(self.interval):
            self.samples.append(self._measure())

    @property
    def before(self) -> dict[str, int]:
        return self.samples[0]

    @property
    def peak(self) -> dict[str, int]:
        return {name: max(s[name] for s in self.samples) for name in self.groups}

    def peak_total(self, names: tuple[str, ...]) -> int:
        return max(sum(s[name] for name in names) for s in self.samples)


if __name__ == "__main__":
    main()
