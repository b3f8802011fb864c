"""What the benchmarks share: a sparkgate server of their own (in a temporary home, on free
ports, cleaned up after), a raw Spark driver in this process configured like an engine (same
conf, same catalog), and interleaved timing so both sides see the same machine noise."""

from __future__ import annotations

import contextlib
import os
import signal
import socket
import statistics
import subprocess
import tempfile
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from rich.console import Console

from sparkgate.catalog.metastore import pyspark_jars, stop_metastore
from sparkgate.client import Client
from sparkgate.settings import Settings
from sparkgate_dev import (
    TEST_SPARK_CONF,
    ServerProcess,
    eventually,
    free_port,
    kill_engines,
    local_test_settings,
)

# The timers an idle server and its engines run on, at their shipped defaults (the tests'
# fast ones would add background work to a 2-core machine).
SHIPPED_TIMERS = {
    name: Settings.model_fields[name].default
    for name in (
        "engine_heartbeat_interval",
        "engine_heartbeat_timeout",
        "duty_interval",
        "lease_ttl",
        "hint_safety_poll",
    )
}


@contextmanager
def bench_server(
    console: Console, *, wait_engines: bool = True, **overrides: Any
) -> Iterator[ServerProcess]:
    """A started server (embedded defaults unless ``overrides`` say otherwise); its engines
    and embedded metastore are stopped afterwards."""
    with bench_server_with_env(console, {}, wait_engines=wait_engines, **overrides) as server:
        yield server


@contextmanager
def bench_server_with_env(
    console: Console, env: dict[str, str], *, wait_engines: bool = True, **overrides: Any
) -> Iterator[ServerProcess]:
    """:func:`bench_server` with ``env`` added to the server's environment (its engines
    inherit it: e.g. ``SPARKGATE_STORE_TRACE``)."""
    with tempfile.TemporaryDirectory(prefix="sparkgate-bench-") as tmp:
        values = {"warm_engines": 0, "metastore_uri": None, "metastore_port": free_port()}
        settings = local_test_settings(Path(tmp) / "home", **{**values, **overrides})
        server = ServerProcess(settings)
        server.env.update(env)
        console.print("starting sparkgate...")
        server.start()
        try:
            if wait_engines:
                server.wait_engines_running()
            yield server
        finally:
            server.stop()
            kill_engines(settings)
            stop_metastore(settings)


def raw_spark(server: ServerProcess, app_name: str, **conf: str) -> Any:
    """A SparkSession in this process like one of the server's engines: same Spark conf and
    the same catalog (the server's metastore, when it runs one)."""
    from pyspark.sql import SparkSession

    from sparkgate.engine.spark import quiet_query_error_logs

    builder = SparkSession.builder.appName(app_name)
    for key, value in raw_spark_conf(server, **conf).items():
        builder = builder.config(key, value)
    spark = builder.getOrCreate()
    spark.sparkContext.setLogLevel("ERROR")
    quiet_query_error_logs()
    return spark


def raw_spark_conf(server: ServerProcess, **conf: str) -> dict[str, str]:
    """The Spark conf of :func:`raw_spark` (for a raw driver in a process of its own)."""
    from sparkgate.engine.spark import engine_spark_conf

    settings = server.settings
    if settings.catalog == "hive" and not settings.metastore_uri:
        uri = f"thrift://127.0.0.1:{settings.metastore_port}"
        settings = settings.model_copy(update={"metastore_uri": uri})
    return {
        **engine_spark_conf(settings, TEST_SPARK_CONF),
        "spark.ui.showConsoleProgress": "false",
        **conf,
    }


def interleaved(
    first: Callable[[], object], second: Callable[[], object], iterations: int, warmup: int
) -> tuple[list[float], list[float]]:
    """Milliseconds per call of each, alternating calls after ``warmup`` untimed rounds."""

    def timed(fn: Callable[[], object]) -> float:
        start = time.perf_counter()
        fn()
        return (time.perf_counter() - start) * 1000

    for _ in range(warmup):
        first()
        second()
    firsts, seconds = [], []
    for _ in range(iterations):
        firsts.append(timed(first))
        seconds.append(timed(second))
    return firsts, seconds


def run(sg: Client, sql: str, **submit: Any) -> None:
    """Submit, long-poll to the end, read the result: what a client does."""
    submitted = sg.submit(sql, **submit)
    done = sg.wait(submitted.id, timeout=600)
    assert done.state == "success", done
    sg.result(submitted.id)


