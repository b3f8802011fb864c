"""What the benchmarks share: a sparkgate server of their own (in a temporary home, on free
ports, cleaned up after), a raw Spark driver in this process configured like an engine (same
conf, same catalog), and interleaved timing so both sides see the same machine noise."""

from __future__ import annotations

import statistics
import tempfile
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from rich.console import Console

from sparkgate.catalog.metastore import stop_metastore
from sparkgate.testing import (
    TEST_SPARK_CONF,
    ServerProcess,
    free_port,
    kill_engines,
    local_test_settings,
)


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


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


def median(values: list[float]) -> float:
    return statistics.median(values)
