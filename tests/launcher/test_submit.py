"""The spark-submit command lines for engines on YARN and Kubernetes (not yet run here: no
YARN or Kubernetes on this machine; checked as command lines)."""

from __future__ import annotations

from pathlib import Path
from typing import Literal

import pytest

from sparkgate.launcher import launcher_for
from sparkgate.launcher.local import LocalLauncher
from sparkgate.launcher.submit import (
    ENTRY,
    KubernetesLauncher,
    LaunchRefused,
    YarnLauncher,
    kubernetes_command,
    kubernetes_kill_command,
    yarn_command,
)
from sparkgate.settings import Settings
from sparkgate.states import EngineKind, EngineState
from sparkgate.store import Store
from sparkgate.store.records import EngineRecord

LAUNCHERS: tuple[Literal["local", "yarn", "kubernetes"], ...] = ("local", "yarn", "kubernetes")
PG = "postgresql+psycopg://sg@db.internal:5432/sparkgate"


def engine(conf: dict[str, str] | None = None) -> EngineRecord:
    return EngineRecord(
        id=7, kind=EngineKind.DEDICATED, state=EngineState.STARTING, session_id=3,
        conf=conf or {}, node_id="n", host=None, pid=None, app_id=None, log_path=None,
        error=None, version=1, created_at=0.0, started_at=None, heartbeat_at=None,
        finished_at=None, updated_at=0.0,
    )  # fmt: skip


def confs(command: list[str]) -> dict[str, str]:
    pairs = [command[i + 1] for i, arg in enumerate(command) if arg == "--conf"]
    return dict(pair.split("=", 1) for pair in pairs)


def test_yarn_runs_the_driver_here_in_client_mode(tmp_path: Path) -> None:
    settings = Settings(
        home=tmp_path, store_url=PG, spark_master="yarn",
        spark_submit="/opt/spark/bin/spark-submit", spark_conf={"spark.executor.instances": "2"},
    )  # fmt: skip
    command = yarn_command(settings, engine({"spark.driver.memory": "2g"}))
    assert command[:7] == [
        "/opt/spark/bin/spark-submit", "--master", "yarn", "--deploy-mode", "client",
        "--name", "sparkgate-engine-7",
    ]  # fmt: skip
    assert command[-3:] == [str(ENTRY), "--engine-id", "7"]
    given = confs(command)
    assert given["spark.executor.instances"] == "2" and given["spark.driver.memory"] == "2g"
    assert "spark.master" not in given  # an option, not a --conf
    assert ENTRY.exists()


def test_kubernetes_runs_the_driver_in_a_pod_that_reports_to_postgresql(tmp_path: Path) -> None:
    settings = Settings(
        home=tmp_path, store_url=PG, spark_master="k8s://https://k8s.internal:6443",
        kubernetes_image="registry/sparkgate:1.0", kubernetes_namespace="data",
        spark_submit="spark-submit",
    )  # fmt: skip
    command = kubernetes_command(settings, engine())
    assert command[:7] == [
        "spark-submit", "--master", "k8s://https://k8s.internal:6443", "--deploy-mode",
        "cluster", "--name", "sparkgate-engine-7",
    ]  # fmt: skip
    assert command[-3:] == ["local:///opt/sparkgate/entry.py", "--engine-id", "7"]
    given = confs(command)
    assert given["spark.kubernetes.container.image"] == "registry/sparkgate:1.0"
    assert given["spark.kubernetes.namespace"] == "data"
    assert given["spark.kubernetes.authenticate.driver.serviceAccountName"] == "sparkgate"
    assert given["spark.kubernetes.driver.label.sparkgate-engine"] == "7"
    assert given["spark.kubernetes.driverEnv.SPARKGATE_STORE_URL"] == PG
    assert kubernetes_kill_command(settings, engine()) == [
        "spark-submit", "--master", "k8s://https://k8s.internal:6443", "--kill",
        "data:sparkgate-engine-7-*",
    ]  # fmt: skip


@pytest.mark.parametrize(
    ("values", "words"),
    [
        ({"store_url": None}, "cannot reach this node's SQLite file"),
        ({"kubernetes_image": None}, "SPARKGATE_KUBERNETES_IMAGE is not set"),
        ({"spark_master": "yarn"}, "needs SPARKGATE_SPARK_MASTER=k8s://"),
    ],
)
def test_kubernetes_refuses_what_a_pod_cannot_work_with(
    tmp_path: Path, values: dict[str, object], words: str
) -> None:
    base: dict[str, object] = {
        "home": tmp_path, "store_url": PG, "spark_master": "k8s://https://k8s:6443",
        "kubernetes_image": "img",
    }  # fmt: skip
    settings = Settings(**{**base, **values})  # type: ignore[arg-type]
    with pytest.raises(LaunchRefused) as refused:
        kubernetes_command(settings, engine())
    assert words in refused.value.message


def test_the_launcher_setting_picks_the_launcher(tmp_path: Path) -> None:
    store = Store.open(f"sqlite:///{tmp_path / 's.db'}")
    try:
        chosen = {
            name: type(launcher_for(Settings(home=tmp_path, launcher=name), store))
            for name in LAUNCHERS
        }
    finally:
        store.close()
    assert chosen == {
        "local": LocalLauncher, "yarn": YarnLauncher, "kubernetes": KubernetesLauncher,
    }  # fmt: skip
