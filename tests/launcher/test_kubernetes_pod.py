"""The engine pod the Kubernetes launcher asks for, and what the engine in it makes of its
environment (the end-to-end behaviour is in tests/kube, against a real API server)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import yaml

from sparkgate.engine.pod import pod_defaults, pod_spark_conf
from sparkgate.launcher.kubernetes import (
    LaunchRefused,
    engine_pod,
    memory_mib,
    refuse_unless_runnable,
    share_level,
)
from sparkgate.settings import EnginePod, Settings
from sparkgate.states import EngineKind, EngineState
from sparkgate.store.records import EngineRecord

PG = "postgresql+psycopg://sg:pw@db.internal:5432/sparkgate"


def engine(
    kind: EngineKind = EngineKind.SHARED, share_key: str | None = "user:ann"
) -> EngineRecord:
    return EngineRecord(
        id=7, kind=kind, state=EngineState.STARTING, session_id=None, conf={}, node_id="n",
        host=None, pid=None, app_id=None, log_path=None, error=None, version=1,
        created_at=0.0, started_at=None, heartbeat_at=None, finished_at=None, updated_at=0.0,
        share_key=share_key,
    )  # fmt: skip


def settings(tmp_path: Path, **values: Any) -> Settings:
    base: dict[str, Any] = {
        "home": tmp_path, "store_url": PG, "launcher": "kubernetes",
        "kubernetes_image": "registry.local/sparkgate:1", "kubernetes_namespace": "data",
        "kubernetes_name_prefix": "sg", "kubernetes_labels": {"app.kubernetes.io/instance": "r1"},
    }  # fmt: skip
    return Settings(**{**base, **values})


def env_of(pod: dict[str, Any]) -> dict[str, Any]:
    return {
        e["name"]: e.get("value", e.get("valueFrom")) for e in pod["spec"]["containers"][0]["env"]
    }


def test_an_engine_pod_runs_the_engine_with_the_nodes_settings_and_its_own_address(
    tmp_path: Path,
) -> None:
    pod = engine_pod(settings(tmp_path), engine())
    assert pod["metadata"]["name"] == "sg-engine-7"
    assert pod["metadata"]["namespace"] == "data"
    assert pod["metadata"]["labels"] == {
        "app.kubernetes.io/instance": "r1", "sparkgate.io/installation": "sg",
        "sparkgate.io/engine": "7", "sparkgate.io/role": "driver",
    }  # fmt: skip
    spec = pod["spec"]
    assert spec["restartPolicy"] == "Never" and spec["serviceAccountName"] == "sparkgate-engine"
    container = spec["containers"][0]
    assert container["image"] == "registry.local/sparkgate:1"
    assert container["args"] == ["engine", "--engine-id", "7"]
    env = env_of(pod)
    assert env["SPARKGATE_STORE_URL"] == PG  # no Secret named: the URL is in the spec
    assert env["SPARKGATE_POD_IP"] == {"fieldRef": {"fieldPath": "status.podIP"}}
    executors = json.loads(env["SPARKGATE_POD_SPARK_CONF"])
    assert executors["spark.kubernetes.executor.label.sparkgate.io/engine"] == "7"
    assert executors["spark.kubernetes.executor.label.sparkgate.io/role"] == "executor"
    assert executors["spark.dynamicAllocation.shuffleTracking.enabled"] == "true"
    # A shared engine keeps one executor, as on a standalone cluster.
    assert executors["spark.dynamicAllocation.minExecutors"] == "1"
    # Spark's overhead for a Python driver: 1 GiB heap + 40 % (at least 384 MiB).
    assert container["resources"]["requests"]["memory"] == "1433Mi"


def test_secrets_come_from_the_named_secret_not_the_spec(tmp_path: Path) -> None:
    pod = engine_pod(settings(tmp_path, kubernetes_env_secret="sg-env"), engine())
    env = env_of(pod)
    assert "SPARKGATE_STORE_URL" not in env
    assert not [name for name in env if "PASSWORD" in name or "SECRET" in name]
    assert pod["spec"]["containers"][0]["envFrom"] == [{"secretRef": {"name": "sg-env"}}]


@pytest.mark.parametrize(
    ("kind", "key", "level"),
    [
        (EngineKind.SHARED, "user:ann", "user"),
        (EngineKind.SHARED, "group:bi", "group"),
        (EngineKind.SHARED, None, "server"),
        (EngineKind.SHARED, "session:ab12", "connection"),
        (EngineKind.DEDICATED, None, "default"),
    ],
)
def test_pod_settings_follow_the_share_level(
    tmp_path: Path, kind: EngineKind, key: str | None, level: str
) -> None:
    base: dict[str, Any] = {"cpu": "1", "memory": "2g", "node_selector": {"pool": "spark"}}
    own: dict[str, Any] = {"cpu": "3", "max_executors": 5, "service_account": f"sa-{level}"}
    pods = {"default": EnginePod(**base)}
    pods[level] = EnginePod(**({**base, **own} if level == "default" else own))
    record = engine(kind, key)
    assert share_level(record) == level
    pod = engine_pod(settings(tmp_path, kubernetes_engine_pods=pods), record)
    spec = pod["spec"]
    assert spec["containers"][0]["resources"]["requests"]["cpu"] == "3"  # the level's
    assert spec["containers"][0]["resources"]["requests"]["memory"] == "2867Mi"  # default's 2g
    assert spec["nodeSelector"] == {"pool": "spark"}
    assert spec["serviceAccountName"] == f"sa-{level}"
    executors = json.loads(env_of(pod)["SPARKGATE_POD_SPARK_CONF"])
    assert executors["spark.dynamicAllocation.maxExecutors"] == "5"
    assert executors["spark.kubernetes.node.selector.pool"] == "spark"


def test_the_pod_template_is_the_base_of_driver_and_executors(tmp_path: Path) -> None:
    template = tmp_path / "pod.yaml"
    template.write_text(
        yaml.safe_dump(
            {
                "apiVersion": "v1", "kind": "Pod",
                "metadata": {"labels": {"team": "data"}},
                "spec": {
                    "volumes": [{"name": "shared", "persistentVolumeClaim": {"claimName": "sg"}}],
                    "containers": [{"name": "x", "volumeMounts": [
                        {"name": "shared", "mountPath": "/srv/sparkgate"}]}],
                },
            }
        )
    )  # fmt: skip
    tolerations = [{"key": "spark", "operator": "Exists", "effect": "NoSchedule"}]
    pods = {"default": EnginePod(template=template, tolerations=tolerations)}
    pod = engine_pod(settings(tmp_path, kubernetes_engine_pods=pods), engine())
    container = pod["spec"]["containers"][0]
    assert container["name"] == "engine"
    assert container["volumeMounts"] == [{"name": "shared", "mountPath": "/srv/sparkgate"}]
    assert pod["spec"]["volumes"][0]["name"] == "shared"
    assert pod["spec"]["tolerations"] == tolerations
    assert pod["metadata"]["labels"]["team"] == "data"
    executor = yaml.safe_load(env_of(pod)["SPARKGATE_POD_EXECUTOR_TEMPLATE"])
    assert executor["spec"]["tolerations"] == tolerations
    assert executor["spec"]["volumes"][0]["name"] == "shared"


def test_a_template_that_is_not_a_pod_is_refused(tmp_path: Path) -> None:
    template = tmp_path / "pod.yaml"
    template.write_text("kind: Deployment\n")
    pods = {"default": EnginePod(template=template)}
    with pytest.raises(LaunchRefused, match="is not a Pod"):
        engine_pod(settings(tmp_path, kubernetes_engine_pods=pods), engine())


@pytest.mark.parametrize(
    ("values", "words"),
    [
        ({"store_url": None}, "cannot use this node's SQLite file"),
        ({"kubernetes_image": None}, "SPARKGATE_KUBERNETES_IMAGE is not set"),
    ],
)
def test_what_a_pod_cannot_work_with_is_refused(
    tmp_path: Path, values: dict[str, Any], words: str
) -> None:
    with pytest.raises(LaunchRefused) as refused:
        refuse_unless_runnable(settings(tmp_path, **values))
    assert words in refused.value.message


def test_unknown_pod_settings_are_refused() -> None:
    with pytest.raises(ValueError, match="cpus"):
        EnginePod.model_validate({"cpus": "2"})


def test_memory_strings_read_as_spark_reads_them() -> None:
    assert [memory_mib(s) for s in ("512m", "2g", "1.5g", "2048k", "1073741824")] == [
        512, 2048, 1536, 2, 1024,
    ]  # fmt: skip


def test_the_engine_in_a_pod_drives_executors_from_its_own_address(tmp_path: Path) -> None:
    environ = {
        "SPARKGATE_POD_IP": "10.1.2.3", "SPARKGATE_POD_NAME": "sg-engine-7",
        "SPARKGATE_POD_NAMESPACE": "data", "KUBERNETES_SERVICE_HOST": "10.96.0.1",
        "KUBERNETES_SERVICE_PORT": "443",
        "SPARKGATE_POD_SPARK_CONF": json.dumps({"spark.executor.memory": "2g"}),
        "SPARKGATE_POD_EXECUTOR_TEMPLATE": "kind: Pod\n",
    }  # fmt: skip
    conf = pod_spark_conf(environ)
    assert pod_defaults(environ) == {"spark.executor.memory": "2g"}
    assert conf["spark.master"] == "k8s://https://10.96.0.1:443"
    assert conf["spark.submit.deployMode"] == "client"
    assert conf["spark.driver.host"] == conf["spark.driver.bindAddress"] == "10.1.2.3"
    assert conf["spark.kubernetes.driver.pod.name"] == "sg-engine-7"
    assert conf["spark.kubernetes.namespace"] == "data"
    template = Path(conf["spark.kubernetes.executor.podTemplateFile"])
    try:
        assert template.read_text() == "kind: Pod\n"
    finally:
        template.unlink()
    assert pod_spark_conf({}) == pod_defaults({}) == {}  # not in a pod
