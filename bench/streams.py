"""Streaming: how many simple queries one engine sustains, and how fast failures are repaired.

    scripts/bench streams [--levels 1,4,8,16,32] [--seconds 20] [--failures 5]

Starts a sparkgate server (SQLite store, Spark local[2]) in a temporary home and measures, in
one run, against raw PySpark in this process (same Spark conf) where a comparison exists:

1. Concurrency: N queries ``rate (100 rows/s) -> filter -> noop``, trigger 1 s, all in one
   stream job (so one engine); a level is sustained when every query completes at least 90%
   of the micro-batches its trigger asks for and p95 batch time stays under the trigger.
   sparkgate reads progress from its store (sampled every ``stream_progress_interval``); raw
   PySpark from ``StreamingQuery.recentProgress``.
2. Restart after a query failure: a UDF raises at chosen rows (once each). Detection is the
   time from the raise to the supervisor recording the failure; restart is the time from then
   to the new run started, minus the backoff (100 ms here). Raw PySpark: a hand-written
   ``awaitTermination()``/``start()`` loop, the least a supervisor can do.
3. Restart after an engine death: SIGKILL the streaming engine; time until the job is
   declared lost (heartbeat timeout), relaunched, and its query runs and makes progress again.
"""

from __future__ import annotations

import argparse
import contextlib
import importlib
import os
import re
import signal
import statistics
import sys
import time
from collections.abc import Sequence
from datetime import datetime
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.table import Table

from bench.harness import bench_server, percentile, raw_spark
from sparkgate.client import Client
from sparkgate.schemas.streams import StreamJobDetail, StreamRestart
from sparkgate_dev import ServerProcess, eventually

BENCH = Path(__file__).resolve().parent
RATE = 100  # rows per second per query
TRIGGER = 1.0  # seconds
BACKOFF = 0.1
_RAISED = re.compile(r"raised at (\d+\.\d+)")


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--levels", default="1,4,8,16,32")
    parser.add_argument("--seconds", type=float, default=20.0, help="measuring window per level")
    parser.add_argument("--failures", type=int, default=5, help="injected query failures")
    args = parser.parse_args()
    console = Console()
    # The UDF module is imported by its own name: by the engines (udf_modules) and their
    # Python workers, and by the raw PySpark run here, so bench/ is on every path.
    os.environ["PYTHONPATH"] = os.pathsep.join(
        p for p in (str(BENCH), os.environ.get("PYTHONPATH")) if p
    )
    sys.path.insert(0, str(BENCH))
    with bench_server(
        console,
        wait_engines=False,  # the streaming engine starts with the first job
        catalog="in-memory",
        shared_engine=False,
        udf_modules=["stream_udfs"],
        stream_progress_interval=2.0,
        stream_retry_min_backoff=BACKOFF,
        stream_engine_max_jobs=64,
    ) as server:
        home = server.home
        spark = raw_spark(server, "bench-streams-raw")
        try:
            with server.client() as sg:
                levels = [int(n) for n in args.levels.split(",")]
                console.print(concurrency_table(sg, spark, levels, args.seconds, console))
                console.print(f"  {args.failures} injected query failures, sparkgate...")
                gate = sparkgate_failures(sg, home, args.failures)
                console.print(f"  {args.failures} injected query failures, raw...")
                raw = raw_failures(spark, home, args.failures)
                console.print("  engine death (SIGKILL), sparkgate...")
                death = engine_death(sg, server)
        finally:
            spark.stop()
    console.print(restart_table(gate, raw, death))
    console.print(
        f"query fails: 'running again' counts from detection and leaves out the "
        f"{BACKOFF:g}s backoff. engine SIGKILLed: heartbeat timeout "
        f"{server.settings.engine_heartbeat_timeout:g}s (default 30s); the new engine was up "
        f"{death['engine']:.1f}s after the kill; raw PySpark has no supervisor.",
        style="dim",
    )


def concurrency_table(
    sg: Client, spark: Any, levels: list[int], seconds: float, console: Console
) -> Table:
    """Levels in order, sparkgate then raw PySpark at each, up to the first not sustained."""
    table = Table(
        title=f"Concurrent queries in one engine: rate {RATE} rows/s -> filter -> noop, "
        f"trigger {TRIGGER:g}s, {seconds:g}s window"
    )
    columns = ("queries", "system", "batches done / due", "p50 ms", "p95 ms", "sustained")
    for column in columns:
        table.add_column(column, justify="right")
    for n in levels:
        saturated = False
        for system, measure in (("sparkgate", sparkgate_level), ("raw", raw_level)):
            try:
                done, due, durations = measure(sg if system == "sparkgate" else spark, n, seconds)
            except AssertionError:  # not every query made progress in time
                row = ("-", "-", "-", "NO (start)")
                saturated = True
            else:
                p50 = statistics.median(durations) if durations else float("nan")
                p95 = percentile(durations, 0.95) if durations else float("nan")
                ok = done >= 0.9 * due and p95 <= TRIGGER * 1000
                saturated |= not ok
                row = (f"{done} / {due}", f"{p50:.0f}", f"{p95:.0f}", "yes" if ok else "NO")
            table.add_row(str(n), system, *row)
            console.print(f"  {n} queries, {system}: " + ", ".join(row))
        if saturated:
            break
    return table


