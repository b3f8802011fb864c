"""The floor: what sparkgate adds to raw PySpark at the least, on SQLite and on PostgreSQL.

    scripts/bench floor [--store sqlite|postgresql|both] [--iterations 50] [--quick]

For each store, starts a sparkgate server (embedded Hive metastore, Spark local[2], a shared
engine and one warm dedicated engine; PostgreSQL: a database created for the run on --pg and
dropped after) with the shipped timers (heartbeat, duties, leases: not the tests' fast ones)
and ``SPARKGATE_STORE_TRACE`` on for it and its engines, then measures, against raw PySpark
(same Spark conf, same metastore) where a comparison exists:

1. one-off ``SELECT 1`` (no session), ten in a row: ``sparkgate sql`` as a process (end to end,
   Python start-up included) and the client (submit, long poll, result), after the shared
   engine's first query (timed apart); and, last of the timings, the old path,
   ``isolation="engine"`` (a driver of its own), once (--quick) or twice: the warm dedicated
   engine, then whatever refills the warm pool;
2. warm-session ``SELECT 1``: submit, ``GET /v1/queries/{id}?wait``, result, interleaved with
   ``spark.sql(q).collect()`` in this process;
3. the same for a 100k-row aggregation;
4. a new interactive session on the warm shared engine to its first ``SELECT 1`` result;
5. cancel of a running query (0.5 s after it is seen running) to ``cancelled`` by long poll;
6. 8 sessions, each its own thread and HTTP client, sending ``SELECT 1`` in a loop, against 8
   threads sharing one SparkSession in this process (alternating halves of the time);
7. idle CPU, over 60 s (30 s with --quick), of the server, its two engines and the metastore
   (each process group: Python and its JVM) against a raw idle driver (a process of its own,
   same conf, one query run), all sampled in one window from /proc; the figure is sparkgate
   minus the metastore minus two raw drivers;
8. store transactions per warm-session statement, from the trace: 50 ``SELECT 1`` (20 with
   --quick) after 10 s (5 s) of idleness whose rate is subtracted; by caller in a second
   table (SQL statements without SQLite's BEGIN, which the trace counts).

With ``--store both`` each store runs in a process of its own (a fresh JVM for raw PySpark).
With n <= 20, a p95 is the maximum. Numbers are as noisy as the machine is busy.
"""

from __future__ import annotations

import argparse
import contextlib
import functools
import json
import os
import select
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections import Counter, defaultdict
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.table import Table

from bench import first_query, hive2
from bench.goals import PeerFigures, StoreFigures, print_goals
from bench.harness import (
    SHIPPED_TIMERS,
    bench_server_with_env,
    interleaved,
    log_errors,
    median,
    percentile,
    raw_spark,
    raw_spark_conf,
    run,
    timed_ms,
)
from bench.status import fresh_pg_database
from sparkgate.catalog.metastore import read_record
from sparkgate.client import Client
from sparkgate.schemas.engines import Engine
from sparkgate.schemas.queries import WaitedQuery
from sparkgate_dev import ServerProcess, eventually

TRIVIAL = "SELECT 1"
AGGREGATION = "SELECT id % 10 AS k, count(*) AS n, sum(id) AS s FROM range(100000) GROUP BY k"
ENDLESS = "SELECT sum(id % 7) FROM range(100000000000)"
CONCURRENCY = 8


RAW_IDLE_DRIVER = """
import json, sys, time
from pyspark.sql import SparkSession
builder = SparkSession.builder.appName("bench-floor-idle")
for key, value in json.loads(sys.argv[1]).items():
    builder = builder.config(key, value)
spark = builder.getOrCreate()
spark.sparkContext.setLogLevel("ERROR")
spark.sql("SELECT 1").collect()
print("ready", flush=True)
time.sleep(3600)
"""


@dataclass
class Row:
    measure: str
    n: str
    raw: tuple[float, float] | None = None  # p50, p95 (or one figure twice)
    gate: tuple[float, float] | None = None
    ratio: float | None = None
    note: str = ""
    single: bool = False  # one figure, no spread
    added: bool = True  # show sparkgate - raw
    digits: int = 1


