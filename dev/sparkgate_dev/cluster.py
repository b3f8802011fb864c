"""A Spark standalone cluster on this machine: one master and one worker, started from the jars
and ``bin/spark-class`` that pyspark ships (nothing to download), for engines to run on as
applications (``SPARKGATE_SPARK_MASTER=spark://...``).

Both daemons listen on loopback, on free ports; their logs, pids and ``cluster.json`` live in
one directory (``<home>/cluster`` by default), and so does the worker's work directory (the
executors' logs and files). ``stop`` ends only the processes it started, by the pids it
recorded: each daemon runs in a process group of its own, which its executors share.

    scripts/cluster start [--cores N] [--memory 4g]    # prints the master URL
    scripts/cluster status
    scripts/cluster stop
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import signal
import socket
import subprocess
import sys
import threading
import time
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import httpx

from sparkgate.processes import alive

HOST = "127.0.0.1"
STATE_FILE = "cluster.json"


@dataclass(frozen=True)
class ClusterInfo:
    master_url: str  # spark://127.0.0.1:PORT
    master_ui: str  # http://127.0.0.1:PORT
    worker_ui: str | None
    master_pid: int
    worker_pid: int | None
    directory: Path


def spark_home() -> Path:
    import pyspark

    return Path(pyspark.__file__).parent


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind((HOST, 0))
        port: int = sock.getsockname()[1]
        return port


def _env() -> dict[str, str]:
    env = dict(os.environ)
    env["SPARK_HOME"] = str(spark_home())
    env["SPARK_LOCAL_IP"] = HOST
    # The daemons need little heap: 512 MB each instead of Spark's default 1 GB.
    env.setdefault("SPARK_DAEMON_MEMORY", "512m")
    # Executors run the Python the engines run (with sparkgate's packages).
    env.setdefault("PYSPARK_PYTHON", sys.executable)
    return env


def _spawn(directory: Path, name: str, args: list[str]) -> int:
    log = directory / f"{name}.log"
    with open(log, "ab") as out:
        process = subprocess.Popen(
            [str(spark_home() / "bin" / "spark-class"), *args],
            stdin=subprocess.DEVNULL,
            stdout=out,
            stderr=subprocess.STDOUT,
            env=_env(),
            cwd=directory,
            start_new_session=True,
        )
    # Reap the daemon when it exits (no zombie while this process runs; this also keeps the
    # Popen object alive, so it never warns that its child still runs).
    threading.Thread(target=process.wait, name=f"reap-{name}", daemon=True).start()
    return process.pid


def _read(directory: Path) -> dict[str, Any] | None:
    path = directory / STATE_FILE
    if not path.exists():
        return None
    data: dict[str, Any] = json.loads(path.read_text())
    return data


def _write(directory: Path, state: dict[str, Any]) -> None:
    tmp = directory / f"{STATE_FILE}.tmp"
    tmp.write_text(json.dumps(state, indent=2))
    tmp.replace(directory / STATE_FILE)


def _info(directory: Path, state: dict[str, Any]) -> ClusterInfo:
    return ClusterInfo(
        master_url=state["master_url"],
        master_ui=state["master_ui"],
        worker_ui=state.get("worker_ui"),
        master_pid=int(state["master_pid"]),
        worker_pid=state.get("worker_pid"),
        directory=directory,
    )


def master_state(master_ui: str) -> dict[str, Any]:
    """The master's own account (its ``/json``): workers, active and completed applications."""
    response = httpx.get(f"{master_ui}/json/", timeout=5)
    response.raise_for_status()
    data: dict[str, Any] = response.json()
    return data


def applications(master_ui: str) -> list[dict[str, Any]]:
    """The applications running at the master (id, name, state, cores, ...)."""
    return list(master_state(master_ui).get("activeapps", []))


def alive_workers(master_ui: str) -> int:
    return sum(w.get("state") == "ALIVE" for w in master_state(master_ui).get("workers", []))


def _wait(check: Any, timeout: float, what: str, pid: int, log: Path) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if not alive(pid):
            tail = log.read_text(errors="replace")[-3000:] if log.exists() else ""
            raise RuntimeError(f"{what}: the process exited.\n{tail}")
        with contextlib.suppress(httpx.HTTPError, ValueError):
            if check():
                return
        time.sleep(0.3)
    raise RuntimeError(f"{what}: not ready after {timeout:.0f}s (see {log})")