def restart_table(
    gate: tuple[list[float], list[float]],
    raw: tuple[list[float], list[float]],
    death: dict[str, float],
) -> Table:
    table = Table(title="Detection to restart, seconds after the failure (medians)")
    for column in ("failure", "system", "detected", "running again", "progress again"):
        table.add_column(column, justify="right")
    for system, (detected, restarted) in (("sparkgate", gate), ("raw loop", raw)):
        table.add_row(
            "query fails",
            system,
            f"{statistics.median(detected):.3f}",
            f"{statistics.median(restarted):.3f}",
            "-",
        )
    table.add_row(
        "engine SIGKILLed",
        "sparkgate",
        f"{death['detected']:.1f}",
        f"{death['running']:.1f}",
        f"{death['progress']:.1f}",
    )
    table.add_row("engine SIGKILLed", "raw", "never", "never", "never")
    return table


# -- concurrency -------------------------------------------------------------------------


def sparkgate_level(sg: Client, n: int, seconds: float) -> tuple[int, int, list[float]]:
    name = f"level-{n}"
    script = (
        f"CREATE STREAM src USING rate OPTIONS ('rowsPerSecond'='{RATE}');\n"
        "CREATE TEMPORARY VIEW r AS SELECT value % 10 AS k, value FROM src WHERE value % 3 = 0;\n"
        + "".join(
            f"SAVE STREAM r TO noop IDENTIFIED BY q{i} TRIGGER {TRIGGER:g}s;\n" for i in range(n)
        )
    )
    sg.create_stream(name, script)
    try:
        # Poll gently: status reads must not load the machine being measured.
        eventually(
            lambda: _all_progressing(sg.stream(name), n, 2),
            timeout=60 + 10 * n,
            interval=2.0,
            what=f"{n} queries",
        )
        start = time.time()
        time.sleep(seconds)
        job = sg.stream(name)
        samples = [
            [(_epoch(p.at), p.batch_id, p.batch_duration_ms) for p in q.recent_progress]
            for q in job.queries
        ]
        return _rates(samples, start)
    finally:
        sg.stop_stream(name)
        sg.wait_stream(name, {"stopped", "failed"}, timeout=300)
        sg.delete_stream(name)


def _rates(
    samples: Sequence[Sequence[tuple[float, int, float | None]]], start: float
) -> tuple[int, int, list[float]]:
    """Batches done and due over the window, from each query's progress samples in it (the
    first and last sample bound the time: sparkgate's samples are every few seconds)."""
    done = 0
    due = 0.0
    durations: list[float] = []
    for query in samples:
        window = sorted(s for s in query if s[0] >= start)
        if len(window) < 2:
            continue
        done += window[-1][1] - window[0][1]
        due += (window[-1][0] - window[0][0]) / TRIGGER
        durations += [d for _, _, d in window[1:] if d is not None]
    return done, round(due), durations


def _all_progressing(job: StreamJobDetail, n: int, batches: int) -> dict[str, int] | None:
    queries = job.queries
    if job.state != "running" or len(queries) != n:
        return None
    seen = {}
    for query in queries:
        last = query.last_progress
        if last is None or last["batch_id"] < batches:
            return None
        seen[query.name] = int(last["batch_id"])
    return seen


def raw_level(spark: Any, n: int, seconds: float) -> tuple[int, int, list[float]]:
    source = spark.readStream.format("rate").option("rowsPerSecond", RATE).load()
    frame = source.selectExpr("value % 10 AS k", "value").where("value % 3 = 0")
    queries = [
        frame.writeStream.format("noop")
        .queryName(f"raw{i}")
        .trigger(processingTime=f"{int(TRIGGER * 1000)} milliseconds")
        .start()
        for i in range(n)
    ]
    try:

        def progressing() -> bool:
            return all(q.lastProgress and q.lastProgress["batchId"] >= 2 for q in queries)

        eventually(progressing, timeout=60 + 10 * n, interval=2.0, what=f"{n} raw queries")
        start = time.time()
        time.sleep(seconds)
        samples = [
            [
                (_epoch(p["timestamp"]), int(p["batchId"]), float(p["batchDuration"]))
                for p in q.recentProgress
            ]
            for q in queries
        ]
        return _rates(samples, start)
    finally:
        for query in queries:
            query.stop()


# -- failures ----------------------------------------------------------------------------