@dataclass
class Report:
    store: str
    rows: list[Row] = field(default_factory=list)
    idle: list[tuple[str, float, str]] = field(default_factory=list)  # who, % core, parts
    callers: list[tuple[str, str, float, float, float]] = field(default_factory=list)
    idle_window: float = 0.0
    log_errors: list[str] = field(default_factory=list)


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--store", choices=["sqlite", "postgresql", "both"], default="both")
    parser.add_argument("--iterations", type=int, default=None, help="rows 2-3 (default 50)")
    parser.add_argument("--warmup", type=int, default=None)
    parser.add_argument("--quick", action="store_true", help="fewer runs, shorter windows")
    parser.add_argument(
        "--pg",
        default="postgresql+psycopg://postgres@127.0.0.1:5432/postgres",
        help="an admin URL of the PostgreSQL server to create the run's database on",
    )
    parser.add_argument(
        "--no-peers",
        action="store_true",
        help="only the store's rows: not HiveServer2 against STS, new users, the cluster",
    )
    parser.add_argument("--figures-out", type=Path, help=argparse.SUPPRESS)
    args = parser.parse_args()
    console = Console()
    stores: dict[str, StoreFigures] = {}
    if args.store == "both":
        # A process per store: raw PySpark gets a fresh JVM (and Hive client) for each server.
        for store in ("sqlite", "postgresql"):
            with tempfile.NamedTemporaryFile(suffix=".json") as out:
                command = [sys.executable, "-m", "bench.floor", "--store", store, "--pg", args.pg]
                command += ["--no-peers", "--figures-out", out.name]
                if args.iterations is not None:
                    command += ["--iterations", str(args.iterations)]
                if args.warmup is not None:
                    command += ["--warmup", str(args.warmup)]
                if args.quick:
                    command.append("--quick")
                subprocess.run(command, check=True)
                stores[store] = StoreFigures.from_json(json.loads(Path(out.name).read_text()))
    else:
        plan = Plan.of(args)
        started = time.monotonic()
        if args.store == "postgresql":
            with fresh_pg_database(args.pg) as url:
                report = measure(console, plan, "postgresql", url)
        else:
            report = measure(console, plan, "sqlite", None)
        print_report(console, report)
        console.print(f"{args.store}: {time.monotonic() - started:.0f} s in all", style="dim")
        stores[args.store] = store_figures(report)
        if args.figures_out is not None:
            args.figures_out.write_text(json.dumps(stores[args.store].to_json()))
    if args.no_peers:
        return
    print_goals(console, stores, peers(console, quick=args.quick))


def store_figures(report: Report) -> StoreFigures:
    """The rows issue 26 sets goals for, from a store's report."""
    by_number = {row.measure.split()[0]: row for row in report.rows}
    warm, together, idle = by_number["2"], by_number["6"], by_number["7"]
    assert warm.raw and warm.gate and idle.raw and idle.gate and together.ratio
    return StoreFigures(
        warm_added=(warm.gate[0] - warm.raw[0], warm.gate[1] - warm.raw[1]),
        concurrency=together.ratio,
        idle_added=idle.gate[0] - idle.raw[0],
    )


def peers(console: Console, *, quick: bool) -> PeerFigures:
    """What is measured once, beside the stores: the HiveServer2 door against Spark Thrift
    Server, a new user's first query, a cluster engine's first query after idling."""
    figures = PeerFigures()
    step(console, "peers", "HiveServer2 against Spark Thrift Server")
    hive = hive2.compare(
        console,
        iterations=20 if quick else 50,
        warmup=5 if quick else 10,
        aggregations=2 if quick else 5,
        fetches=1 if quick else 2,
    )
    figures.hive2_select1 = hive.select1
    figures.hive2_rows_per_s = hive.rows_per_s
    step(console, "peers", "new users' first queries")
    users = first_query.new_users(console, 3 if quick else 5)
    first_query.print_rows(console, users)
    figures.new_user_first = users[0][1]
    step(console, "peers", "a cluster engine's first query after idling")
    figures.idle_seconds = first_query.IDLE
    after = first_query.after_idle(console, first_query.IDLE, rounds=1 if quick else 2)
    first_query.print_rows(console, after)
    figures.cluster_after_idle = after[1][1]
    return figures


