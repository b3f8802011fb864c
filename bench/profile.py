"""Where sparkgate's CPU per statement goes: a sampling profile of the node and the engines'
Python while sessions run statements, read with py-spy (on PyPI; installed by
``scripts/install --test``).

    scripts/bench profile [--sessions 8] [--statements 60] [--query "SELECT 1"] [--top 25]

Starts a server like ``scripts/bench cpu`` (embedded defaults, one shared engine), warms
``--sessions`` sessions, then runs ``--statements`` ``POST /v1/queries?wait=`` per session
while ``py-spy record`` samples the node and every engine's Python (100 Hz, idle threads
left out). Prints, per process, the functions holding the most samples, inclusive (the
function or anything it called) and self, as a share of that process's samples, with the
samples per statement turned into milliseconds.
"""

from __future__ import annotations

import argparse
import shutil
import subprocess
import sys
import tempfile
from collections import Counter
from pathlib import Path

from rich.console import Console
from rich.table import Table

from bench.cpu import children, command, in_threads, role
from bench.harness import bench_server
from sparkgate.client import Client

RATE = 100  # samples a second


def record(pid: int, out: Path) -> subprocess.Popen[bytes]:
    py_spy = shutil.which("py-spy") or str(Path(sys.executable).with_name("py-spy"))
    return subprocess.Popen(
        [
            py_spy,
            "record",
            "--pid",
            str(pid),
            "--rate",
            str(RATE),
            "--format",
            "raw",
            "--output",
            str(out),
            "--nonblocking",
            "--gil",
        ],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )


def read_stacks(path: Path) -> Counter[tuple[str, ...]]:
    stacks: Counter[tuple[str, ...]] = Counter()
    if not path.exists():
        return stacks
    for line in path.read_text().splitlines():
        stack, _, count = line.rpartition(" ")
        if stack and count.isdigit():
            stacks[tuple(stack.split(";"))] += int(count)
    return stacks


def short(frame: str) -> str:
    """``func (path/to/module.py:12)`` → ``func (module.py)``: one entry per function."""
    name, _, where = frame.partition(" (")
    file = where.rsplit(":", 1)[0].rstrip(")")
    parts = Path(file).parts
    ours = "sparkgate" in parts
    file = "/".join(parts[parts.index("sparkgate") :]) if ours else Path(file).name
    return f"{name} ({file})"


def report(
    console: Console, title: str, stacks: Counter[tuple[str, ...]], count: int, top: int
) -> None:
    total = sum(stacks.values())
    inclusive: Counter[str] = Counter()
    own: Counter[str] = Counter()
    for stack, samples in stacks.items():
        frames = [short(f) for f in stack[1:]]  # the first is the thread
        for frame in set(frames):
            inclusive[frame] += samples
        if frames:
            own[frames[-1]] += samples
    ms = 1000 / RATE / count
    table = Table(title=f"{title}: {total} samples, {total * ms:.1f} ms a statement")
    table.add_column("inclusive: function (module)")
    table.add_column("ms/stmt", justify="right")
    table.add_column("self: function (module)")
    table.add_column("ms/stmt", justify="right")
    left, right = inclusive.most_common(top), own.most_common(top)
    for i in range(top):
        a = left[i] if i < len(left) else ("", 0)
        b = right[i] if i < len(right) else ("", 0)
        table.add_row(a[0], f"{a[1] * ms:.2f}", b[0], f"{b[1] * ms:.2f}")
    console.print(table)


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--sessions", type=int, default=8)
    parser.add_argument("--statements", type=int, default=60)
    parser.add_argument("--warmup", type=int, default=10)
    parser.add_argument("--query", default="SELECT 1")
    parser.add_argument("--top", type=int, default=25)
    args = parser.parse_args()
    console = Console(width=200)
    count = args.sessions * args.statements
    with bench_server(console) as server, tempfile.TemporaryDirectory() as tmp:
        clients = [Client(server.url, timeout=120) for _ in range(args.sessions)]
        sessions = [c.create_session().id for c in clients]
        for client, session in zip(clients, sessions, strict=True):
            client.wait_session(session, {"idle"}, timeout=300)

        def gate(index: int, times: int) -> None:
            for _ in range(times):
                done = clients[index].submit(args.query, session_id=sessions[index], wait=60)
                assert done.state == "success", done

        in_threads(args.sessions, lambda i: gate(i, args.warmup))()
        assert server.process is not None
        server_pid = server.process.pid
        targets = {
            pid: ("node" if pid == server_pid else f"engine {pid}")
            for pid in children(server_pid)
            if role(pid, server_pid) in ("node", "engine Python")
            and "HiveMetaStore" not in command(pid)
            and "python" in command(pid).split(" ", 1)[0]
        }
        recorders = {pid: record(pid, Path(tmp, f"{pid}.txt")) for pid in targets}
        in_threads(args.sessions, lambda i: gate(i, args.statements))()
        for proc in recorders.values():
            proc.send_signal(2)
        for proc in recorders.values():
            proc.wait(timeout=60)
        for client in clients:
            client.close()
        for pid, name in targets.items():
            report(console, name, read_stacks(Path(tmp, f"{pid}.txt")), count, args.top)


if __name__ == "__main__":
    main()
