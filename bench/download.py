"""Downloading a large result: the node's memory while it streams a 10-million-row result as
CSV, Parquet and Arrow, and the time against raw PySpark writing the same rows as CSV.

    scripts/bench download [--rows 10000000] [--no-raw]

A server of its own (embedded defaults, one shared engine) runs the query once; its stored
result is then downloaded in each format by the client (``Client.download``, streamed to a
file in a temporary directory, as ``sparkgate queries result ID --output F`` does), while the
node's resident memory (RSS, from /proc) is sampled every 20 ms: the growth is the peak over
the RSS just before that download. Raw PySpark then writes the same query's rows with
``df.write.csv`` in a driver of this process configured like an engine, after the sparkgate
downloads, with the engines idle. "query + CSV download" is sparkgate's whole way from SQL to
a CSV file, the figure to set against raw PySpark's.
"""

from __future__ import annotations

import argparse
import tempfile
import threading
import time
from pathlib import Path

from rich.console import Console
from rich.table import Table

from bench.harness import bench_server, raw_spark
from sparkgate.client import Client


def query_of(rows: int) -> str:
    # Many partitions: an engine's driver holds a partition's Arrow batches at a time.
    partitions = max(2, rows // 250_000)
    return (
        "SELECT id, concat('name-', id) AS name, id * 0.25D AS amount, "
        "date_add(DATE'2026-01-01', CAST(id % 365 AS INT)) AS day "
        f"FROM range(0, {rows}, 1, {partitions})"
    )


def rss_mb(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return 0.0


class Sampler(threading.Thread):
    def __init__(self, pid: int) -> None:
        super().__init__(daemon=True)
        self.pid = pid
        self.peak = rss_mb(pid)
        self.done = threading.Event()

    def run(self) -> None:
        while not self.done.is_set():
            self.peak = max(self.peak, rss_mb(self.pid))
            time.sleep(0.02)


def _download(sg: Client, query_id: int, target: Path, pid: int, rows: int, table: Table) -> float:
    """One download, its row in ``table``; its seconds."""
    before = rss_mb(pid)
    sampler = Sampler(pid)
    sampler.start()
    start = time.monotonic()
    done = sg.download(query_id, target)
    seconds = time.monotonic() - start
    sampler.done.set()
    sampler.join()
    assert done.rows == rows, done
    mb = done.bytes / 2**20
    table.add_row(
        f"download {done.format}",
        f"{done.bytes:,}",
        f"{seconds:.1f}",
        f"{mb / seconds:.0f}",
        f"{sampler.peak - before:.1f} MB (of {before:.0f} MB)",
    )
    target.unlink()
    return seconds


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--rows", type=int, default=10_000_000)
    parser.add_argument("--no-raw", action="store_true")
    args = parser.parse_args()
    console = Console()
    sql = query_of(args.rows)
    table = Table(title=f"Downloading a {args.rows:,}-row result")
    for column in ("what", "bytes", "seconds", "MB/s", "node RSS growth, peak"):
        table.add_column(column, justify="left" if column == "what" else "right")
    with (
        tempfile.TemporaryDirectory(prefix="sparkgate-download-") as tmp,
        bench_server(console) as server,
        Client(server.url, timeout=600) as sg,
    ):
        assert server.process is not None
        pid = server.process.pid
        start = time.monotonic()
        query = sg.wait(sg.submit(sql).id, timeout=3600)
        ran = time.monotonic() - start
        assert query.state == "success", query.error
        assert query.result is not None and query.result.row_count == args.rows
        warm_up = sg.wait(sg.submit(query_of(10_000)).id, timeout=600)
        table.add_row("query (engine writes the result)", "", f"{ran:.1f}", "", "")
        for fmt in ("csv", "parquet", "arrow"):  # the writers' code loaded, as on a busy node
            warm = Path(tmp) / f"warm.{fmt}"
            sg.download(warm_up.id, warm)
            warm.unlink()
        csv_seconds = 0.0
        for fmt in ("csv", "parquet", "arrow"):
            seconds = _download(sg, query.id, Path(tmp) / f"result.{fmt}", pid, args.rows, table)
            csv_seconds = seconds if fmt == "csv" else csv_seconds
        table.add_row("sparkgate: query + CSV download", "", f"{ran + csv_seconds:.1f}", "", "")
        if not args.no_raw:
            spark = raw_spark(server, "bench-download-raw")
            try:
                out = Path(tmp) / "raw-csv"
                start = time.monotonic()
                spark.sql(sql).write.option("header", "true").csv(str(out))
                raw = time.monotonic() - start
            finally:
                spark.stop()
            size = sum(p.stat().st_size for p in out.glob("*.csv"))
            table.add_row(
                "raw PySpark: df.write.csv",
                f"{size:,}",
                f"{raw:.1f}",
                f"{size / 2**20 / raw:.0f}",
                "",
            )
            table.add_row("sparkgate / raw", "", f"{(ran + csv_seconds) / raw:.2f}x", "", "")
    console.print(table)


if __name__ == "__main__":
    main()
