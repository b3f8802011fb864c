"""``/metrics`` through real HTTP: the cluster's figures move as real queries run on real
engines (the shared server), and a node's own figures (HTTP latency by route template, store
transactions, failed logins at the HTTP and HiveServer2 doors) on a server with
authentication and no Spark."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import httpx
import pytest
from prometheus_client.metrics_core import Metric
from prometheus_client.parser import text_string_to_metric_families
from pyhive import hive
from thrift.transport.TTransport import TTransportException

from sparkgate.auth.passwords import PasswordFile
from sparkgate.client import Client
from sparkgate_dev import ServerProcess, free_port, local_test_settings
from tests.e2e.conftest import OpenSession, run, wait_idle

# Read from the store: the same on every node, labelled scope="cluster".
CLUSTER_FAMILIES = {
    "sparkgate_sessions",
    "sparkgate_queries",
    "sparkgate_engines",
    "sparkgate_queries_submitted",
    "sparkgate_queries_finished",
    "sparkgate_query_duration_seconds",
    "sparkgate_query_queue_wait_seconds",
    "sparkgate_engine_heartbeat_age_seconds",
    "sparkgate_stream_jobs",
    "sparkgate_stream_queries",
    "sparkgate_stream_input_rows_per_second",
    "sparkgate_stream_processed_rows_per_second",
    "sparkgate_stream_batch_duration_seconds",
    "sparkgate_stream_restarts",
    "sparkgate_stream_restart_backoff_seconds",
    "sparkgate_deploy_decisions",
    "sparkgate_query_executor_cpu_seconds",
    "sparkgate_query_executor_run_seconds",
}
# Measured by the node itself, labelled node="<its id>".
NODE_FAMILIES = {
    "sparkgate_http_request_duration_seconds",
    "sparkgate_store_transaction_duration_seconds",
    "sparkgate_auth_failures",
}
STANDARD_PREFIXES = ("process_", "python_")  # prometheus_client's own collectors


def scrape(url: str, **kwargs: Any) -> list[Metric]:
    response = httpx.get(f"{url}/metrics", timeout=30, **kwargs)
    assert response.status_code == 200, response.text
    return list(text_string_to_metric_families(response.text))


def value(families: list[Metric], sample: str, **labels: str) -> float:
    """The sum of the samples so named whose labels include ``labels`` (0 when none)."""
    return sum(
        s.value
        for family in families
        for s in family.samples
        if s.name == sample and labels.items() <= s.labels.items()
    )


def label_values(families: list[Metric], sample: str, label: str) -> set[str]:
    return {s.labels[label] for f in families for s in f.samples if s.name == sample}


def check_labels(families: list[Metric]) -> str:
    """Every cluster series says scope="cluster" and no node; every process series names the
    node (one node). The node's id."""
    names = {family.name for family in families}
    assert names >= CLUSTER_FAMILIES | NODE_FAMILIES, sorted(CLUSTER_FAMILIES - names)
    nodes: set[str] = set()
    for family in families:
        if family.name in CLUSTER_FAMILIES:
            for sample in family.samples:
                assert sample.labels.get("scope") == "cluster", sample
                assert "node" not in sample.labels, sample
        else:
            standard = family.name.startswith(STANDARD_PREFIXES)
            assert family.name in NODE_FAMILIES or standard, f"unexpected {family.name}"
            for sample in family.samples:
                assert "scope" not in sample.labels, sample
                nodes.add(sample.labels["node"])
    assert len(nodes) == 1, nodes
    assert value(families, "process_cpu_seconds_total") > 0  # the standard collectors are in
    return nodes.pop()


def no_raw_paths(routes: set[str]) -> None:
    for route in routes:
        assert not any(part.isdigit() for part in route.split("/")), route


