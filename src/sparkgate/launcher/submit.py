"""Launching engines with ``spark-submit`` on YARN or Kubernetes.

NOT YET RUN HERE: this machine has no YARN and no Kubernetes. The command lines below are what
Spark documents and are unit-tested as command lines (tests/launcher/test_submit.py); the
standalone cluster (scripts/cluster) is what has run.

- YARN, client deploy mode: the driver (the engine) runs on the node, like a local engine; its
  executors run in YARN containers.
- Kubernetes, cluster deploy mode: the driver runs in a pod. It is no child of the node: it
  learns the settings from ``spark.kubernetes.driverEnv.SPARKGATE_*``, reports to the store
  (PostgreSQL: a pod cannot reach a node's SQLite file), is judged alive by its heartbeats
  there, and is stopped through the store (it obeys ``stopping``) or, when it does not answer,
  with :func:`kubernetes_kill_command`.
"""

from __future__ import annotations

import os
import socket
import subprocess
import threading
import time
from pathlib import Path

from sparkgate.engine.spark import engine_spark_conf
from sparkgate.errors import ConfigurationError
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
    conf = engine_spark_conf(settings, engine.conf, engine_id=engine.id)
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
    code = "LAUNCH_REFUSED"


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
    conf = engine_spark_conf(settings, engine.conf, engine_id=engine.id)
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
    """Ends the engine's driver pod (Spark's ``--kill`` takes namespace:driver-pod-glob)."""
    return [
        spark_submit(settings),
        "--master",
        settings.spark_master,
        "--kill",
        f"{settings.kubernetes_namespace}:{app_name(engine)}*",
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
        # YARN client mode: this is the driver. Kubernetes: spark-submit, which waits for the
        # pod; the engine itself is known by its heartbeats.
        self.store.engines.set_process(
            engine.id, pid=process.pid, host=socket.gethostname(), log_path=str(log_path),
            now=time.time(),
        )  # fmt: skip
        threading.Thread(target=process.wait, name=f"reap-engine-{engine.id}", daemon=True).start()


class YarnLauncher(_SubmitLauncher):
    def command(self, engine: EngineRecord) -> list[str]:
        return yarn_command(self.settings, engine)


class KubernetesLauncher(_SubmitLauncher):
    def command(self, engine: EngineRecord) -> list[str]:
        return kubernetes_command(self.settings, engine)
