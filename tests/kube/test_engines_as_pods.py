"""sparkgate on Kubernetes, end to end: the Helm chart installed with Helm's own library into
the local control plane (RBAC enforced), two nodes as pods of its Deployment, each launching
engines as driver pods under the chart's service account, executors as pods of their own.

The kubelet is the test one (tests/kube/conftest.py): pods are local processes and the image is
this checkout with its virtualenv ("sparkgate:test"), so the nodes and engines run the code under
test. Everything else (the API server, RBAC, the controllers, Helm, Spark's Kubernetes backend)
is the real thing.
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
import pytest
from kubernetes import client as k8s

from sparkgate_dev.kube import Cluster
from sparkgate_dev.proxy import TcpProxy
from tests.conftest import _pg_reachable, _pg_schema

helm = pytest.importorskip("helm_python")

ROOT = Path(__file__).resolve().parents[2]
CHART = ROOT / "deploy" / "helm" / "sparkgate"
ENTRYPOINT = ROOT / "deploy" / "image" / "entrypoint"
VENV = ROOT / ".venv" / "bin"
NS = "analytics"
RELEASE = "sg"
FULLNAME = f"{RELEASE}-sparkgate"
ADMIN = ("admin", "admin-password-1")
NODES = "app.kubernetes.io/component=node"
ENGINES = "sparkgate.io/role=driver"
EXECUTORS = "spark-role=executor"

T = TypeVar("T")


def wait_for(what: str, probe: Callable[[], T | None], timeout: float = 240.0) -> T:
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
class Deployed:
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


@pytest.fixture(scope="module")
def deployed(cluster: Cluster, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Deployed]:
    reason = _pg_reachable()
    if reason:
        pytest.skip(reason)
    cluster.add_local_image("sparkgate:test", [str(ENTRYPOINT)], image_env())
    home = tmp_path_factory.mktemp("sparkgate-home")
    os.chmod(home, 0o777)
    with _pg_schema() as store_url:
        values: dict[str, Any] = {
            "image": {"repository": "sparkgate", "tag": "test"},
            "replicaCount": 2,
            "ports": {"http": 8998, "thrift": 10009, "connect": 15002},
            "store": {"url": store_url},
            "storage": {"hostPath": str(home)},
            # The "image" is the host's filesystem, whose Python lives under /root.
            "podSecurityContext": {"runAsUser": 0, "runAsGroup": 0, "fsGroup": 0},
            "insecure": True,  # no TLS between the test and the pods (loopback addresses)
            "auth": {"methods": "password", "admin": {"name": ADMIN[0], "password": ADMIN[1]}},
            "config": {
                "catalog": "in-memory",
                "warm_engines": 0,
                "engine_start_timeout": 240,
                "spark_conf": {"spark.sql.shuffle.partitions": "2"},
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
        cluster.core().create_namespace(k8s.V1Namespace(metadata=k8s.V1ObjectMeta(name=NS)))
        config = helm.Config(namespace=NS, kubeconfig_path=str(cluster.kubeconfig))
        try:
            config.install(str(CHART), RELEASE, values, namespace=NS, timeout=300)
            found = Deployed(cluster, config, values)
            wait_for("two ready nodes", lambda: len(found.ready_nodes()) == 2)
            yield found
        finally:
            with contextlib.suppress(Exception):
                config.uninstall(RELEASE, ignore_not_found=True, timeout=120)
            core = cluster.core()
            # Whatever is left (a failed test) goes with its namespace, before its schema.
            for pod in core.list_namespaced_pod(NS).items:
                name: Any = pod.metadata and pod.metadata.name
                with contextlib.suppress(k8s.ApiException):
                    core.delete_namespaced_pod(name, NS, grace_period_seconds=0)
            wait_for("no pods", lambda: not core.list_namespaced_pod(NS).items, timeout=120)
            config.close()


def run(api: httpx.Client, sql: str, wait: float = 200) -> dict[str, Any]:
    answer = api.post("/v1/queries", json={"query": sql}, params={"wait": wait})
    assert answer.status_code in (200, 201, 202), answer.text
    query: dict[str, Any] = answer.json()
    return query


def engine_of(api: httpx.Client, query: dict[str, Any]) -> int:
    engine: int = api.get(f"/v1/sessions/{query['session_id']}").json()["engine_id"]
    return engine


def test_a_query_at_each_door_runs_on_an_engine_pod_with_executor_pods(
    deployed: Deployed,
) -> None:
    with deployed.api() as api:
        query = run(api, "SELECT sum(id) AS total FROM range(1000)")
        assert query["state"] == "success", query
        assert query["page"]["rows"] == [[499500]]
        engines = api.get("/v1/engines").json()["engines"]
    pods = {f"{NS}/{p.metadata.name}": p for p in deployed.pods(ENGINES)}
    assert pods and {e["pod"] for e in engines} <= set(pods), (engines, sorted(pods))
    # The engine's executors are pods of their own, owned by its driver pod.
    executors = deployed.pods(EXECUTORS)
    assert executors, "no executor pod"
    owners = {o.name for p in executors for o in p.metadata.owner_references or []}
    assert owners <= {p.metadata.name for p in pods.values()}
    node = deployed.ready_nodes()[0]
    # HiveServer2 (PyHive), on the node pod's address.
    from pyhive import hive

    with contextlib.closing(
        hive.connect(
            host=node.status.pod_ip, port=10009, username=ADMIN[0], password=ADMIN[1],
            auth="CUSTOM",
        )
    ) as connection, contextlib.closing(connection.cursor()) as cursor:  # fmt: skip
        cursor.execute("SELECT count(*) FROM range(42)")
        assert cursor.fetchall() == [(42,)]
    # Spark Connect (pyspark's own client): the node forwards to the engine pod's service.
    # pyspark sends a token in plain text to localhost only (else it wants TLS): the test
    # reaches the node through a local forward, as `kubectl port-forward` would.
    with deployed.api(node) as api:
        token = api.post("/v1/tokens", json={"name": "connect"}).json()["token"]
    from pyspark.sql.connect.session import SparkSession

    forward = TcpProxy((node.status.pod_ip, 15002)).start()
    try:
        spark = SparkSession.builder.remote(
            f"sc://localhost:{forward.port}/;token={token}"
        ).create()
        try:
            assert spark.range(10).selectExpr("sum(id) AS s").collect()[0]["s"] == 45
        finally:
            spark.stop()
    finally:
        forward.stop()
    # An admin reads an engine pod's log through the API server.
    with deployed.api() as api:
        log = api.get(f"/v1/engines/{engines[0]['id']}/log", params={"tail": 50})
        assert log.status_code == 200 and log.json()["log"].strip(), log.text


def test_the_service_accounts_may_do_what_launching_needs_and_nothing_more(
    deployed: Deployed,
) -> None:
    """Asked of the API server itself (RBAC on): a node's account creates, watches, deletes
    engine pods and reads their logs; an engine's creates and deletes its executors."""
    authz = k8s.AuthorizationV1Api(deployed.cluster.api_client())

    def may(account: str, verb: str, resource: str, sub: str = "", ns: str = NS) -> bool:
        review: Any = authz.create_subject_access_review(
            {  # type: ignore[arg-type]
                "spec": {
                    "user": f"system:serviceaccount:{NS}:{account}",
                    "groups": ["system:serviceaccounts", f"system:serviceaccounts:{NS}"],
                    "resourceAttributes": {
                        "namespace": ns, "verb": verb, "resource": resource, "subresource": sub,
                    },
                }
            }
        )  # fmt: skip
        return bool(review.status.allowed)

    node, engine = FULLNAME, f"{FULLNAME}-engine"
    for verb in ("create", "get", "list", "watch", "delete"):
        assert may(node, verb, "pods") and may(engine, verb, "pods")
    assert may(node, "get", "pods", "log") and not may(engine, "get", "pods", "log")
    assert may(engine, "deletecollection", "pods")
    for account in (node, engine):
        assert not may(account, "get", "secrets")
        assert not may(account, "create", "deployments")
        assert not may(account, "patch", "pods")
        assert not may(account, "create", "pods", ns="default")