def start(
    directory: Path,
    *,
    cores: int | None = None,
    memory: str = "4g",
    timeout: float = 120,
    worker: bool = True,
) -> ClusterInfo:
    """Start a master and a worker (or return the running ones); waits until the worker is
    ALIVE at the master. ``worker=False``: the master alone (a cluster with no cores, where
    engines fail NO_EXECUTORS)."""
    directory = directory.resolve()
    directory.mkdir(parents=True, exist_ok=True)
    running = status(directory)
    if running is not None:
        return running
    port, ui = _free_port(), _free_port()
    master_url, master_ui = f"spark://{HOST}:{port}", f"http://{HOST}:{ui}"
    master_pid = _spawn(
        directory,
        "master",
        [
            "org.apache.spark.deploy.master.Master",
            "--host",
            HOST,
            "--port",
            str(port),
            "--webui-port",
            str(ui),
        ],
    )
    state: dict[str, Any] = {
        "master_url": master_url,
        "master_ui": master_ui,
        "master_pid": master_pid,
        "worker_pid": None,
        "worker_ui": None,
        "cores": cores or os.cpu_count() or 2,
        "memory": memory,
    }
    _write(directory, state)
    _wait(
        lambda: master_state(master_ui).get("status") == "ALIVE",
        timeout,
        "the Spark master",
        master_pid,
        directory / "master.log",
    )
    if worker:
        start_worker(directory, cores=cores, memory=memory, timeout=timeout)
    info = status(directory)
    assert info is not None
    return info


def start_worker(
    directory: Path, *, cores: int | None = None, memory: str = "4g", timeout: float = 120
) -> int:
    """(Re)start the worker against the running master; its pid, once ALIVE there."""
    directory = directory.resolve()
    state = _read(directory)
    if state is None or not alive(state.get("master_pid")):
        raise RuntimeError(f"no Spark master runs from {directory}: scripts/cluster start")
    if alive(state.get("worker_pid")):
        return int(state["worker_pid"])
    before = alive_workers(state["master_ui"])
    ui = _free_port()
    work = directory / "work"
    work.mkdir(exist_ok=True)
    pid = _spawn(
        directory,
        "worker",
        [
            "org.apache.spark.deploy.worker.Worker",
            "--host",
            HOST,
            "--webui-port",
            str(ui),
            "--cores",
            str(cores or state.get("cores") or os.cpu_count() or 2),
            "--memory",
            memory,
            "--work-dir",
            str(work),
            state["master_url"],
        ],
    )
    state.update(worker_pid=pid, worker_ui=f"http://{HOST}:{ui}")
    _write(directory, state)
    _wait(
        lambda: alive_workers(state["master_ui"]) > before,
        timeout,
        "the Spark worker",
        pid,
        directory / "worker.log",
    )
    return pid


def status(directory: Path) -> ClusterInfo | None:
    """The running cluster started from ``directory``, or None."""
    directory = directory.resolve()
    state = _read(directory)
    if state is None or not alive(state.get("master_pid")):
        return None
    if not alive(state.get("worker_pid")):
        state["worker_pid"] = None
    return _info(directory, state)


def stop(directory: Path, timeout: float = 30) -> list[int]:
    """Stop the worker (with its executors) and the master started from ``directory``; the
    pids stopped. Nothing else is touched."""
    directory = directory.resolve()
    state = _read(directory)
    if state is None:
        return []
    pids = [int(p) for p in (state.get("worker_pid"), state.get("master_pid")) if p and alive(p)]
    for pid in pids:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(pid, signal.SIGTERM)
    deadline = time.monotonic() + timeout
    while any(alive(p) for p in pids) and time.monotonic() < deadline:
        time.sleep(0.2)
    for pid in pids:
        # Executors are in the worker's group; kill the group, whether the leader went or not.
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(pid, signal.SIGKILL)
    state.update(master_pid=0, worker_pid=None)
    _write(directory, state)
    return pids


def default_directory() -> Path:
    from sparkgate.settings import Settings

    return Settings().resolved_home / "cluster"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="scripts/cluster", description=__doc__.split("\n")[0])
    parser.add_argument("command", choices=["start", "stop", "status"])
    parser.add_argument("--dir", type=Path, default=None, help="default: $SPARKGATE_HOME/cluster")
    parser.add_argument("--cores", type=int, default=None, help="worker cores (default: all)")
    parser.add_argument("--memory", default="4g", help="worker memory (default: 4g)")
    args = parser.parse_args(argv)
    directory: Path = args.dir or default_directory()
    if args.command == "start":
        info = start(directory, cores=args.cores, memory=args.memory)
        print(f"master {info.master_url} (UI {info.master_ui}); worker UI {info.worker_ui}")
        print(f"engines use it with: SPARKGATE_SPARK_MASTER={info.master_url}")
        return 0
    if args.command == "stop":
        stopped = stop(directory)
        print(f"stopped {len(stopped)} process(es): {stopped}" if stopped else "not running")
        return 0
    running = status(directory)
    if running is None:
        print(f"no cluster runs from {directory}")
        return 1
    info = running
    print(json.dumps(asdict(info), indent=2, default=str))  # pids stay numbers; paths, text
    with contextlib.suppress(httpx.HTTPError):
        master = master_state(info.master_ui)
        for worker in master.get("workers", []):
            print(
                f"worker {worker['id']}: {worker['state']}, "
                f"cores {worker['coresused']}/{worker['cores']}"
            )
        for app in master.get("activeapps", []):
            print(f"application {app['id']} {app['name']}: {app['state']}, cores {app['cores']}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