@dataclass
class Plan:
    iterations: int
    warmup: int
    one_offs: int = 10
    engine_one_offs: int = 2
    new_sessions: int = 10
    cancels: int = 10
    concurrency_seconds: float = 20.0
    idle_window: float = 60.0
    trace_idle: float = 10.0
    trace_statements: int = 50

    @classmethod
    def of(cls, args: argparse.Namespace) -> Plan:
        if args.quick:
            return cls(
                iterations=args.iterations or 10,
                warmup=args.warmup or 3,
                engine_one_offs=1,
                new_sessions=5,
                cancels=5,
                concurrency_seconds=6.0,
                idle_window=30.0,
                trace_idle=5.0,
                trace_statements=20,
            )
        return cls(iterations=args.iterations or 50, warmup=args.warmup or 10)


def measure(console: Console, plan: Plan, store: str, store_url: str | None) -> Report:
    report = Report(store)
    trace_dir = Path(tempfile.mkdtemp(prefix="sparkgate-floor-trace-"))
    try:
        return measure_with_trace(console, plan, report, store_url, trace_dir)
    finally:
        shutil.rmtree(trace_dir, ignore_errors=True)


def measure_with_trace(
    console: Console, plan: Plan, report: Report, store_url: str | None, trace_dir: Path
) -> Report:
    store = report.store
    overrides: dict[str, Any] = {"warm_engines": 1, **SHIPPED_TIMERS}
    if store_url is not None:
        overrides["store_url"] = store_url
    with (
        bench_server_with_env(
            console, {"SPARKGATE_STORE_TRACE": str(trace_dir)}, **overrides
        ) as server,
        server.client() as sg,
    ):
        step(console, store, "raw PySpark in this process")
        spark = raw_spark(server, "bench-floor-raw")
        try:
            step(console, store, "1a-b: one-off queries")
            report.rows += one_off_queries(server, sg, plan)
            session = open_session(sg)
            step(console, store, "2-3: warm session")
            report.rows.append(warm(spark, sg, session, TRIVIAL, "2 warm session SELECT 1", plan))
            report.rows.append(
                warm(
                    spark,
                    sg,
                    session,
                    TRIVIAL,
                    "2b warm session SELECT 1, one request",
                    plan,
                    one_request=True,
                )
            )
            report.rows.append(
                warm(spark, sg, session, AGGREGATION, "3 warm session 100k-row aggregation", plan)
            )
            step(console, store, "4: new sessions")
            report.rows.append(new_sessions(sg, plan))
            step(console, store, "5: cancels")
            report.rows.append(cancels(sg, plan))
            step(console, store, "6: 8 concurrent sessions")
            report.rows.append(concurrency(server, sg, spark, plan))
        finally:
            spark.stop()
        # Last of the timings: the engines launched to refill the warm pool would burn both
        # cores for a while; their start overlaps the raw idle driver's.
        step(console, store, "1c: one-off queries on engines of their own")
        report.rows.append(old_path(sg, plan))
        idle_driver = start_raw_idle_driver(server)
        try:
            settled_engines(sg)
            step(console, store, "8: store transactions per statement")
            row, report.callers = store_round_trips(server, sg, session, trace_dir, plan)
            report.rows.append(row)
            sg.kill_session(session)
            step(console, store, "7: idle CPU")
            row, report.idle = idle_cpu(server, sg, idle_driver, plan)
            report.rows.append(row)
            report.idle_window = plan.idle_window
        finally:
            stop_group(idle_driver)
        report.log_errors = log_errors(server)
    return report


def step(console: Console, store: str, what: str) -> None:
    console.print(f"[dim]{time.strftime('%H:%M:%S')} {store}: {what}[/]")


def open_session(sg: Client) -> int:
    session_id: int = sg.create_session().id
    wait_idle(sg, session_id)
    return session_id


def wait_idle(sg: Client, session_id: int, timeout: float = 300) -> None:
    # Client.wait_session sleeps 0.2 s between looks: too coarse to time.
    deadline = time.monotonic() + timeout
    while (state := sg.session(session_id).state) != "idle":
        if state not in ("starting", "busy") or time.monotonic() > deadline:
            raise AssertionError(f"session {session_id} is {state}, not idle")
        time.sleep(0.01)


def spread(values: list[float]) -> tuple[float, float]:
    return median(values), percentile(values, 0.95)