def test_a_deleted_engine_pod_loses_its_query_and_the_next_query_gets_a_new_pod(
    deployed: Deployed,
) -> None:
    with deployed.api() as api:
        sleeper = run(api, "SELECT java_method('java.lang.Thread', 'sleep', 600000L)", wait=0)
        query_id = sleeper["id"]
        wait_for(
            "the long query to run",
            lambda: api.get(f"/v1/queries/{query_id}").json()["state"] == "running",
        )
        engine_id = engine_of(api, sleeper)
        engine = api.get(f"/v1/engines/{engine_id}").json()
        namespace, name = engine["pod"].split("/")
        deployed.core.delete_namespaced_pod(name, namespace, grace_period_seconds=0)
        ended = wait_for(
            "the query to end",
            lambda: (q := api.get(f"/v1/queries/{query_id}").json())["state"] != "running" and q,
            timeout=120,
        )
        assert ended["state"] == "failed" and ended["error"]["code"] == "ENGINE_LOST", ended
        assert "pod" in ended["error"]["message"]
        again = run(api, "SELECT 1 AS one")
        assert again["state"] == "success", again
        assert engine_of(api, again) != engine_id
        new = api.get(f"/v1/engines/{engine_of(api, again)}").json()
    assert new["pod"] != engine["pod"]
    assert name not in {p.metadata.name for p in deployed.pods(ENGINES)}


