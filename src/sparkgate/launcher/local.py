"""Launching engines as local subprocesses (Spark in local mode, or client mode against any
master the settings name).

Engines run in their own process group and session, so they outlive a server restart (they
serve sessions the store knows about, not the node that launched them) and a SIGKILL of the
group takes the Spark JVM with the Python driver.
"""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import threading
import time

from sparkgate.settings import Settings
from sparkgate.store import Store
from sparkgate.store.records import EngineRecord


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