# 1
def one_off_queries(server: ServerProcess, sg: Client, plan: Plan) -> list[Row]:
    cli = Path(sys.executable).with_name("sparkgate")
    env = {k: v for k, v in os.environ.items() if not k.startswith("SPARKGATE_")}

    def through_cli() -> None:
        subprocess.run(
            [str(cli), "sql", TRIVIAL, "--server", server.url],
            env=env,
            check=True,
            capture_output=True,
            timeout=300,
        )

    def cli_import() -> None:
        subprocess.run([sys.executable, "-c", "import sparkgate.cli.main"], env=env, check=True)

    # The shared engine's first query ever (its Hive client, code generation): apart.
    first = timed_ms(lambda: run(sg, TRIVIAL))
    through_cli()  # the CLI's files in the page cache
    by_cli = [timed_ms(through_cli) for _ in range(plan.one_offs)]
    imports = median([timed_ms(cli_import) for _ in range(3)])
    by_client = [timed_ms(lambda: run(sg, TRIVIAL)) for _ in range(plan.one_offs)]
    return [
        Row(
            "1a one-off SELECT 1, `sparkgate sql` process, ms",
            str(plan.one_offs),
            gate=(median(by_cli), max(by_cli)),
            note=f"end to end; of which Python start-up and the CLI's imports: p50 "
            f"{imports:.0f} ms",
        ),
        Row(
            "1b one-off SELECT 1, client, ms",
            str(plan.one_offs),
            gate=(median(by_client), max(by_client)),
            note=f"submit, long poll, result; before them, the fresh shared engine's first "
            f"query: {first:.0f} ms",
        ),
    ]


def old_path(sg: Client, plan: Plan) -> Row:
    own_engine = [own_engine_one_off(sg) for _ in range(plan.engine_one_offs)]
    timings = [ms for ms, _ in own_engine]
    return Row(
        "1c one-off SELECT 1, isolation=engine, ms",
        str(plan.engine_one_offs),
        gate=(median(timings), max(timings)),
        note="the old path, in turn: " + "; ".join(how for _, how in own_engine),
    )


def own_engine_one_off(sg: Client) -> tuple[float, str]:
    """Milliseconds, and where they went (waiting for an engine, running)."""
    warm = [
        e.id
        for e in sg.engines().engines
        if e.kind == "dedicated" and e.state == "running" and not e.session_id
    ]
    started = time.perf_counter()
    submitted = sg.submit(TRIVIAL, isolation="engine")
    done = sg.wait(submitted.id, timeout=600)
    assert done.state == "success", done
    sg.result(submitted.id)
    ms = (time.perf_counter() - started) * 1000
    assert done.started_at is not None and done.finished_at is not None
    created, began, finished = (
        datetime.fromisoformat(moment.replace("Z", "+00:00"))
        for moment in (done.created_at, done.started_at, done.finished_at)
    )
    ready = "a warm engine ready" if warm else "no warm engine ready"
    return ms, (
        f"{ms / 1000:.1f} s ({ready}: {(began - created).total_seconds():.1f} s to start, "
        f"{(finished - began).total_seconds():.1f} s running)"
    )


def settled_engines(sg: Client) -> list[Engine]:
    """Wait for the server's resting state: a shared and a warm dedicated engine, both idle."""

    def settled() -> list[Engine] | None:
        engines = sg.engines().engines
        kinds = sorted(e.kind for e in engines)
        busy = any(e.state != "running" or e.session_id for e in engines)
        return engines if kinds == ["dedicated", "shared"] and not busy else None

    return eventually(settled, timeout=300, interval=0.5, what="two idle engines")


# 2, 3
def warm(
    spark: Any,
    sg: Client,
    session: int,
    sql: str,
    name: str,
    plan: Plan,
    *,
    one_request: bool = False,
) -> Row:
    def through_sparkgate() -> None:
        if one_request:
            done = sg.submit(sql, session_id=session, wait=600)
            assert done.state == "success" and isinstance(done, WaitedQuery), done
        else:
            run(sg, sql, session_id=session)

    raw, gate = interleaved(
        lambda: spark.sql(sql).collect(),
        through_sparkgate,
        plan.iterations,
        plan.warmup,
    )
    how = "POST ?wait, first page in the answer" if one_request else "submit, ?wait, result"
    return Row(
        f"{name}, ms",
        str(plan.iterations),
        raw=spread(raw),
        gate=spread(gate),
        ratio=median(gate) / median(raw),
        note=f"interleaved; ratio of medians; {how}",
    )


