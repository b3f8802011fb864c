"""Launching engines with ``spark-submit`` on YARN.

NOT YET RUN HERE: this machine has no YARN. The command line below is what Spark documents and
is unit-tested as a command line (tests/launcher/test_submit.py); the standalone cluster
(scripts/cluster) and Kubernetes (launcher/kubernetes.py, against a local control plane) are
what has run.

YARN, client deploy mode: the driver (the engine) runs on the node, like a local engine, and is
checked and killed like one (its process group); its executors run in YARN containers, which
YARN ends when the driver goes (the client-mode application master exits when its driver
disconnects).
"""

from __future__ import annotations

import os
import socket
import subprocess
import threading
import time
from pathlib import Path

from sparkgate.engine.spark import engine_spark_conf
from sparkgate.launcher.local import kill_process_group, process_alive, tail_file
from sparkgate.settings import Settings
from sparkgate.store import Store
from sparkgate.store.records import EngineRecord

ENTRY = Path(__file__).resolve().parent.parent / "engine" / "entry.py"


def app_name(engine: EngineRecord) -> str:
    return f"sparkgate-engine-{engine.id}"


def spark_submit(settings: Settings) -> str:
    if settings.spark_submit:
        return settings.spark_submit
    import pyspark

    return str(Path(pyspark.__file__).parent / "bin" / "spark-submit")


def _confs(conf: dict[str, str]) -> list[str]:
    args: list[str] = []
    for key, value in conf.items():
        if key in {"spark.master", "spark.submit.deployMode", "spark.app.name"}:
            continue  # given as options below
        args += ["--conf", f"{key}={value}"]
    return args


def yarn_command(settings: Settings, engine: EngineRecord) -> list[str]:
    """spark-submit for an engine on YARN, in client mode (the driver on this node)."""
    conf = engine_spark_conf(settings, engine.conf, engine_id=engine.id, kind=engine.kind)
    return [
        spark_submit(settings),
        "--master",
        "yarn",
        "--deploy-mode",
        "client",
        "--name",
        app_name(engine),
        *_confs(conf),
        str(ENTRY),
        "--engine-id",
        str(engine.id),
    ]


class _SubmitLauncher:
    def __init__(self, settings: Settings, store: Store) -> None:
        self.settings = settings
        self.store = store

    def command(self, engine: EngineRecord) -> list[str]:
        raise NotImplementedError

    def launch(self, engine: EngineRecord) -> None:
        command = self.command(engine)  # refusals raise before anything starts
        logs = self.settings.logs_dir
        logs.mkdir(parents=True, exist_ok=True)
        log_path = logs / f"engine-{engine.id}.log"
        with open(log_path, "ab") as log_file:
            process = subprocess.Popen(
                command,
                stdin=subprocess.DEVNULL,
                stdout=log_file,
                stderr=subprocess.STDOUT,
                env={**os.environ, **self.settings.to_env()},
                cwd=str(self.settings.resolved_home),
                start_new_session=True,
            )
        # YARN client mode: this is the driver.
        self.store.engines.set_process(
            engine.id, pid=process.pid, host=socket.gethostname(), log_path=str(log_path),
            now=time.time(),
        )  # fmt: skip
        threading.Thread(target=process.wait, name=f"reap-engine-{engine.id}", daemon=True).start()


class YarnLauncher(_SubmitLauncher):
    """Client mode: the recorded pid is the driver's (spark-submit's JVM, with the Python
    engine as its child, in its own process group), so it is checked and killed as a local
    engine is. A driver on another host is out of reach: ``alive`` says None and ``kill``
    False."""

    def command(self, engine: EngineRecord) -> list[str]:
        return yarn_command(self.settings, engine)

    def alive(self, engine: EngineRecord) -> bool | None:
        return process_alive(engine)

    def log(self, engine: EngineRecord, *, tail: int | None = None) -> str:
        return tail_file(engine.log_path, tail)

    def kill(self, engine: EngineRecord) -> bool:
        return kill_process_group(engine)
