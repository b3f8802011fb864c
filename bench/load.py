"""Loading a large file into a table: the node's memory while it receives the file, and the
time the load takes against raw PySpark reading the same file into a table.

    scripts/bench load [--gb 2.0] [--no-raw]

A CSV of ``--gb`` gigabytes is written to a temporary directory; ``sparkgate load`` (the
client's streamed upload, then the one-off load statement on the server's shared engine) puts
it into a new table with its schema given, while the node's resident memory (RSS, from
/proc) is sampled every 100 ms. Raw PySpark then reads the same file with the same schema
into a table (``saveAsTable``) in a driver of this process configured like an engine, after
the sparkgate load, with the engines idle.
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

SCHEMA = "id BIGINT, name STRING, amount DOUBLE, day DATE"


def write_csv(path: Path, gigabytes: float) -> int:
    """A CSV of about ``gigabytes``: a 4 MB block of rows written over and over."""
    rows = [f"{i},name-{i % 977},{i * 0.25:.2f},2026-11-{1 + i % 28:02d}\n" for i in range(100_000)]
    block = "".join(rows).encode()
    target = int(gigabytes * 2**30)
    written = 0
    with path.open("wb") as file:
        while written < target:
            file.write(block)
            written += len(block)
    return written


def rss_mb(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return 0.0


class Sampler(threading.Thread):
    def __init__(self, pid: int) -> None:
        super().__init__(daemon=True)
        self.pid = pid
        self.samples: list[float] = []
        self.done = threading.Event()

    def run(self) -> None:
        while not self.done.is_set():
            self.samples.append(rss_mb(self.pid))
            time.sleep(0.1)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--gb", type=float, default=2.0)
    parser.add_argument("--no-raw", action="store_true")
    args = parser.parse_args()
    console = Console()
    rows: list[tuple[str, str]] = []
    with tempfile.TemporaryDirectory(prefix="sparkgate-load-") as tmp:
        data = Path(tmp) / "big.csv"
        size = write_csv(data, args.gb)
        console.print(f"wrote {size / 2**30:.2f} GiB")
        with bench_server(console) as server, Client(server.url, timeout=600) as sg:
            assert server.process is not None
            pid = server.process.pid
            before = rss_mb(pid)
            sampler = Sampler(pid)
            sampler.start()
            start = time.monotonic()
            query = sg.load(data, "big_load", format="csv", schema=SCHEMA)
            uploaded = time.monotonic() - start
            done = sg.wait(query.id, timeout=3600)
            loaded = time.monotonic() - start
            sampler.done.set()
            sampler.join()
            assert done.state == "success", done.error
            count = sg.wait(sg.submit("SELECT count(*) FROM big_load").id)
            total = sg.result(count.id).rows[0][0]
            rows += [
                ("file", f"{size / 2**30:.2f} GiB, {total:,} rows"),
                ("node RSS before the upload", f"{before:.0f} MB"),
                ("node RSS, peak while receiving and loading", f"{max(sampler.samples):.0f} MB"),
                ("node RSS after", f"{rss_mb(pid):.0f} MB"),
                ("upload (client to the node's disk)", f"{uploaded:.1f} s"),
                ("upload and load, to success", f"{loaded:.1f} s"),
            ]
            if not args.no_raw:  # the same file, the same schema, in a driver like an engine
                spark = raw_spark(server, "bench-load-raw")
                try:
                    start = time.monotonic()
                    spark.read.schema(SCHEMA).csv(str(data)).write.saveAsTable("raw_load")
                    raw = time.monotonic() - start
                finally:
                    spark.stop()
                rows.append(("raw PySpark read.csv + saveAsTable", f"{raw:.1f} s"))
                rows.append(("sparkgate (upload and load) / raw", f"{loaded / raw:.2f}x"))
    table = Table("figure", "value", title="sparkgate load")
    for name, value in rows:
        table.add_row(name, value)
    console.print(table)


if __name__ == "__main__":
    main()