# 4
def new_sessions(sg: Client, plan: Plan) -> Row:
    totals, to_idle = [], []
    for _ in range(plan.new_sessions):
        started = time.perf_counter()
        session_id = sg.create_session().id
        wait_idle(sg, session_id)
        to_idle.append((time.perf_counter() - started) * 1000)
        run(sg, TRIVIAL, session_id=session_id)
        totals.append((time.perf_counter() - started) * 1000)
        sg.kill_session(session_id)
    return Row(
        "4 new session on the warm engine -> first SELECT 1, ms",
        str(plan.new_sessions),
        gate=spread(totals),
        note=f"of which create -> idle: p50 {median(to_idle):.0f} ms (looked at every 10 ms)",
    )


# 5
def cancels(sg: Client, plan: Plan) -> Row:
    session_id = open_session(sg)
    times: list[float] = []
    outcomes: Counter[str] = Counter()
    for _ in range(plan.cancels):
        query_id = sg.submit(ENDLESS, session_id=session_id).id
        while (state := sg.query(query_id).state) != "running":
            assert state == "waiting", f"query {query_id} is {state}"
            time.sleep(0.02)
        time.sleep(0.5)  # its Spark job under way
        started = time.perf_counter()
        sg.cancel(query_id)
        final = sg.wait(query_id, timeout=120)
        times.append((time.perf_counter() - started) * 1000)
        outcomes[final.state] += 1
    sg.kill_session(session_id)
    states = ", ".join(f"{count} {state}" for state, count in outcomes.items())
    return Row(
        "5 cancel running query -> cancelled, ms",
        str(plan.cancels),
        gate=spread(times),
        note=f"cancel call to long poll's answer; {states}",
    )


# 6
def concurrency(server: ServerProcess, sg: Client, spark: Any, plan: Plan) -> Row:
    clients = [server.client() for _ in range(CONCURRENCY)]
    try:
        sessions = [c.create_session().id for c in clients]
        for c, s in zip(clients, sessions, strict=True):
            wait_idle(c, s)
        gate_fns: list[Callable[[], object]] = [
            functools.partial(run, c, TRIVIAL, session_id=s)
            for c, s in zip(clients, sessions, strict=True)
        ]
        raw_fns: list[Callable[[], object]] = [lambda: spark.sql(TRIVIAL).collect()] * CONCURRENCY
        half = plan.concurrency_seconds / 2
        counts = {"raw": 0, "gate": 0}
        cpu: dict[str, float] = defaultdict(float)  # CPU seconds by process: where time goes
        parts = cpu_parts(server, sg)
        for _ in range(2):  # alternating halves: both sides see the machine's drifts
            for side, fns in (("gate", gate_fns), ("raw", raw_fns)):
                before = process_ticks()
                counts[side] += loop_in_threads(fns, half)
                after = process_ticks()
                for name, pick in parts[side].items():
                    cpu[f"{side} {name}"] += cpu_seconds(before, after, pick)
        for c, s in zip(clients, sessions, strict=True):
            c.kill_session(s)
    finally:
        for c in clients:
            c.close()
    raw_rate = counts["raw"] / plan.concurrency_seconds
    gate_rate = counts["gate"] / plan.concurrency_seconds

    def per_statement(side: str) -> str:
        return ", ".join(
            f"{name} {cpu[f'{side} {name}'] * 1000 / counts[side]:.1f}" for name in parts[side]
        )

    return Row(
        "6 8 sessions x SELECT 1 loop, statements/s",
        f"{plan.concurrency_seconds:.0f} s",
        raw=(raw_rate, raw_rate),
        gate=(gate_rate, gate_rate),
        ratio=gate_rate / raw_rate,
        note="raw: 8 threads on one SparkSession; alternating halves. CPU ms per statement: "
        f"sparkgate {per_statement('gate')}; raw {per_statement('raw')}",
        single=True,
        added=False,
    )


