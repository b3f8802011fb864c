"""First queries: a new user's, with authentication on, and one after a cluster engine idled.

    scripts/bench first_query [--users 5] [--cluster] [--idle 35]

1. A server with authentication on (a password file; engines shared per user, as the shipped
   settings make them when authentication is on) and the shipped warm pool. Once the pool is
   warm, for each of ``--users`` users it has never seen: the time from ``POST /v1/queries``
   of ``SELECT 1`` to its result, then the same for the user's second query. Between two
   users the bench waits for the pool to be warm again, as a team's users rarely arrive
   within seconds of one another (``--back-to-back`` does not wait: the worst case).
2. With ``--cluster``: a server on a standalone cluster from pyspark's jars (one worker of two
   cores), one user's session; its ``SELECT 1`` once warm, and again after the engine idled
   ``--idle`` seconds (Spark's dynamic allocation gives an executor back after 30 s idle).

``floor.py`` runs both and prints them in its table; this prints them alone.
"""

from __future__ import annotations

import argparse
import contextlib
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.table import Table

from bench.harness import SHIPPED_TIMERS, bench_server, median, run, timed_ms
from sparkgate.client import Client
from sparkgate.states import EngineKind, EngineState
from sparkgate_dev import ServerProcess, cluster, eventually, user_files

TRIVIAL = "SELECT 1"
IDLE = 35.0  # seconds: Spark's dynamic allocation gives an idle executor back after 30
PASSWORD = "first-query-bench"


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--users", type=int, default=5)
    parser.add_argument("--back-to-back", action="store_true")
    parser.add_argument("--cluster", action="store_true")
    parser.add_argument("--idle", type=float, default=IDLE)
    args = parser.parse_args()
    console = Console()
    rows = new_users(console, args.users, back_to_back=args.back_to_back)
    print_rows(console, rows)
    if args.cluster:
        print_rows(console, after_idle(console, args.idle))


def print_rows(console: Console, rows: list[tuple[str, list[float], str]]) -> None:
    table = Table(title="first queries, ms")
    for column in ("measure", "n", "p50", "max", "note"):
        table.add_column(column)
    for name, values, note in rows:
        table.add_row(name, str(len(values)), f"{median(values):.0f}", f"{max(values):.0f}", note)
    console.print(table)


def timed_query(sg: Client, **submit: Any) -> float:
    """Milliseconds from submit to the result read, as a client does it."""
    return timed_ms(lambda: run(sg, TRIVIAL, **submit))


def pool_warm(server: ServerProcess) -> bool:
    """The shipped resting state: an unclaimed shared engine and a warm dedicated one, both
    running (the API does not show whom an engine is claimed for: read the store)."""
    with server.store() as store:
        engines = store.engines.list_all()
    free = [
        e
        for e in engines
        if e.state is EngineState.RUNNING and e.share_key is None and e.session_id is None
    ]
    return {EngineKind.SHARED, EngineKind.DEDICATED} <= {e.kind for e in free}


def new_users(
    console: Console, users: int, *, back_to_back: bool = False
) -> list[tuple[str, list[float], str]]:
    names = [f"newcomer{i}" for i in range(users)]
    console.print("[dim]first queries: a server with authentication on[/]")
    with contextlib.ExitStack() as stack:
        home_files = stack.enter_context(_user_home(["admin", *names]))
        server = stack.enter_context(
            bench_server(console, warm_engines=1, **home_files, **SHIPPED_TIMERS)
        )
        firsts, seconds = [], []
        for name in names:
            if not back_to_back:
                eventually(lambda: pool_warm(server), timeout=300, interval=0.5, what="warm pool")
            with Client(server.url, user=name, password=PASSWORD, timeout=600) as sg:
                firsts.append(timed_query(sg))
                seconds.append(timed_query(sg))
        how = "back to back" if back_to_back else "each with the pool warm"
        return [
            ("new user's first SELECT 1 (auth on)", firsts, f"{users} users, {how}"),
            ("the same user's second SELECT 1", seconds, "for scale"),
        ]


@contextlib.contextmanager
def _user_home(names: list[str]) -> Iterator[dict[str, Any]]:
    with tempfile.TemporaryDirectory(prefix="sparkgate-bench-users-") as tmp:
        files = user_files(Path(tmp), dict.fromkeys(names, PASSWORD), "admins: [admin]\n")
        yield {"auth": "password", **files}


def after_idle(
    console: Console, idle: float, *, rounds: int = 2
) -> list[tuple[str, list[float], str]]:
    console.print("[dim]first queries: a standalone cluster[/]")
    with tempfile.TemporaryDirectory(prefix="sparkgate-bench-cluster-") as tmp:
        info = cluster.start(Path(tmp), cores=2, memory="3g")
        try:
            with (
                bench_server(console, spark_master=info.master_url, **SHIPPED_TIMERS) as server,
                server.client() as sg,
            ):
                return _idle_session(sg, idle, rounds)
        finally:
            cluster.stop(Path(tmp))


def _idle_session(sg: Client, idle: float, rounds: int) -> list[tuple[str, list[float], str]]:
    session = sg.create_session().id
    assert sg.wait_session(session, {"idle", "dead", "error"}, 300).state == "idle"
    warm = [timed_query(sg, session_id=session) for _ in range(3)]
    after = []
    for _ in range(rounds):
        time.sleep(idle)
        after.append(timed_query(sg, session_id=session))
    sg.kill_session(session)
    return [
        ("cluster session SELECT 1, warm", warm, ""),
        (
            f"cluster session SELECT 1 after {idle:.0f} s idle",
            after,
            "executors as Spark left them",
        ),
    ]


if __name__ == "__main__":
    main()