@pytest.mark.spark
def test_query_figures_move(server: ServerProcess, sg: Client, interactive: OpenSession) -> None:
    session = interactive()
    before = scrape(server.url)
    ok = run(sg, "SELECT 1 AS one", session.id)
    assert ok.state == "success", ok
    wait_idle(sg, session.id)
    bad = run(sg, "SELECT no_such_column FROM range(1)", session.id)
    assert bad.state == "failed", bad
    wait_idle(sg, session.id)
    after = scrape(server.url)

    def moved(sample: str, **labels: str) -> float:
        return value(after, sample, **labels) - value(before, sample, **labels)

    sql = {"scope": "cluster", "kind": "sql"}
    assert moved("sparkgate_queries_submitted_total", **sql) >= 2
    assert moved("sparkgate_queries_finished_total", **sql, state="success") >= 1
    assert moved("sparkgate_queries_finished_total", **sql, state="failed") >= 1
    assert moved("sparkgate_query_duration_seconds_count", **sql) >= 2
    assert moved("sparkgate_query_duration_seconds_sum", **sql) > 0
    assert moved("sparkgate_query_queue_wait_seconds_count", **sql) >= 2
    # Buckets are cumulative and the last (+Inf) holds every query.
    buckets = [
        s
        for f in after
        for s in f.samples
        if s.name == "sparkgate_query_duration_seconds_bucket" and s.labels["kind"] == "sql"
    ]
    counts = [s.value for s in buckets]
    assert counts == sorted(counts) and buckets[-1].labels["le"] == "+Inf"
    assert counts[-1] == value(after, "sparkgate_query_duration_seconds_count", **sql)

    engines = {"scope": "cluster", "kind": "shared", "state": "running"}
    assert value(after, "sparkgate_engines", **engines) == 1
    assert value(after, "sparkgate_sessions", scope="cluster", kind="interactive") >= 1
    ages = [s.value for f in after for s in f.samples if s.name.endswith("heartbeat_age_seconds")]
    assert ages and all(age >= 0 for age in ages)

    # The client long-polled GET /v1/queries/<id>: one series for the template, no raw path.
    http = "sparkgate_http_request_duration_seconds_count"
    routes = label_values(after, http, "route")
    assert "/v1/queries/{query_id}" in routes and "/v1/queries" in routes, routes
    no_raw_paths(routes)
    assert value(after, http, route="/v1/queries/{query_id}", method="GET", status="200") >= 2
    check_labels(after)


# -- a server with authentication and no Spark ------------------------------------------


@pytest.fixture(scope="module")
def auth_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[ServerProcess, int]]:
    home = tmp_path_factory.mktemp("metrics-home")
    PasswordFile(home / "passwords").set("alice", "alice-pw")
    thrift_port = free_port()
    settings = local_test_settings(
        home,
        catalog="in-memory",
        shared_engine=False,
        warm_engines=0,
        auth="password",
        auth_password_file=home / "passwords",
        thrift_port=thrift_port,
    )
    server = ServerProcess(settings).start()
    try:
        yield server, thrift_port
    finally:
        server.stop()


ALICE = ("alice", "alice-pw")


def test_failed_logins_are_counted_at_both_doors(auth_server: tuple[ServerProcess, int]) -> None:
    server, thrift_port = auth_server
    before = scrape(server.url, auth=ALICE)
    whoami = f"{server.url}/v1/whoami"
    # No credentials at all is the usual first request of a client: a challenge, not a failure.
    assert httpx.get(whoami, timeout=30).status_code == 401
    assert httpx.get(whoami, auth=("alice", "not-her-password"), timeout=30).status_code == 401
    bearer = {"Authorization": "Bearer not-a-token"}
    assert httpx.get(whoami, headers=bearer, timeout=30).status_code == 401
    with pytest.raises(TTransportException, match="Authentication failed"):
        hive.connect(
            "127.0.0.1",
            port=thrift_port,
            username="alice",
            password="not-her-password",
            auth="CUSTOM",
        )
    response = httpx.get(f"{server.url}/metrics", auth=ALICE, timeout=30)
    after = list(text_string_to_metric_families(response.text))

    def moved(scheme: str) -> float:
        sample = "sparkgate_auth_failures_total"
        return value(after, sample, scheme=scheme) - value(before, sample, scheme=scheme)

    assert moved("basic") == 2  # one over HTTP, one at the HiveServer2 binary door
    assert moved("bearer") == 1
    assert moved("other") == 0
    assert "not-her-password" not in response.text and "not-a-token" not in response.text


def test_node_figures_http_routes_and_store_transactions(
    auth_server: tuple[ServerProcess, int],
) -> None:
    server, _ = auth_server
    first = scrape(server.url, auth=ALICE)
    assert httpx.get(f"{server.url}/v1/queries/424242", auth=ALICE, timeout=30).status_code == 404
    assert httpx.get(f"{server.url}/no/such/thing/7", auth=ALICE, timeout=30).status_code == 404
    assert httpx.get(f"{server.url}/v1/whoami", auth=ALICE, timeout=30).status_code == 200
    second = scrape(server.url, auth=ALICE)

    http = "sparkgate_http_request_duration_seconds_count"
    assert value(second, http, route="/v1/queries/{query_id}", status="404") == 1
    assert value(second, http, route="/v1/whoami", method="GET", status="200") >= 1
    assert value(second, http, route="unmatched", status="404") >= 1
    assert value(second, http, route="/metrics", status="200") >= 1
    no_raw_paths(label_values(second, http, "route"))

    # Each scrape reads the store at least once; the looked-up query was a read too.
    store = "sparkgate_store_transaction_duration_seconds_count"
    assert value(second, store, mode="read") >= value(first, store, mode="read") + 2
    assert value(second, store, mode="write") >= 1  # migrations, leases of the node's duties
    assert value(second, "sparkgate_store_transaction_duration_seconds_sum") > 0
    node = check_labels(second)
    assert check_labels(first) == node
