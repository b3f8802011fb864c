"""Engines as pods against engines as local processes, in one run.

    scripts/bench kube [--launches 10] [--at-once 8] [--statements 50] [--sessions 30]

Starts the local Kubernetes (tests/kube's control plane and test kubelet) and installs the
Helm chart with one node, engines as pods (sparkgate_dev.kube.release); and a local server
(same settings: in-memory catalog, no warm engine, Spark's defaults for the engine). On each:

- launch to first answer: ``--launches`` one-off ``SELECT 1`` queries each given an engine of
  its own (``isolation: engine``), one after the other: the time from submit to answer (an
  engine launched, started, asked for its executor, ran the query);
- ``--at-once`` such queries submitted together: the time until the last answered;
- ``--statements`` warm ``SELECT 1`` in one session (the shared engine), p50: what a node on
  Kubernetes adds per statement (the node in a pod, the engine in another, executors in pods);
- memory (Kubernetes only): the shared engine's driver pod (Python and JVM) and one executor
  pod, resident, idle, and after ``--sessions`` sessions ran a query each, for sizing.

On Kubernetes executors are pods of their own (the engine asks the API server for them); a
local engine runs Spark in local mode inside its driver: the launch figures compare what a user
waits for, not equal work.
"""

from __future__ import annotations

import argparse
import contextlib
import statistics
import subprocess
import tempfile
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import httpx
from rich.console import Console
from rich.table import Table
from tests.conftest import _pg_schema

from bench.harness import bench_server
from bench.hive2 import rss_kb
from sparkgate_dev.kube import Cluster, ensure_built
from sparkgate_dev.kube.release import ENGINES, EXECUTORS, installed, run, small_values

SETTINGS = {"catalog": "in-memory", "warm_engines": 0}


FINAL = {"success", "failed", "cancelled"}


def one_off(api: httpx.Client) -> float:
    started = time.monotonic()
    query = run(api, "SELECT 1 AS one", wait=120, isolation="engine")
    while query["state"] not in FINAL:  # a wait ends after SPARKGATE_LONG_POLL_MAX (120 s)
        query = api.get(f"/v1/queries/{query['id']}", params={"wait": 120}).json()
    assert query["state"] == "success", query
    return time.monotonic() - started


def launches(api: httpx.Client, count: int) -> list[float]:
    return [one_off(api) for _ in range(count)]


def at_once(url: str, auth: tuple[str, str] | None, count: int) -> float:
    def each(_: int) -> float:
        with httpx.Client(base_url=url, auth=auth, timeout=900) as api:
            return one_off(api)

    started = time.monotonic()
    with ThreadPoolExecutor(count) as pool:
        list(pool.map(each, range(count)))
    return time.monotonic() - started


def statements(api: httpx.Client, count: int) -> float:
    """p50 ms of a warm SELECT 1 in one session on the shared engine."""
    session = api.post("/v1/sessions", json={}).json()["id"]
    run(api, "SELECT 1", session_id=session)  # placed and warm
    times = []
    for _ in range(count):
        started = time.monotonic()
        query = run(api, "SELECT 1", session_id=session)
        times.append((time.monotonic() - started) * 1000)
        assert query["state"] == "success", query
    api.delete(f"/v1/sessions/{session}")
    return statistics.median(times)


def pod_rss_mb(pod: str) -> float:
    """Resident MB of a pod's processes (the test kubelet's pods are local processes, each
    with the pod's name in its environment), after its JVM collected its garbage."""
    pids = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            with contextlib.suppress(OSError):
                environ = (entry / "environ").read_bytes()
                names = (f"SPARKGATE_POD_NAME={pod}\0", f"SPARK_EXECUTOR_POD_NAME={pod}\0")
                if any(name.encode() in environ for name in names):
                    pids.append(int(entry.name))
    for pid in pids:
        if Path(f"/proc/{pid}/comm").read_text().strip() == "java":
            subprocess.run(["jcmd", str(pid), "GC.run"], capture_output=True, check=False)
    return sum(rss_kb(pid) for pid in pids) / 1024


