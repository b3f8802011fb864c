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
from collections.abc import Iterator
from typing import Any

import pytest
from kubernetes import client as k8s

from sparkgate_dev.kube import Cluster
from sparkgate_dev.kube.release import (
    ADMIN,
    ENGINES,
    EXECUTORS,
    FULLNAME,
    NS,
    RELEASE,
    Release,
    engine_of,
    installed,
    run,
    small_values,
    wait_for,
)
from sparkgate_dev.proxy import TcpProxy
from tests.conftest import _pg_reachable, _pg_schema

pytest.importorskip("helm_python")


@pytest.fixture(scope="module")
def deployed(cluster: Cluster, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Release]:
    reason = _pg_reachable()
    if reason:
        pytest.skip(reason)
    home = tmp_path_factory.mktemp("sparkgate-home")
    with _pg_schema() as store_url, installed(cluster, small_values(store_url, home)) as release:
        yield release


def test_a_query_at_each_door_runs_on_an_engine_pod_with_executor_pods(
    deployed: Release,
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
    deployed: Release,
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
    deployed: Release,
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


def test_idle_executors_go_and_an_ended_engines_pod_is_deleted(deployed: Release) -> None:
    """A session with a driver setting of its own gets a dedicated engine (no executor kept):
    its executor pod comes for a query and goes when idle; its driver pod goes when the
    session ends and its engine exits."""
    with deployed.api() as api:
        session = api.post("/v1/sessions", json={"conf": {"spark.executor.memory": "512m"}})
        assert session.status_code == 201, session.text
        session_id = session.json()["id"]
        query = run(api, "SELECT count(*) AS n FROM range(100000)", session_id=session_id)
        assert query["state"] == "success" and query["page"]["rows"] == [[100000]], query
        engine = api.get(f"/v1/engines/{engine_of(api, query)}").json()
        assert engine["kind"] == "dedicated"
        name = engine["pod"].split("/")[1]
        selector = f"sparkgate.io/engine={engine['id']},{EXECUTORS}"
        assert deployed.pods(selector), "its executor pod"
        wait_for("its idle executor pod to go", lambda: not deployed.pods(selector), timeout=120)
        driver: Any = deployed.core.read_namespaced_pod(name, NS)
        assert driver.status.phase == "Running"
        assert api.delete(f"/v1/sessions/{session_id}").status_code in (200, 202, 204)
    deployed.cluster.wait_pod_gone(NS, name, timeout=120)


def test_a_killed_node_pod_leaves_its_engines_to_the_other_node(deployed: Release) -> None:
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


def test_an_upgrade_rolls_the_nodes_without_losing_a_query(deployed: Release) -> None:
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


def test_uninstall_leaves_no_pod(deployed: Release) -> None:
    assert deployed.pods(ENGINES)
    deployed.helm.uninstall(RELEASE, timeout=180)
    wait_for("no pods", lambda: not deployed.core.list_namespaced_pod(NS).items, timeout=180)
