"""CPU per statement: what sparkgate adds to Spark's own work, counted in CPU time, which the
machine's noise moves far less than wall time.

    scripts/bench cpu [--sessions 8] [--statements 60] [--query "SELECT 1"]

Starts a sparkgate server (embedded defaults: SQLite store, Spark local[2], one shared
engine) and, in this process, a raw PySpark driver configured like an engine. Then, each
side alone:
- raw:       ``--sessions`` threads, each running ``spark.sql(q).collect()`` ``--statements``
             times, in this process (its Python and its JVM counted);
- sparkgate: ``--sessions`` sessions, each a thread sending ``POST /v1/queries?wait=`` (the
             answer carries the first page) ``--statements`` times: every process of the
             server (node, engines' Python and JVMs; the metastore, which raw PySpark shares,
             is left out) and this process (the client) counted.
Each process set's CPU while idle, measured first over as long as the side took, is
subtracted. Prints CPU ms per statement for each, split by process, and the difference.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import threading
import time
from collections.abc import Callable
from pathlib import Path

from rich.console import Console
from rich.table import Table

from bench.harness import bench_server, cpu_ticks, raw_spark
from sparkgate.client import Client

TICK_MS = 1000 / os.sysconf("SC_CLK_TCK")


def children(root: int) -> list[int]:
    """``root`` and all its descendants, from /proc."""
    parents: dict[int, list[int]] = {}
    for entry in os.scandir("/proc"):
        if entry.name.isdigit():
            with contextlib.suppress(OSError, ValueError, IndexError):
                stat = Path(entry.path, "stat").read_text()
                ppid = int(stat[stat.rindex(")") + 2 :].split()[1])
                parents.setdefault(ppid, []).append(int(entry.name))
    found, todo = [], [root]
    while todo:
        pid = todo.pop()
        found.append(pid)
        todo.extend(parents.get(pid, []))
    return found


def command(pid: int) -> str:
    with contextlib.suppress(OSError):
        return Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode()
    return ""


def role(pid: int, server_pid: int) -> str:
    """What a server process is, for the split: the node, an engine's Python or its JVM."""
    if pid == server_pid:
        return "node"
    text = command(pid)
    if "java" in text.split(" ", 1)[0]:
        return "engine JVM"
    return "engine Python"


def cpu_ms(
    groups: dict[str, list[int]], work: Callable[[], None]
) -> tuple[dict[str, float], float]:
    """CPU ms of each group while ``work`` runs, and its wall seconds."""
    before = cpu_ticks(groups)
    started = time.monotonic()
    work()
    elapsed = time.monotonic() - started
    after = cpu_ticks(groups)
    return {name: (after[name] - before[name]) * TICK_MS for name in groups}, elapsed


def idle_ms(groups: dict[str, list[int]], seconds: float) -> dict[str, float]:
    found, _ = cpu_ms(groups, lambda: time.sleep(seconds))
    return found


def in_threads(count: int, body: Callable[[int], None]) -> Callable[[], None]:
    def run() -> None:
        errors: list[BaseException] = []

        def guarded(index: int) -> None:
            try:
                body(index)
            except BaseException as exc:
                errors.append(exc)

        threads = [threading.Thread(target=guarded, args=(i,)) for i in range(count)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        if errors:
            raise errors[0]

    return run


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--sessions", type=int, default=8)
    parser.add_argument("--statements", type=int, default=60)
    parser.add_argument("--warmup", type=int, default=10, help="untimed statements per thread")
    parser.add_argument("--query", default="SELECT 1")
    args = parser.parse_args()
    console = Console()
    sql, count = args.query, args.sessions * args.statements

    with bench_server(console) as server:
        clients = [Client(server.url, timeout=120) for _ in range(args.sessions)]
        sessions = [c.create_session().id for c in clients]
        for client, session in zip(clients, sessions, strict=True):
            client.wait_session(session, {"idle"}, timeout=300)
        spark = raw_spark(server, "bench-cpu-raw")
        me = os.getpid()
        assert server.process is not None
        server_pid = server.process.pid
        served = [p for p in children(server_pid) if "HiveMetaStore" not in command(p)]
        mine = children(me)  # this process and raw PySpark's JVM
        jvm = [p for p in mine if p != me]
        groups = {
            **{
                name: [p for p in served if role(p, server_pid) == name]
                for name in ("node", "engine Python", "engine JVM")
            },
            "client / raw Python": [me],
            "raw JVM": jvm,
        }

        def raw(index: int, times: int) -> None:
            for _ in range(times):
                assert spark.sql(sql).collect()

        def gate(index: int, times: int) -> None:
            for _ in range(times):
                done = clients[index].submit(sql, session_id=sessions[index], wait=60)
                assert done.state == "success", done

        per_thread = args.statements
        warm = args.warmup
        in_threads(args.sessions, lambda i: raw(i, warm))()
        in_threads(args.sessions, lambda i: gate(i, warm))()
        raw_cpu, raw_wall = cpu_ms(groups, in_threads(args.sessions, lambda i: raw(i, per_thread)))
        gate_cpu, gate_wall = cpu_ms(
            groups, in_threads(args.sessions, lambda i: gate(i, per_thread))
        )
        raw_idle = idle_ms(groups, raw_wall)
        gate_idle = idle_ms(groups, gate_wall)
        for client in clients:
            client.close()

    def per_statement(cpu: dict[str, float], idle: dict[str, float]) -> dict[str, float]:
        return {name: max(0.0, cpu[name] - idle[name]) / count for name in cpu}

    raw_side = per_statement(raw_cpu, raw_idle)
    gate_side = per_statement(gate_cpu, gate_idle)
    raw_total = raw_side["client / raw Python"] + raw_side["raw JVM"]
    gate_parts = ("node", "engine Python", "engine JVM", "client / raw Python")
    gate_total = sum(gate_side[name] for name in gate_parts)

    table = Table(
        title=f"CPU ms per statement: {args.sessions} threads x {args.statements} `{sql}`, "
        "each side alone, idle subtracted"
    )
    table.add_column("process")
    table.add_column("raw PySpark", justify="right")
    table.add_column("sparkgate", justify="right")
    rows = [
        ("sparkgate node", None, gate_side["node"]),
        ("engines' Python", None, gate_side["engine Python"]),
        ("engines' JVM", None, gate_side["engine JVM"]),
        (
            "this process (raw: Python; sparkgate: client)",
            raw_side["client / raw Python"],
            gate_side["client / raw Python"],
        ),
        ("raw PySpark's JVM", raw_side["raw JVM"], None),
    ]
    for name, raw_value, gate_value in rows:
        table.add_row(
            name,
            "" if raw_value is None else f"{raw_value:.1f}",
            "" if gate_value is None else f"{gate_value:.1f}",
        )
    table.add_row("total", f"{raw_total:.1f}", f"{gate_total:.1f}")
    console.print(table)
    console.print(
        f"sparkgate adds {gate_total - raw_total:.1f} ms of CPU per statement "
        f"({gate_total / raw_total:.2f}x raw); wall: raw {raw_wall:.1f} s, "
        f"sparkgate {gate_wall:.1f} s for {count} statements "
        f"({count / raw_wall:.0f} and {count / gate_wall:.0f} per second)"
    )


if __name__ == "__main__":
    main()