def memory(release: Any, api: httpx.Client, sessions: int) -> dict[str, float]:
    run(api, "SELECT 1")  # the shared engine runs, with its executor
    [driver] = [p for p in release.pods(ENGINES) if "engine-1" in p.metadata.name]
    executors = release.pods(f"sparkgate.io/engine=1,{EXECUTORS}")
    found = {
        "driver idle": pod_rss_mb(driver.metadata.name),
        "executor idle": pod_rss_mb(executors[0].metadata.name) if executors else 0.0,
    }
    opened = []
    for _ in range(sessions):
        session = api.post("/v1/sessions", json={}).json()["id"]
        opened.append(session)
        assert run(api, "SELECT 1", session_id=session)["state"] == "success"
    found[f"driver, {sessions} sessions"] = pod_rss_mb(driver.metadata.name)
    found["per session"] = (found[f"driver, {sessions} sessions"] - found["driver idle"]) / sessions
    for session in opened:
        api.delete(f"/v1/sessions/{session}")
    return found


@contextlib.contextmanager
def on_kubernetes(console: Console) -> Iterator[tuple[Any, str, tuple[str, str]]]:
    ensure_built()
    with tempfile.TemporaryDirectory(prefix="sparkgate-bench-kube-") as tmp:
        console.print("starting the local Kubernetes and installing the chart...")
        with Cluster(Path(tmp) / "kube") as cluster, _pg_schema() as store_url:
            values = small_values(store_url, Path(tmp) / "home", replicas=1)
            values["config"] = {**values["config"], **SETTINGS}
            # The executors' idle timeout as shipped (the tests shorten it).
            values["config"]["spark_conf"] = {"spark.sql.shuffle.partitions": "2"}
            values["engines"]["pods"]["default"]["max_executors"] = 1
            with installed(cluster, values) as release:
                yield release, release.node_url(), ("admin", "admin-password-1")


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--launches", type=int, default=10)
    parser.add_argument("--at-once", type=int, default=8)
    parser.add_argument("--statements", type=int, default=50)
    parser.add_argument("--sessions", type=int, default=30)
    args = parser.parse_args()
    console = Console()
    found: dict[str, dict[str, float]] = {}
    with (
        on_kubernetes(console) as (release, url, auth),
        httpx.Client(base_url=url, auth=auth, timeout=900) as api,
    ):
        console.print("Kubernetes: launches...")
        times = launches(api, args.launches)
        found["kubernetes"] = {
            "launch p50 s": statistics.median(times),
            "launch max s": max(times),
            f"{args.at_once} at once s": at_once(url, auth, args.at_once),
            "SELECT 1 p50 ms": statements(api, args.statements),
        }
        sizes = memory(release, api, args.sessions)
    with (
        bench_server(console, catalog="in-memory", warm_engines=0) as server,
        httpx.Client(base_url=server.url, timeout=900) as api,
    ):
        console.print("local: launches...")
        times = launches(api, args.launches)
        found["local"] = {
            "launch p50 s": statistics.median(times),
            "launch max s": max(times),
            f"{args.at_once} at once s": at_once(server.url, None, args.at_once),
            "SELECT 1 p50 ms": statements(api, args.statements),
        }
    table = Table(title="Engines as pods (test kubelet) and as local processes, one run")
    table.add_column("measure")
    for column in ("kubernetes", "local", "ratio"):
        table.add_column(column, justify="right")
    for measure in found["kubernetes"]:
        k, local = found["kubernetes"][measure], found["local"][measure]
        table.add_row(measure, f"{k:,.2f}", f"{local:,.2f}", f"{k / local:.2f}x")
    console.print(table)
    sizing = Table(title="Resident memory on Kubernetes, MB")
    sizing.add_column("pod")
    sizing.add_column("MB", justify="right")
    for name, value in sizes.items():
        sizing.add_row(name, f"{value:,.1f}")
    console.print(sizing)


if __name__ == "__main__":
    main()