def sparkgate_failures(sg: Client, home: Path, count: int) -> tuple[list[float], list[float]]:
    markers = home / "markers-gate"
    markers.mkdir()
    bad = ",".join(str(200 * (i + 1)) for i in range(count))
    sg.create_stream(
        "failures",
        f"CREATE STREAM src USING rate OPTIONS ('rowsPerSecond'='{RATE}');\n"
        f"CREATE TEMPORARY VIEW r AS SELECT fail_once(value, '{bad}', '{markers}') AS v FROM src;\n"
        "SAVE STREAM r TO noop TRIGGER 200ms OPTIONS "
        "('retry.min.backoff'='100ms', 'retry.stable.period'='1s')",
    )
    try:

        def restarted_enough() -> list[StreamRestart] | None:
            queries = sg.stream("failures").queries
            restarts = queries[0].recent_restarts if queries else []
            done = [r for r in restarts if r.restarted_at is not None]
            return done if len(done) >= count else None

        restarts = eventually(restarted_enough, timeout=300, what=f"{count} restarts")
    finally:
        sg.stop_stream("failures")
        sg.wait_stream("failures", {"stopped", "failed"}, timeout=300)
        sg.delete_stream("failures")
    detected, restarted = [], []
    for restart in restarts:
        assert restart.error is not None and restart.restarted_at is not None, restart
        raised = float(_RAISED.findall(restart.error.message)[-1])
        failed_at = _epoch(restart.failed_at)
        detected.append(failed_at - raised)
        restarted.append(_epoch(restart.restarted_at) - failed_at - restart.delay)
    return detected, restarted


def raw_failures(spark: Any, home: Path, count: int) -> tuple[list[float], list[float]]:
    # By its own name, as the engines import it: a UDF pickled by reference must name a
    # module Spark's Python workers find on their PYTHONPATH (bench/, set in main()).
    stream_udfs = importlib.import_module("stream_udfs")

    markers = home / "markers-raw"
    markers.mkdir()
    spark.udf.register("fail_once", stream_udfs.fail_once, "bigint")
    bad = ",".join(str(200 * (i + 1)) for i in range(count))
    frame = (
        spark.readStream.format("rate")
        .option("rowsPerSecond", RATE)
        .load()
        .selectExpr(f"fail_once(value, '{bad}', '{markers}') AS v")
    )
    checkpoint = str(home / "raw-failures-checkpoint")

    def start() -> Any:
        return (
            frame.writeStream.format("noop")
            .trigger(processingTime="200 milliseconds")
            .option("checkpointLocation", checkpoint)
            .start()
        )

    detected, restarted = [], []
    query = start()
    try:
        for _ in range(count):
            with contextlib.suppress(Exception):
                query.awaitTermination()
            noticed = time.time()
            message = str(query.exception())
            detected.append(noticed - float(_RAISED.findall(message)[-1]))
            time.sleep(BACKOFF)
            began = time.time()
            query = start()
            restarted.append(time.time() - began)
    finally:
        query.stop()
    return detected, restarted


def engine_death(sg: Client, server: ServerProcess) -> dict[str, float]:
    sg.create_stream(
        "survivor",
        f"CREATE STREAM src USING rate OPTIONS ('rowsPerSecond'='{RATE}');\n"
        "SAVE STREAM src TO noop TRIGGER 500ms",
    )
    try:
        before = eventually(
            lambda: _all_progressing(sg.stream("survivor"), 1, 2), timeout=300, what="running"
        )
        job = sg.stream("survivor")
        engine_id = job.queries[0].engine_id
        assert engine_id is not None
        with server.store() as store:
            engine = store.engines.get(engine_id)
        assert engine.pid is not None
        killed = time.time()
        os.killpg(engine.pid, signal.SIGKILL)
        eventually(
            lambda: sg.stream("survivor").state == "restarting",
            timeout=120,
            interval=0.05,
            what="the job to be declared lost",
        )
        detected = time.time() - killed
        eventually(lambda: sg.stream("survivor").state == "starting", timeout=60, interval=0.05)

        def engine_up() -> bool:
            with server.store() as store:
                live = [
                    e
                    for e in store.engines.list_all()
                    if e.kind.value == "streaming" and e.id != engine_id
                ]
            return bool(live) and live[-1].state.value == "running"

        eventually(engine_up, timeout=300, interval=0.1, what="a new engine")
        engine_ready = time.time() - killed

        def query_running() -> bool:
            query = sg.stream("survivor").queries[0]
            return bool(query.state == "running" and query.engine_id != engine_id)

        eventually(query_running, timeout=300, interval=0.05, what="the query to run again")
        running = time.time() - killed
        first = before["src"]

        def progress_again() -> bool:
            last = sg.stream("survivor").queries[0].last_progress or {}
            return int(last.get("batch_id", 0)) > first

        eventually(progress_again, timeout=300, interval=0.05, what="progress")
        return {
            "detected": detected,
            "engine": engine_ready,
            "running": running,
            "progress": time.time() - killed,
        }
    finally:
        sg.stop_stream("survivor")
        sg.wait_stream("survivor", {"stopped", "failed"}, timeout=300)


# -- helpers -----------------------------------------------------------------------------


def _epoch(text: str) -> float:
    return datetime.fromisoformat(text.replace("Z", "+00:00")).timestamp()


if __name__ == "__main__":
    main()
