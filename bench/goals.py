"""Issue 26's table: each goal at the floor, and what this run measured, for floor.py.

The store's figures come from floor.py's own rows (one process per store); the peers' (the
HiveServer2 door against Spark Thrift Server, a new user's first query, a cluster engine's
first query after idling) from hive2.py and first_query.py, run once, on SQLite.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any

from rich.console import Console
from rich.table import Table

from bench.harness import median


@dataclass
class StoreFigures:
    warm_added: tuple[float, float] = (0.0, 0.0)  # ms over raw PySpark: p50, p95
    concurrency: float = 0.0  # 8 sessions' statements/s over 8 raw threads'
    idle_added: float = 0.0  # % of a core beyond the same number of raw idle drivers

    def to_json(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> StoreFigures:
        return cls(
            warm_added=(data["warm_added"][0], data["warm_added"][1]),
            concurrency=data["concurrency"],
            idle_added=data["idle_added"],
        )


@dataclass
class PeerFigures:
    hive2_select1: tuple[float, float] | None = None  # ms, sparkgate and STS
    hive2_rows_per_s: dict[int, tuple[float, float]] = field(default_factory=dict)
    new_user_first: list[float] = field(default_factory=list)  # ms
    cluster_after_idle: list[float] = field(default_factory=list)  # ms
    idle_seconds: float = 0.0


def print_goals(console: Console, stores: dict[str, StoreFigures], peers: PeerFigures) -> None:
    table = Table(title="Issue 26's figures: the goal, and this run")
    table.add_column("figure", no_wrap=True)
    table.add_column("goal", justify="right")
    for store in stores:
        table.add_column(store, justify="right")
    table.add_column("met", justify="center")

    def row(name: str, goal: str, cells: list[str], met: bool | None) -> None:
        table.add_row(name, goal, *cells, "-" if met is None else ("yes" if met else "no"))

    def per_store(text: Any, ok: Any) -> tuple[list[str], bool | None]:
        if not stores:
            return [], None
        return [text(f) for f in stores.values()], all(ok(f) for f in stores.values())

    cells, met = per_store(
        lambda f: f"{f.warm_added[0]:+.1f} / {f.warm_added[1]:+.1f}",
        lambda f: f.warm_added[0] <= 5 and f.warm_added[1] <= 15,
    )
    row("warm-session SELECT 1 over raw PySpark, p50 / p95, ms", "<= 5 / 15", cells, met)
    cells, met = per_store(lambda f: f"{f.concurrency:.2f}x", lambda f: f.concurrency >= 0.9)
    row("8 sessions against 8 raw threads, statements/s", ">= 0.9x", cells, met)
    cells, met = per_store(lambda f: f"{f.idle_added:+.2f}", lambda f: f.idle_added <= 0.5)
    row("idle CPU beyond raw idle drivers, % of a core", "<= 0.5", cells, met)

    blank = [""] * max(len(stores) - 1, 0)
    if peers.hive2_select1 is not None:
        gate, sts = peers.hive2_select1
        ratio = gate / sts
        row(
            "HiveServer2 SELECT 1 p50 against STS (PyHive)",
            "<= 1.0x",
            [f"{ratio:.2f}x ({gate:.0f} / {sts:.0f} ms)", *blank],
            ratio <= 1.0,
        )
    for size, goal in ((1000, 1.0), (10000, 1.2)):
        if size in peers.hive2_rows_per_s:
            gate, sts = peers.hive2_rows_per_s[size]
            ratio = gate / sts
            row(
                f"HiveServer2 1M-row fetch by {size:,}, rows/s against STS",
                f">= {goal:.1f}x",
                [f"{ratio:.2f}x ({gate / 1000:.0f}k / {sts / 1000:.0f}k)", *blank],
                ratio >= goal,
            )
    if peers.new_user_first:
        first = peers.new_user_first
        row(
            "a new user's first query (auth on, pool warm), p50 / max, ms",
            "<= 1000",
            [f"{median(first):.0f} / {max(first):.0f}", *blank],
            max(first) <= 1000,
        )
    if peers.cluster_after_idle:
        after = peers.cluster_after_idle
        row(
            f"cluster first query after the engine idled {peers.idle_seconds:.0f} s, ms",
            "<= 1000",
            [f"{median(after):.0f} / {max(after):.0f}", *blank],
            max(after) <= 1000,
        )
    console.print(table)
    console.print(
        "Below the first three rows: measured once, on SQLite, beside the stores' runs. "
        "With --quick, few samples: p95 is the maximum of 10, and noisy.",
        style="dim",
    )
