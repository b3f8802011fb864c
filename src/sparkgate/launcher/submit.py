"""Launching engines with ``spark-submit`` on YARN or Kubernetes.

NOT YET RUN HERE: this machine has no YARN and no Kubernetes. The command lines below are what
Spark documents and are unit-tested as command lines (tests/launcher/test_submit.py); the
standalone cluster (scripts/cluster) is what has run.

- YARN, client deploy mode: the driver (the engine) runs on the node, like a local engine, and
  is checked and killed like one (its process group); its executors run in YARN containers,
  which YARN ends when the driver goes (the client-mode application master exits when its
  driver disconnects).
- Kubernetes, cluster deploy mode: the driver runs in a pod. It is no child of the node: it
  learns the settings from ``spark.kubernetes.driverEnv.SPARKGATE_*``, reports to the store
  (PostgreSQL: a pod cannot reach a node's SQLite file), is judged alive by its heartbeats
  there, and is stopped through the store (it obeys ``stopping``) or, when it does not answer,
  with :func:`kubernetes_kill_command`.
"""

from __future__ import annotations

import logging
import os
import socket
import subprocess
import threading
import time
from collections.abc import Callable
from pathlib import Path

from sparkgate.engine.spark import engine_spark_conf
from sparkgate.errors import ConfigurationError
from sparkgate.launcher.local import kill_process_group, process_alive
from sparkgate.recorded import ErrorCode
from sparkgate.settings import Settings
from sparkgate.store import Store
from sparkgate.store.records import EngineRecord

log = logging.getLogger("sparkgate.launcher")

ENTRY = Path(__file__).resolve().parent.parent / "engine" / "entry.py"

# Runs a cluster manager's command line (spark-submit --kill): stdout and stderr as text.
Runner = Callable[[list[str]], subprocess.CompletedProcess[str]]

_KILL_TIMEOUT = 60.0  # spark-submit starts a JVM and talks to the API server (seconds)


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


class LaunchRefused(ConfigurationError):
    code = ErrorCode.LAUNCH_REFUSED


def kubernetes_command(settings: Settings, engine: EngineRecord) -> list[str]:
    """spark-submit for an engine on Kubernetes, in cluster mode (the driver in a pod)."""
    if not settings.spark_master.startswith("k8s://"):
        raise LaunchRefused(
            f"SPARKGATE_LAUNCHER=kubernetes needs SPARKGATE_SPARK_MASTER=k8s://https://<api "
            f"server>, not {settings.spark_master!r}."
        )
    if settings.resolved_store_url.startswith("sqlite"):
        raise LaunchRefused(
            "An engine on Kubernetes runs in a pod and cannot reach this node's SQLite file: "
            "set SPARKGATE_STORE_URL to a PostgreSQL database the pods reach."
        )
    if not settings.kubernetes_image:
        raise LaunchRefused(
            "SPARKGATE_KUBERNETES_IMAGE is not set: the image with Spark, Python and sparkgate "
            "that engine pods run."
        )
    conf = engine_spark_conf(settings, engine.conf, engine_id=engine.id, kind=engine.kind)
    conf.update(
        {
            "spark.kubernetes.container.image": settings.kubernetes_image,
            "spark.kubernetes.namespace": settings.kubernetes_namespace,
            "spark.kubernetes.authenticate.driver.serviceAccountName": (
                settings.kubernetes_service_account
            ),
            "spark.kubernetes.driver.label.sparkgate-engine": str(engine.id),
        }
    )
    for key, value in sorted(settings.to_env().items()):
        conf[f"spark.kubernetes.driverEnv.{key}"] = value
    return [
        spark_submit(settings),
        "--master",
        settings.spark_master,
        "--deploy-mode",
        "cluster",
        "--name",
        app_name(engine),
        *_confs(conf),
        settings.kubernetes_entry,
        "--engine-id",
        str(engine.id),
    ]


def kubernetes_kill_command(settings: Settings, engine: EngineRecord) -> list[str]:
    """Ends the engine's driver pod (Spark's ``--kill`` takes namespace:driver-pod-glob).

    Spark names the driver pod ``<app name>-<unique id>-driver``, hence the ``-`` before the
    ``*``: without it, engine 7's glob would take engine 70's pod too. (A driver pod named by
    ``spark.kubernetes.driver.pod.name`` in the settings' spark_conf is not matched.)"""
    # The credentials spark-submit used to create the pod, to delete it.
    auth = {
        key: value
        for key, value in settings.spark_conf.items()
        if key.startswith("spark.kubernetes.authenticate.submission.")
    }
    return [
        spark_submit(settings),
        "--master",
        settings.spark_master,
        *_confs(auth),
        "--kill",
        f"{settings.kubernetes_namespace}:{app_name(engine)}-*",
    ]


def run_command(command: list[str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        command,
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=_KILL_TIMEOUT,
        check=False,
    )


class _SubmitLauncher:
    def __init__(self, settings: Settings, store: Store, run: Runner = run_command) -> None:
        self.settings = settings
        self.store = store
        self.run = run

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
        # YARN client mode: this is the driver. Kubernetes: spark-submit, which waits for the
        # pod; the engine itself is known by its heartbeats.
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

    def kill(self, engine: EngineRecord) -> bool:
        return kill_process_group(engine)


class KubernetesLauncher(_SubmitLauncher):
    """Cluster mode: the driver is in a pod, and the recorded pid is only spark-submit's,
    waiting on the pod, on the launching node."""

    def command(self, engine: EngineRecord) -> list[str]:
        return kubernetes_command(self.settings, engine)

    def alive(self, engine: EngineRecord) -> bool | None:
        """None: the pod is the cluster's to know, and the local spark-submit says nothing
        sure of it (it can die with the pod still running); heartbeats judge."""
        return None

    def kill(self, engine: EngineRecord) -> bool:
        """Delete the driver pod with :func:`kubernetes_kill_command` (the pod's executors go
        with it), and kill the local spark-submit if still here. True if a driver pod was
        deleted (spark-submit says ``Deleting driver pod``) or the local process killed. When
        spark-submit cannot be run or fails (no API server access from here, say) it logs
        that and the pod runs on until it sees at its next heartbeat that it was given up
        on, and exits."""
        command = kubernetes_kill_command(self.settings, engine)
        try:
            done = self.run(command)
        except (OSError, subprocess.SubprocessError) as exc:
            log.warning("engine %s: could not run %s: %s", engine.id, command[0], exc)
            deleted = False
        else:
            output = f"{done.stdout}{done.stderr}"
            if done.returncode != 0:
                log.warning(
                    "engine %s: spark-submit --kill failed (%s): %s",
                    engine.id, done.returncode, output[-2000:],
                )  # fmt: skip
            deleted = done.returncode == 0 and "Deleting driver pod" in output
        # spark-submit would exit once the pod is gone; killing it spares waiting for that.
        return kill_process_group(engine) or deleted
