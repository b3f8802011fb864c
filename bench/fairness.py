"""A light user's query while a heavy user floods the cluster: with a resource group, and as
it was before them, in one run.

    scripts/bench fairness [--light 10] [--heavy 16] [--heavy-ms 2000]

One server (Spark local[2], one shared engine for both users), started twice: with the access
file's ``analysts`` group (``hardConcurrencyLimit: 2``, users taking turns), and without
``resource_groups:`` (today's behaviour: every query goes to the engine at once, and Spark's
FIFO scheduler runs their tasks in submission order). In each, the light user's query
(``SELECT count(*) FROM range(2000000)``) is timed submit-to-answer (``POST /v1/queries?wait``):
alone, then while the heavy user keeps ``--heavy`` queries of ``--heavy-ms`` each submitted.

The goal (issue 37): under the flood, the light query's latency within 1.5x of one (heavy)
query's run time: it waits for one turn at most, not behind the whole flood.
"""

from __future__ import annotations

import argparse
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

import httpx
from rich.console import Console
from rich.table import Table

from bench.harness import bench_server, percentile
from sparkgate_dev import user_files

PASSWORDS = {"heavy": "heavy-pw", "light": "light-pw"}
LIGHT = "SELECT count(*) AS n FROM range(2000000)"
GROUPS = """
resource_groups:
  rootGroups:
    - {name: analysts, hardConcurrencyLimit: 2, maxQueued: 1000}
  selectors:
    - {group: analysts}
"""


def _heavy(ms: int) -> str:
    return f"SELECT length(reflect('java.lang.Thread', 'sleep', CAST({ms} AS BIGINT))) AS x"


def _timed(api: httpx.Client, query: str) -> float:
    started = time.perf_counter()
    answer = api.post("/v1/queries", params={"wait": 120}, json={"query": query})
    elapsed = time.perf_counter() - started
    assert answer.status_code == 201 and answer.json()["state"] == "success", answer.text
    return elapsed


class Flood:
    """The heavy user keeping ``depth`` queries submitted (one thread each)."""

    def __init__(self, url: str, depth: int, ms: int) -> None:
        self.stop = threading.Event()
        self.threads = [
            threading.Thread(target=self._loop, args=(url, ms), daemon=True) for _ in range(depth)
        ]
        self.ran: list[float] = []

    def _loop(self, url: str, ms: int) -> None:
        with httpx.Client(base_url=url, auth=("heavy", PASSWORDS["heavy"]), timeout=300) as api:
            while not self.stop.is_set():
                self.ran.append(_timed(api, _heavy(ms)))

    def __enter__(self) -> Flood:
        for thread in self.threads:
            thread.start()
        time.sleep(3)  # every heavy query submitted, the first ones running
        return self

    def __exit__(self, *exc: Any) -> None:
        self.stop.set()
        for thread in self.threads:
            thread.join(timeout=600)


def measure(console: Console, args: argparse.Namespace, access: str) -> dict[str, list[float]]:
    with tempfile.TemporaryDirectory() as tmp:
        files: dict[str, Any] = dict(user_files(Path(tmp), PASSWORDS, access))
        with bench_server(
            console, auth="password", engine_share_level="server", warm_engines=1, **files
        ) as server:
            with httpx.Client(
                base_url=server.url, auth=("light", PASSWORDS["light"]), timeout=300
            ) as light:
                for _ in range(3):
                    _timed(light, LIGHT)  # warm
                alone = [_timed(light, LIGHT) for _ in range(args.light)]
                heavy_alone = [_timed(light, _heavy(args.heavy_ms)) for _ in range(2)]
                with Flood(server.url, args.heavy, args.heavy_ms):
                    flooded = []
                    for _ in range(args.light):
                        flooded.append(_timed(light, LIGHT))
                        time.sleep(0.5)
            return {"alone": alone, "flooded": flooded, "heavy": heavy_alone}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--light", type=int, default=10)
    parser.add_argument("--heavy", type=int, default=16)
    parser.add_argument("--heavy-ms", type=int, default=2000)
    args = parser.parse_args()
    console = Console()
    results = {
        "resource group (limit 2, turns)": measure(console, args, GROUPS),
        "no resource groups (before)": measure(console, args, ""),
    }
    table = Table(title="Light user's query latency, s (p50 / p95)")
    for column in ("case", "alone", "heavy flooding", "one heavy query", "flooded / heavy"):
        table.add_column(column, justify="right" if column != "case" else "left")
    for name, times in results.items():
        heavy = percentile(times["heavy"], 0.5)
        flooded = percentile(times["flooded"], 0.5)
        table.add_row(
            name,
            f"{percentile(times['alone'], 0.5):.2f} / {percentile(times['alone'], 0.95):.2f}",
            f"{flooded:.2f} / {percentile(times['flooded'], 0.95):.2f}",
            f"{heavy:.2f}",
            f"{flooded / heavy:.2f}x",
        )
    console.print(table)


if __name__ == "__main__":
    main()
