"""Launching engines as local subprocesses (Spark in local mode, or client mode against any
master the settings name).

Engines run in their own process group and session, so they outlive a server restart (they
serve sessions the store knows about, not the node that launched them) and a SIGKILL of the
group takes the Spark JVM with the Python driver. :func:`process_alive` and
:func:`kill_process_group` are the one place an engine's recorded pid is checked or killed.
"""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import threading
import time

from sparkgate.processes import alive
from sparkgate.settings import Settings
from sparkgate.store import Store
from sparkgate.store.records import EngineRecord


def _local_pid(engine: EngineRecord) -> int | None:
    """The engine's recorded pid if it names a process on this host: a pid recorded by
    another host means nothing here."""
    if engine.pid is None or engine.host != socket.gethostname():
        return None
    return engine.pid


def process_alive(engine: EngineRecord) -> bool | None:
    """Whether the engine's recorded process runs; None unless it is on this host."""
    pid = _local_pid(engine)
    return None if pid is None else alive(pid)


def kill_process_group(engine: EngineRecord) -> bool:
    """SIGKILL the engine's process group (the driver and the JVM it started), if on this
    host. True if the signal was delivered: the group still had a process, though one that
    had exited without being reaped yet counts too."""
    pid = _local_pid(engine)
    if pid is None:
        return False
    try:
        os.killpg(pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        # Gone already; or the pid was reused by someone else's process: not ours to kill.
        return False
    return True


def tail_file(log_path: str | None, tail: int | None) -> str:
    """The last ``tail`` lines (all: None) of an engine's log file, if on this host."""
    if not log_path:
        return ""
    try:
        with open(log_path, "rb") as file:
            if tail is None:
                data = file.read()
            else:
                # Enough of the end for the lines asked, read from the end (logs grow large).
                size = file.seek(0, os.SEEK_END)
                want = max(tail, 1) * 512
                while True:
                    file.seek(max(0, size - want))
                    data = file.read()
                    if data.count(b"\n") > tail or want >= size:
                        break
                    want *= 4
                data = b"\n".join(data.split(b"\n")[-tail - 1 :])
    except OSError:
        return ""
    return data.decode("utf-8", errors="replace")


class LocalLauncher:
    def __init__(self, settings: Settings, store: Store) -> None:
        self.settings = settings
        self.store = store

    def launch(self, engine: EngineRecord) -> None:
        logs = self.settings.logs_dir
        logs.mkdir(parents=True, exist_ok=True)
        log_path = logs / f"engine-{engine.id}.log"
        env = {**os.environ, **self.settings.to_env()}
        # Executors must run the same Python as the driver, with sparkgate's packages.
        env.setdefault("PYSPARK_PYTHON", sys.executable)
        env.setdefault("PYSPARK_DRIVER_PYTHON", sys.executable)
        with open(log_path, "ab") as log_file:
            process = subprocess.Popen(
                [sys.executable, "-m", "sparkgate.engine", "--engine-id", str(engine.id)],
                stdin=subprocess.DEVNULL,
                stdout=log_file,
                stderr=subprocess.STDOUT,
                env=env,
                cwd=str(self.settings.resolved_home),
                start_new_session=True,
            )
        self.store.engines.set_process(
            engine.id,
            pid=process.pid,
            host=socket.gethostname(),
            log_path=str(log_path),
            now=time.time(),
        )
        # Reap the child when it exits so it does not linger as a zombie while we run.
        threading.Thread(target=process.wait, name=f"reap-engine-{engine.id}", daemon=True).start()

    def alive(self, engine: EngineRecord) -> bool | None:
        return process_alive(engine)

    def log(self, engine: EngineRecord, *, tail: int | None = None) -> str:
        return tail_file(engine.log_path, tail)

    def kill(self, engine: EngineRecord) -> bool:
        return kill_process_group(engine)