Pick = Callable[[int, int, str], bool]  # pid, process group, name


def cpu_parts(server: ServerProcess, sg: Client) -> dict[str, dict[str, Pick]]:
    """The processes whose CPU each side of the concurrency test spends."""
    assert server.process is not None
    server_pid = server.process.pid
    engine = next(e.pid for e in sg.engines().engines if e.kind == "shared")
    me, my_group = os.getpid(), os.getpgrp()
    return {
        "gate": {
            "server": lambda pid, group, name: pid == server_pid,
            "engine python": lambda pid, group, name: pid == engine,
            "engine JVM": lambda pid, group, name: group == engine and name == "java",
            "client": lambda pid, group, name: pid == me,
        },
        "raw": {
            "python": lambda pid, group, name: pid == me,
            "JVM": lambda pid, group, name: group == my_group and name == "java",
        },
    }


def cpu_seconds(
    before: dict[int, tuple[int, str, int]], after: dict[int, tuple[int, str, int]], pick: Pick
) -> float:
    ticks = sum(
        used - before.get(pid, (group, name, 0))[2]
        for pid, (group, name, used) in after.items()
        if pick(pid, group, name)
    )
    return ticks / os.sysconf("SC_CLK_TCK")


def loop_in_threads(fns: list[Callable[[], object]], seconds: float) -> int:
    """Calls completed by one thread per function, each calling its own in a loop."""
    deadline = time.monotonic() + seconds
    done = [0] * len(fns)
    errors: list[BaseException] = []

    def loop(i: int) -> None:
        try:
            while time.monotonic() < deadline:
                fns[i]()
                done[i] += 1
        except BaseException as exc:  # reported after the join
            errors.append(exc)

    threads = [threading.Thread(target=loop, args=(i,), daemon=True) for i in range(len(fns))]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=seconds + 300)
    if errors:
        raise errors[0]
    assert not any(t.is_alive() for t in threads), "a thread did not finish"
    return sum(done)


# 8
def store_round_trips(
    server: ServerProcess, sg: Client, session: int, trace_dir: Path, plan: Plan
) -> tuple[Row, list[tuple[str, str, float, float, float]]]:
    trace = Trace(trace_dir, begin_counted=server.settings.resolved_store_url.startswith("sqlite"))
    run(sg, TRIVIAL, session_id=session)
    time.sleep(1)  # the last statement's stragglers (its session going idle) land before
    trace.mark()
    idle_started = time.perf_counter()
    time.sleep(plan.trace_idle)
    idle = trace.mark()
    idle_seconds = time.perf_counter() - idle_started
    active_started = time.perf_counter()
    for _ in range(plan.trace_statements):
        run(sg, TRIVIAL, session_id=session)
    time.sleep(0.5)  # writes after the result (the session back to idle) belong to it
    active = trace.mark()
    active_seconds = time.perf_counter() - active_started
    scale = active_seconds / idle_seconds
    n = plan.trace_statements
    server_pid = server.process.pid if server.process else -1

    def per_statement(
        key: Callable[[TraceLine], Any], value: Callable[[TraceLine], int]
    ) -> dict[Any, float]:
        totals: dict[Any, float] = defaultdict(float)
        for line in active:
            totals[key(line)] += value(line)
        for line in idle:
            totals[key(line)] -= value(line) * scale
        return {k: v / n for k, v in totals.items()}

    transactions = sum(per_statement(lambda _: 0, lambda _: 1).values())
    statements = sum(per_statement(lambda _: 0, lambda line: line.statements).values())
    background = len(idle) / idle_seconds
    by_tx = per_statement(
        lambda line: (line.pid == server_pid, line.mode, line.caller), lambda _: 1
    )
    by_sql = per_statement(
        lambda line: (line.pid == server_pid, line.mode, line.caller), lambda line: line.statements
    )
    idle_rates = Counter((line.pid == server_pid, line.mode, line.caller) for line in idle)
    callers = [
        (
            "server" if key[0] else "engine",
            f"{key[1]} {key[2]}",
            tx,
            by_sql[key],
            idle_rates[key] / idle_seconds,
        )
        for key, tx in by_tx.items()
    ]
    callers.sort(key=lambda c: -abs(c[2]))
    row = Row(
        "8 store transactions per warm statement",
        str(n),
        gate=(transactions, transactions),
        single=True,
        digits=2,
        note=f"{statements:.1f} SQL statements each; idle background "
        f"{background:.1f} transactions/s subtracted",
    )
    return row, callers


