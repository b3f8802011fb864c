"""Memory per idle interactive session, on the node and on its engine; 1,000 on paper.

    scripts/bench idle_sessions [--sessions 60]

Starts a server (SQLite, one shared engine, no warm dedicated one), reads the resident memory
of the server process and of the shared engine (its Python process and its JVM), then opens
``--sessions`` interactive sessions on that engine (at most ``shared_engine_max_sessions``,
64, share one engine), runs one ``SELECT 1`` in each (a session that has run something holds
what a used one holds), and reads them again after a JVM garbage collection. Then it works
out what 1,000 idle sessions over two nodes need: ceil(1000 / 64) shared engines, each as
idle as this one plus its sessions, and the nodes' share.
"""

from __future__ import annotations

import argparse
import math
import subprocess
from pathlib import Path

from rich.console import Console
from rich.table import Table

from bench.harness import SHIPPED_TIMERS, bench_server
from bench.hive2 import rss_kb, tree
from sparkgate.client import Client
from sparkgate_dev import ServerProcess

TARGET = 1000
NODES = 2


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--sessions", type=int, default=60)
    args = parser.parse_args()
    console = Console()
    with (
        bench_server(console, warm_engines=0, **SHIPPED_TIMERS) as server,
        server.client() as sg,
    ):
        [engine] = [e for e in sg.engines().engines if e.kind == "shared"]
        assert engine.pid is not None
        room = server.settings.shared_engine_max_sessions
        sessions = min(args.sessions, room)
        before = measure(server, engine.pid, sg)
        opened = []
        for _ in range(sessions):
            session = sg.create_session().id
            opened.append(session)
        for session in opened:
            state = sg.wait_session(session, {"idle", "dead", "error"}, 300).state
            assert state == "idle", sg.session(session)
            query = sg.submit("SELECT 1", session_id=session)
            assert sg.wait(query.id, timeout=120).state == "success"
        after = measure(server, engine.pid, sg)
        for session in opened:
            sg.kill_session(session)
    node_per = (after["node"] - before["node"]) / sessions
    engine_per = (after["engine"] - before["engine"]) / sessions
    table = Table(title=f"{sessions} idle interactive sessions on one shared engine, MB")
    for column in ("process", "before", "after", "per session"):
        table.add_column(column, justify="right")
    table.add_row("node (server)", mb(before["node"]), mb(after["node"]), f"{node_per / 1024:.2f}")
    table.add_row(
        "engine (Python + JVM)",
        mb(before["engine"]),
        mb(after["engine"]),
        f"{engine_per / 1024:.2f}",
    )
    console.print(table)
    engines = math.ceil(TARGET / room)
    engine_total = engines * before["engine"] + TARGET * engine_per
    node_total = before["node"] + TARGET / NODES * node_per
    console.print(
        f"{TARGET} idle sessions over {NODES} nodes, on paper: {engines} shared engines "
        f"({room} sessions each), {engine_total / 1024 / 1024:.1f} GB for the engines "
        f"({engines / NODES:.0f} per node); each node {node_total / 1024:.0f} MB. "
        "The engines' JVMs dominate; the sessions themselves cost little.",
        style="dim",
    )


def measure(server: ServerProcess, engine_pid: int, sg: Client) -> dict[str, int]:
    """Resident kB of the node's server process and of the engine's process tree, after the
    engine's JVM collected its garbage (a heap not yet collected says nothing of sessions)."""
    assert server.process is not None
    sg.submit("SELECT 1")  # a one-off query: the shared engine is awake and settled
    for pid in tree(engine_pid):
        # jcmd signals its target (SIGQUIT) to attach: a JVM answers, Python would die.
        if Path(f"/proc/{pid}/comm").read_text().strip() == "java":
            subprocess.run(["jcmd", str(pid), "GC.run"], capture_output=True, check=False)
    return {
        "node": rss_kb(server.process.pid),
        "engine": sum(rss_kb(pid) for pid in tree(engine_pid)),
    }


def mb(kb: float) -> str:
    return f"{kb / 1024:,.0f}"


if __name__ == "__main__":
    main()
