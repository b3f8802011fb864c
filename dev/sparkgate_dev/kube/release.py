"""sparkgate released into a local Kubernetes with its Helm chart (Helm's own library), for
the end-to-end tests (tests/kube) and the benchmark (bench/kube.py).

The image is this checkout with its virtualenv, declared as a local image of the test kubelet
("sparkgate:test"), so the nodes and engines in the pods run the code under test.
"""

from __future__ import annotations

import contextlib
import os
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

import httpx
from kubernetes import client as k8s

from sparkgate_dev.kube import Cluster

ROOT = Path(__file__).resolve().parents[3]
CHART = ROOT / "deploy" / "helm" / "sparkgate"
ENTRYPOINT = ROOT / "deploy" / "image" / "entrypoint"
VENV = ROOT / ".venv" / "bin"
IMAGE = "sparkgate:test"
NS = "analytics"
RELEASE = "sg"
FULLNAME = f"{RELEASE}-sparkgate"
ADMIN = ("admin", "admin-password-1")
NODES = "app.kubernetes.io/component=node"
ENGINES = "sparkgate.io/role=driver"
EXECUTORS = "spark-role=executor"

T = TypeVar("T")


def wait_for(what: str, probe: Callable[[], T | None], timeout: float = 240.0) -> T:
    """``probe``'s first truthy answer; API and HTTP errors count as not yet."""
    deadline = time.monotonic() + timeout
    last: Any = None
    while time.monotonic() < deadline:
        try:
            found = probe()
        except (httpx.HTTPError, k8s.ApiException) as exc:
            found, last = None, exc
        if found:
            return found
        time.sleep(0.5)
    raise AssertionError(f"timed out waiting for {what} (last error: {last!r})")


@dataclass
class Release:
    cluster: Cluster
    helm: Any  # helm_python.Config
    values: dict[str, Any]

    @property
    def core(self) -> k8s.CoreV1Api:
        return self.cluster.core()

    def pods(self, selector: str) -> list[Any]:
        return list(self.core.list_namespaced_pod(NS, label_selector=selector).items)

    def ready_nodes(self) -> list[Any]:
        return [
            p
            for p in self.pods(NODES)
            if p.metadata.deletion_timestamp is None
            and any(c.type == "Ready" and c.status == "True" for c in p.status.conditions or [])
        ]

    def node_url(self, pod: Any | None = None) -> str:
        pod = pod or self.ready_nodes()[0]
        return f"http://{pod.status.pod_ip}:{self.values['ports']['http']}"

    @contextlib.contextmanager
    def api(self, pod: Any | None = None) -> Iterator[httpx.Client]:
        with httpx.Client(base_url=self.node_url(pod), auth=ADMIN, timeout=120) as client:
            yield client

    def upgrade(self, values: dict[str, Any]) -> None:
        self.helm.upgrade(str(CHART), RELEASE, values, namespace=NS, timeout=300)
        self.values = values


def image_env() -> dict[str, str]:
    """The "image" the test kubelet runs: this checkout's virtualenv on the host."""
    return {
        "PATH": f"{VENV}:/usr/local/bin:/usr/bin:/bin",
        "SPARKGATE_PYTHON": str(VENV / "python"),
        "PYSPARK_PYTHON": str(VENV / "python"),
        "HOME": "/tmp",
    }


def small_values(store_url: str, home: Path, *, replicas: int = 2) -> dict[str, Any]:
    """Chart values for a release on the test kubelet: small engines, no TLS."""
    return {
        "image": {"repository": IMAGE.split(":", maxsplit=1)[0], "tag": IMAGE.split(":")[1]},
        "replicaCount": replicas,
        "ports": {"http": 8998, "thrift": 10009, "connect": 15002},
        "store": {"url": store_url},
        "storage": {"hostPath": str(home)},
        # The "image" is the host's filesystem, whose Python lives under /root.
        "podSecurityContext": {"runAsUser": 0, "runAsGroup": 0, "fsGroup": 0},
        "insecure": True,  # no TLS between the test and the pods (local addresses)
        "auth": {"methods": "password", "admin": {"name": ADMIN[0], "password": ADMIN[1]}},
        "config": {
            "catalog": "in-memory",
            "warm_engines": 0,
            "engine_start_timeout": 240,
            "spark_conf": {
                "spark.sql.shuffle.partitions": "2",
                # Idle executors go sooner than the 30 s sparkgate sets (an admin's choice wins).
                "spark.dynamicAllocation.executorIdleTimeout": "3s",
                "spark.dynamicAllocation.shuffleTracking.timeout": "5s",
            },
        },
        "engines": {
            "pods": {
                "default": {
                    "cpu": "100m",
                    "memory": "512m",
                    "executor_cpu": "100m",
                    "executor_memory": "512m",
                    "max_executors": 1,
                }
            }
        },
    }


@contextlib.contextmanager
def installed(cluster: Cluster, values: dict[str, Any]) -> Iterator[Release]:
    """The chart installed with ``values``, its nodes ready; uninstalled afterwards, and every
    pod of the namespace gone before this returns."""
    import helm_python as helm

    cluster.add_local_image(IMAGE, [str(ENTRYPOINT)], image_env())
    home = Path(values["storage"]["hostPath"])
    home.mkdir(parents=True, exist_ok=True)
    os.chmod(home, 0o777)
    cluster.core().create_namespace(k8s.V1Namespace(metadata=k8s.V1ObjectMeta(name=NS)))
    config = helm.Config(namespace=NS, kubeconfig_path=str(cluster.kubeconfig))
    try:
        config.install(str(CHART), RELEASE, values, namespace=NS, timeout=300)
        release = Release(cluster, config, values)
        wait_for(
            f"{values['replicaCount']} ready nodes",
            lambda: len(release.ready_nodes()) == values["replicaCount"],
        )
        yield release
    finally:
        with contextlib.suppress(Exception):
            config.uninstall(RELEASE, ignore_not_found=True, timeout=120)
        core = cluster.core()
        # Whatever is left (a failed test) goes, before the store's schema does.
        for pod in core.list_namespaced_pod(NS).items:
            name: Any = pod.metadata and pod.metadata.name
            with contextlib.suppress(k8s.ApiException):
                core.delete_namespaced_pod(name, NS, grace_period_seconds=0)
        wait_for("no pods", lambda: not core.list_namespaced_pod(NS).items, timeout=120)
        with contextlib.suppress(k8s.ApiException):
            core.delete_namespace(NS)
        config.close()


def run(api: httpx.Client, sql: str, wait: float = 200, **body: Any) -> dict[str, Any]:
    """A query through REST, waited for ``wait`` seconds (0: not waited for)."""
    answer = api.post(
        "/v1/queries", json={"query": sql, **body}, params={"wait": wait} if wait else None
    )
    assert answer.status_code in (200, 201, 202), answer.text
    query: dict[str, Any] = answer.json()
    return query


def engine_of(api: httpx.Client, query: dict[str, Any]) -> int:
    engine: int = api.get(f"/v1/sessions/{query['session_id']}").json()["engine_id"]
    return engine
