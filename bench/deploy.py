"""Deploys: what reconciling manifests costs, next to doing the same by hand in raw PySpark.

    scripts/bench deploy [--levels 1,4,8] [--plans 50] [--repeats 3]

Starts a sparkgate server (SQLite store, Spark local[2], in-memory catalog) in a temporary
home and measures, in one run, against raw PySpark in this process (same Spark conf):

1. Checking and planning: ``POST /v1/deployments`` with ``plan_only`` for N manifests
   (YAML, template merge, validation, canonical SQL fingerprints, the stream script check,
   the plan from the store). Raw PySpark has no equivalent: nothing is checked before it runs.
2. Starting N new streaming jobs (``rate -> filter -> table``, with metadata columns): from the
   deploy request to the deployment ``succeeded`` (every job's query started), on a warm
   streaming engine. Raw: the same N queries started in one SparkSession (``toTable``).
3. A configuration change of one running job: stop at a batch boundary and resume from the
   checkpoint (``restart-resume``), request to ``succeeded``. Raw: wait for the batch to end,
   ``stop()``, ``start()`` again from the checkpoint.
4. A batch job run (sources, then the atomic replace of its table, metadata columns), request
   to ``succeeded``. Raw: ``saveAsTable(mode="overwrite")`` of the same query.
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import textwrap
import time
from functools import partial
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.table import Table

from sparkgate.client import Client
from sparkgate.schemas.jobs import Deployment
from sparkgate.streaming.runner import stop_gracefully
from sparkgate_dev import ServerProcess, eventually, kill_engines, local_test_settings

TEMPLATE = {"path": "template.yaml", "content": "trigger: 1s\nretry: {min-backoff: 1s}\n"}
QUERY = "SELECT value, value % 10 AS k FROM src WHERE value % 3 = 0"
BATCH = "SELECT id % 100 AS k, count(*) AS n, sum(id % 7) AS s FROM range(2000000) GROUP BY 1"


def stream_manifest(name: str, extra: str = "") -> dict[str, str]:
    text = textwrap.dedent(
        f"""\
        name: {name}
        description: bench job {name}
        target-table: {name}_out
        sources: ["CREATE STREAM src USING rate OPTIONS ('rowsPerSecond'='20')"]
        sql: {QUERY}
        """
    )
    return {"path": f"{name}.yaml", "content": text + extra}


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--levels", default="1,4,8", help="new streaming jobs per deploy")
    parser.add_argument("--plans", type=int, default=50, help="manifests in the planning run")
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    console = Console()
    with tempfile.TemporaryDirectory(prefix="sparkgate-bench-deploy-") as tmp:
        home = Path(tmp) / "home"
        settings = local_test_settings(home, catalog="in-memory", warm_engines=0)
        server = ServerProcess(settings)
        console.print("starting sparkgate (server and shared engine)...")
        server.start()
        spark = None
        try:
            server.wait_engines_running()
            with server.client() as sg:
                spark = raw_spark(home)
                table = Table(title="Deploys (seconds, medians)")
                for column in ("what", "sparkgate", "raw PySpark", "note"):
                    table.add_column(column, justify="right" if column != "what" else "left")
                planned = planning(sg, args.plans, args.repeats)
                table.add_row(f"check and plan {args.plans} manifests", f"{planned:.3f}", "-", "")
                console.print("  planned; warming the streaming engine...")
                engine = warm_up(sg)
                table.add_row("first job (starts the streaming engine)", f"{engine:.1f}", "-", "")
                for n in [int(x) for x in args.levels.split(",")]:
                    gate = deploy_new(sg, n, args.repeats)
                    raw = raw_new(spark, home, n, args.repeats)
                    table.add_row(
                        f"start {n} new streaming job(s)", f"{gate:.2f}", f"{raw:.2f}", ""
                    )
                    console.print(f"  {n} new jobs: {gate:.2f}s / raw {raw:.2f}s")
                gate = restart_resume(sg, args.repeats)
                raw = raw_restart(spark, home, args.repeats)
                table.add_row(
                    "configuration change (stop, resume)", f"{gate:.2f}", f"{raw:.2f}", "trigger 1s"
                )
                gate = batch_runs(sg, args.repeats)
                raw = raw_batch(spark, args.repeats)
                table.add_row(
                    "batch job run (2M rows aggregated)",
                    f"{gate:.2f}",
                    f"{raw:.2f}",
                    "atomic replace",
                )
            console.print(table)
        finally:
            if spark is not None:
                spark.stop()
            server.stop()
            kill_engines(settings)


def timed_deploy(
    sg: Client, manifests: list[dict[str, str]], **options: Any
) -> tuple[float, Deployment]:
    start = time.perf_counter()
    submitted = sg.deploy(manifests, template=TEMPLATE, **options)
    if options.get("plan_only"):
        return time.perf_counter() - start, submitted
    done = sg.wait_deployment(submitted.id, timeout=600)
    elapsed = time.perf_counter() - start
    assert done.state == "succeeded", done
    return elapsed, done


def planning(sg: Client, count: int, repeats: int) -> float:
    manifests = [stream_manifest(f"plan{i}") for i in range(count)]
    return statistics.median(timed_deploy(sg, manifests, plan_only=True)[0] for _ in range(repeats))


def warm_up(sg: Client) -> float:
    elapsed, _ = timed_deploy(sg, [stream_manifest("warm")], prune=True)
    return elapsed


def deploy_new(sg: Client, n: int, repeats: int) -> float:
    """Deploy n new jobs (the previous round's are pruned first, which is not timed)."""
    times = []
    for round_ in range(repeats):
        names = [f"n{n}r{round_}j{i}" for i in range(n)]
        keep = [stream_manifest("warm")]
        elapsed, _ = timed_deploy(sg, keep + [stream_manifest(x) for x in names])
        times.append(elapsed)
        timed_deploy(sg, keep, prune=True)
    return statistics.median(times)


def restart_resume(sg: Client, repeats: int) -> float:
    times = []
    for round_ in range(repeats):
        change = f"properties: {{spark.sql.shuffle.partitions: {round_ + 3}}}\n"
        eventually(lambda: _progress(sg, "warm") >= 2, timeout=120, what="warm progress")
        elapsed, done = timed_deploy(sg, [stream_manifest("warm", change)])
        assert done.decisions[0].action == "restart-resume", done
        times.append(elapsed)
    return statistics.median(times)


def batch_runs(sg: Client, repeats: int) -> float:
    manifest = {
        "path": "totals.yaml",
        "content": f"name: totals\nmode: batch\ntarget-table: totals_out\nsql: {BATCH}\n",
    }
    timed_deploy(sg, [stream_manifest("warm"), manifest])
    times = []
    for _ in range(repeats + 1):
        start = time.perf_counter()
        run = sg.wait_job_run("totals", sg.run_job("totals").id, timeout=600)
        times.append(time.perf_counter() - start)
        assert run.state == "succeeded", run
    return statistics.median(times[1:])  # the first run warms the shared engine's session


def _progress(sg: Client, job: str) -> int:
    queries = sg.stream(job).queries
    last = (queries[0].last_progress or {}) if queries else {}
    return int(last.get("batch_id", -1)) if queries and queries[0].state == "running" else -1


# -- raw PySpark --------------------------------------------------------------------------


def raw_spark(home: Path) -> Any:
    from pyspark.sql import SparkSession

    from sparkgate_dev import TEST_SPARK_CONF

    builder = SparkSession.builder.appName("bench-deploy-raw").master("local[2]")
    for key, value in {
        **TEST_SPARK_CONF,
        "spark.sql.catalogImplementation": "in-memory",
        "spark.sql.warehouse.dir": str(home / "raw-warehouse"),
        "spark.ui.showConsoleProgress": "false",
    }.items():
        builder = builder.config(key, value)
    spark = builder.getOrCreate()
    spark.sparkContext.setLogLevel("OFF")
    return spark


def _raw_query(spark: Any, home: Path, name: str) -> Any:
    session = spark.newSession()
    session.readStream.format("rate").option("rowsPerSecond", 20).load().createOrReplaceTempView(
        "src"
    )
    df = session.sql(
        f"SELECT q.*, current_timestamp() AS __create_timestamp, '{name}' AS __query_name "
        f"FROM ({QUERY}) q"
    )
    return (
        df.writeStream.queryName(name)
        .trigger(processingTime="1 second")
        .option("checkpointLocation", str(home / "raw-checkpoints" / name))
        .toTable(f"{name}_out")
    )


def raw_new(spark: Any, home: Path, n: int, repeats: int) -> float:
    times = []
    for round_ in range(repeats):
        start = time.perf_counter()
        queries = [_raw_query(spark, home, f"raw{n}r{round_}j{i}") for i in range(n)]
        times.append(time.perf_counter() - start)
        for query in queries:
            query.stop()
    return statistics.median(times)


def raw_restart(spark: Any, home: Path, repeats: int) -> float:
    query = _raw_query(spark, home, "rawrestart")
    times = []
    try:
        for _ in range(repeats):
            eventually(partial(_batches, query), timeout=120, what="raw progress")
            start = time.perf_counter()
            stop_gracefully(query, 60)
            query = _raw_query(spark, home, "rawrestart")
            times.append(time.perf_counter() - start)
    finally:
        query.stop()
    return statistics.median(times)


def _batches(query: Any) -> bool:
    return bool((query.lastProgress or {}).get("batchId", -1) >= 2)


def raw_batch(spark: Any, repeats: int) -> float:
    times = []
    for _ in range(repeats + 1):
        start = time.perf_counter()
        spark.sql(BATCH).write.mode("overwrite").saveAsTable("raw_totals")
        times.append(time.perf_counter() - start)
    return statistics.median(times[1:])


if __name__ == "__main__":
    main()