def timed_ms(fn: Callable[[], object]) -> float:
    started = time.perf_counter()
    fn()
    return (time.perf_counter() - started) * 1000


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


def median(values: list[float]) -> float:
    return statistics.median(values)


# -- Spark Thrift Server, the peer of the HiveServer2 door ---------------------------------------


@dataclass(frozen=True)
class ThriftServer:
    pid: int
    port: int


@contextmanager
def spark_thrift_server(
    console: Console, *, catalog: str = "in-memory", log_dir: Path | None = None
) -> Iterator[ThriftServer]:
    """Spark Thrift Server from pyspark's jars with the engines' Spark (local[2], the test
    conf), in a temporary directory (Derby metastore, warehouse, log unless ``log_dir``),
    stopped with its whole process group afterwards, whatever happens. ``catalog``: Spark's
    ``in-memory`` catalog, or ``hive`` (that Derby metastore, as dbt needs for schemas)."""
    with tempfile.TemporaryDirectory(prefix="sparkgate-bench-sts-") as tmp:
        port = free_port()
        spark_home = pyspark_jars().parent
        conf = {
            **TEST_SPARK_CONF,
            "spark.sql.catalogImplementation": catalog,
            "spark.sql.warehouse.dir": f"{tmp}/warehouse",
            "spark.ui.showConsoleProgress": "false",
            "spark.hadoop.javax.jdo.option.ConnectionURL": (
                f"jdbc:derby:;databaseName={tmp}/metastore_db;create=true"
            ),
        }
        driver_memory = conf.pop("spark.driver.memory")
        command = [
            str(spark_home / "bin" / "spark-submit"),
            "--class",
            "org.apache.spark.sql.hive.thriftserver.HiveThriftServer2",
            "--master",
            "local[2]",
            "--driver-memory",
            driver_memory,
            *(arg for key, value in conf.items() for arg in ("--conf", f"{key}={value}")),
            *("--hiveconf", f"hive.server2.thrift.port={port}"),
            *("--hiveconf", "hive.server2.thrift.bind.host=127.0.0.1"),
            *("--hiveconf", "hive.server2.authentication=NONE"),
            "spark-internal",
        ]
        env = {k: v for k, v in os.environ.items() if not k.startswith(("SPARK_", "PYSPARK_"))}
        log_path = (log_dir or Path(tmp)) / "sts.log"
        console.print("starting Spark Thrift Server...")
        with open(log_path, "wb") as log:
            process = subprocess.Popen(
                command,
                cwd=tmp,
                env={**env, "SPARK_HOME": str(spark_home)},
                stdout=log,
                stderr=subprocess.STDOUT,
                start_new_session=True,
            )
        try:

            def listening() -> bool:
                if process.poll() is not None:
                    tail = log_path.read_text(errors="replace")[-5000:]
                    raise RuntimeError(f"STS exited with {process.returncode}:\n{tail}")
                with socket.socket() as sock:
                    return sock.connect_ex(("127.0.0.1", port)) == 0

            eventually(listening, timeout=240, interval=0.2, what=f"STS on port {port}")
            yield ThriftServer(process.pid, port)
        finally:
            stop_group(process)


def stop_group(process: subprocess.Popen[Any]) -> None:
    """SIGTERM a process group we started, SIGKILL it if it lingers."""
    for sig, wait in ((signal.SIGTERM, 30), (signal.SIGKILL, 10)):
        with contextlib.suppress(ProcessLookupError):
            os.killpg(process.pid, sig)
        try:
            process.wait(timeout=wait)
            return
        except subprocess.TimeoutExpired:
            continue


def log_errors(server: ServerProcess) -> list[str]:
    """ERROR lines and tracebacks in the server's and its engines' logs: a run should have none."""
    found = []
    for path in [server.log_path, *sorted(server.settings.logs_dir.glob("*.log"))]:
        for line in path.read_text(errors="replace").splitlines():
            if " ERROR " in line or line.startswith("Traceback"):
                found.append(f"{path.name}: {line[:200]}")
    return found


def cpu_ticks(groups: dict[str, list[int]]) -> dict[str, int]:
    """CPU ticks (user + system, all threads) of each named set of processes."""
    totals = {}
    for name, pids in groups.items():
        total = 0
        for pid in pids:
            with contextlib.suppress(OSError):
                stat = Path(f"/proc/{pid}/stat").read_text()
                fields = stat[stat.rindex(")") + 2 :].split()
                total += int(fields[11]) + int(fields[12])
        totals[name] = total
    return totals