@dataclass(frozen=True)
class TraceLine:
    pid: int
    mode: str
    caller: str
    statements: int


class Trace:
    """The lines every process appended to ``<dir>/<pid>.trace`` since the last mark."""

    def __init__(self, directory: Path, *, begin_counted: bool) -> None:
        self.directory = directory
        self.offsets: dict[Path, int] = {}
        # SQLite's BEGIN is a statement the store runs (IMMEDIATE or DEFERRED): not counted.
        self.begins = 1 if begin_counted else 0

    def mark(self) -> list[TraceLine]:
        lines = []
        for path in sorted(self.directory.glob("*.trace")):
            with open(path, "rb") as f:
                f.seek(self.offsets.get(path, 0))
                data = f.read()
            complete = data[: data.rfind(b"\n") + 1]  # a line being written waits for next time
            self.offsets[path] = self.offsets.get(path, 0) + len(complete)
            for text in complete.decode().splitlines():
                mode, caller, statements = text.split("\t")
                count = max(int(statements) - self.begins, 0)
                lines.append(TraceLine(int(path.stem), mode, caller, count))
        return lines


# 7
def start_raw_idle_driver(server: ServerProcess) -> subprocess.Popen[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("SPARKGATE_")}
    env.setdefault("PYSPARK_PYTHON", sys.executable)
    return subprocess.Popen(
        [sys.executable, "-c", RAW_IDLE_DRIVER, json.dumps(raw_spark_conf(server))],
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
        env=env,
        start_new_session=True,
    )


def stop_group(process: subprocess.Popen[str]) -> None:
    with contextlib.suppress(ProcessLookupError):
        os.killpg(process.pid, signal.SIGTERM)
    try:
        process.wait(timeout=20)
    except subprocess.TimeoutExpired:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(process.pid, signal.SIGKILL)
        process.wait(timeout=10)


def idle_cpu(
    server: ServerProcess, sg: Client, idle_driver: subprocess.Popen[str], plan: Plan
) -> tuple[Row, list[tuple[str, float, str]]]:
    assert idle_driver.stdout is not None
    ready, _, _ = select.select([idle_driver.stdout], [], [], 300)
    if not ready or idle_driver.stdout.readline().strip() != "ready":
        raise AssertionError(f"the raw idle driver did not start (exit {idle_driver.poll()})")

    engines = settled_engines(sg)
    engine_pids = {f"engine {e.id} ({e.kind})": e.pid for e in engines if e.pid is not None}
    assert server.process is not None and len(engine_pids) == len(engines), engines
    metastore = read_record(server.settings.resolved_home / "metastore")
    assert metastore is not None and metastore.pid is not None
    groups = {
        "server": server.process.pid,
        **engine_pids,
        "metastore": metastore.pid,
        "raw idle driver": idle_driver.pid,
    }
    time.sleep(5)  # the sessions just ended: their last writes and the engines' clean-up
    before, started = process_ticks(), time.monotonic()
    time.sleep(plan.idle_window)
    after, elapsed = process_ticks(), time.monotonic() - started
    tick = os.sysconf("SC_CLK_TCK")

    def share(pgid: int) -> tuple[float, str]:
        parts = []
        total = 0.0
        for pid, (group, name, ticks) in sorted(after.items()):
            if group != pgid:
                continue
            used = (ticks - before.get(pid, (group, name, 0))[2]) / tick / elapsed * 100
            total += used
            parts.append(f"{name} {used:.2f}")
        return total, " + ".join(parts)

    shares = {who: share(pgid) for who, pgid in groups.items()}
    raw = shares["raw idle driver"][0]
    gate_total = sum(v for who, (v, _) in shares.items() if who != "raw idle driver")
    gate = gate_total - shares["metastore"][0]
    parts = [(who, value, detail) for who, (value, detail) in shares.items()]
    parts.append(("sparkgate total (server + engines + metastore)", gate_total, ""))
    parts.append(("floor: total - metastore - 2 x raw idle driver", gate - 2 * raw, ""))
    row = Row(
        "7 idle CPU, % of one core",
        f"{plan.idle_window:.0f} s",
        raw=(2 * raw, 2 * raw),
        gate=(gate, gate),
        ratio=gate / (2 * raw) if raw else None,
        single=True,
        digits=2,
        note="raw: 2 x a raw idle driver; sparkgate: server + 2 engines (metastore apart)",
    )
    return row, parts