def test_a_killed_node_pod_leaves_its_engines_to_the_other_node(deployed: Deployed) -> None:
    first, second = deployed.ready_nodes()[:2]
    with deployed.api(first) as api:
        before = run(api, "SELECT 2 AS two")
    assert before["state"] == "success", before
    engines_before = {p.metadata.name for p in deployed.pods(ENGINES)}
    deployed.core.delete_namespaced_pod(first.metadata.name, NS, grace_period_seconds=0)
    with deployed.api(second) as api:
        after = run(api, "SELECT 3 AS three")
        assert after["state"] == "success", after
        # The same engine serves: no second one launched because a node went.
        assert engine_of(api, after) == engine_of(api, before)
        assert api.get(f"/v1/queries/{before['id']}").json()["state"] == "success"
    assert {p.metadata.name for p in deployed.pods(ENGINES)} == engines_before
    # The Deployment replaces the node.
    wait_for(
        "a new second node",
        lambda: (
            len(nodes := deployed.ready_nodes()) == 2
            and first.metadata.name not in {n.metadata.name for n in nodes}
        ),
    )


def test_an_upgrade_rolls_the_nodes_without_losing_a_query(deployed: Deployed) -> None:
    old_nodes = {p.metadata.name for p in deployed.ready_nodes()}
    with deployed.api() as api:
        running = run(api, "SELECT java_method('java.lang.Thread', 'sleep', 20000L) AS slept", 0)
    values = {**deployed.values, "config": {**deployed.values["config"], "result_page_max": 5000}}
    deployed.upgrade(values)
    wait_for(
        "the nodes to roll",
        lambda: (
            len(nodes := deployed.ready_nodes()) == 2
            and not old_nodes & {n.metadata.name for n in nodes}
        ),
    )
    with deployed.api() as api:
        done = wait_for(
            "the query to end",
            lambda: (
                (q := api.get(f"/v1/queries/{running['id']}", params={"wait": 30}).json())["state"]
                not in {"queued", "running", "waiting", "cancelling"}
                and q
            ),
        )
    assert done["state"] == "success", done
    node = deployed.ready_nodes()[0]
    env = {e.name: e.value for e in node.spec.containers[0].env}
    assert env["SPARKGATE_RESULT_PAGE_MAX"] == "5000"


def test_uninstall_leaves_no_pod(deployed: Deployed) -> None:
    assert deployed.pods(ENGINES)
    deployed.helm.uninstall(RELEASE, timeout=180)
    wait_for("no pods", lambda: not deployed.core.list_namespaced_pod(NS).items, timeout=180)