def process_ticks() -> dict[int, tuple[int, str, int]]:
    """Every process's group, name and CPU ticks (user + system, all its threads)."""
    found = {}
    for entry in os.scandir("/proc"):
        if not entry.name.isdigit():
            continue
        try:
            stat = Path(entry.path, "stat").read_text()
        except OSError:
            continue
        name = stat[stat.index("(") + 1 : stat.rindex(")")]
        fields = stat[stat.rindex(")") + 2 :].split()
        found[int(entry.name)] = (int(fields[2]), name, int(fields[11]) + int(fields[12]))
    return found


def cells(row: Row) -> list[str]:
    """raw p50, raw p95, sparkgate p50, sparkgate p95, added p50, added p95, ratio."""

    def fmt(value: float) -> str:
        return f"{value:.{row.digits}f}"

    def pair(values: tuple[float, float] | None) -> list[str]:
        if values is None:
            return ["-", "-"]
        return [fmt(values[0]), "" if row.single else fmt(values[1])]

    added = ["-", "-"]
    if row.added and row.raw is not None and row.gate is not None:
        added = [f"{row.gate[0] - row.raw[0]:+.{row.digits}f}", ""]
        if not row.single:
            added[1] = f"{row.gate[1] - row.raw[1]:+.{row.digits}f}"
    ratio = "-" if row.ratio is None else f"{row.ratio:.2f}x"
    return [*pair(row.raw), *pair(row.gate), *added, ratio]


def print_report(console: Console, report: Report) -> None:
    table = Table(title=f"The floor, {report.store} store (interleaved where raw exists)")
    table.add_column("measure", no_wrap=True)
    table.add_column("n", justify="right")
    for column in (
        "raw p50",
        "raw p95",
        "sparkgate p50",
        "sparkgate p95",
        "added p50",
        "added p95",
        "ratio",
    ):
        table.add_column(column, justify="right")
    rows = sorted(report.rows, key=lambda row: row.measure.split()[0])
    for row in rows:
        table.add_row(row.measure, row.n, *cells(row))
    console.print(table)
    for row in rows:
        if row.note:
            console.print(f"{row.measure.split()[0]}: {row.note}", style="dim")
    console.print(
        "p95 of 20 or fewer samples is the maximum; 'added' is the difference of percentiles. "
        "2 cores shared with other work: noisy.",
        style="dim",
    )

    idle = Table(
        title=f"Idle CPU by process group, {report.store}, % of one core "
        f"({report.idle_window:.0f} s window)"
    )
    idle.add_column("process group", no_wrap=True)
    idle.add_column("% core", justify="right")
    idle.add_column("by process (% core)")
    for who, value, detail in report.idle:
        idle.add_row(who, f"{value:.2f}", detail)
    console.print(idle)

    callers = Table(title=f"Store transactions per warm statement by caller, {report.store}")
    callers.add_column("process")
    callers.add_column("mode and caller", no_wrap=True)
    for column in ("transactions", "SQL statements", "idle /s"):
        callers.add_column(column, justify="right")
    for process, caller, tx, sql, idle_rate in report.callers:
        if abs(tx) < 0.005 and abs(sql) < 0.005 and idle_rate < 0.005:
            continue
        callers.add_row(process, caller, f"{tx:.2f}", f"{sql:.2f}", f"{idle_rate:.2f}")
    console.print(callers)
    console.print(
        "per statement, the idle background (idle /s over the same time) subtracted",
        style="dim",
    )
    if report.log_errors:
        console.print(f"{len(report.log_errors)} error lines in the logs:", style="red")
        for line in report.log_errors[:10]:
            console.print(f"  {line}", style="red", markup=False, highlight=False)
    else:
        console.print("no ERROR lines or tracebacks in the server's and engines' logs", style="dim")


if __name__ == "__main__":
    main()
