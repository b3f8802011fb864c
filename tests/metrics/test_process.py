"""A node's own figures: several nodes in one process, each in a fresh registry per scrape,
every series labelled with its node; and the store transactions it times."""

from __future__ import annotations

from pathlib import Path

import pytest
from prometheus_client import generate_latest
from prometheus_client.parser import text_string_to_metric_families
from prometheus_client.registry import CollectorRegistry

from sparkgate.metrics.process import NodeMetrics
from sparkgate.store import Store


def scrape(metrics: NodeMetrics) -> dict[tuple[str, frozenset[tuple[str, str]]], float]:
    registry = CollectorRegistry()
    registry.register(metrics)
    text = generate_latest(registry).decode()
    return {
        (s.name, frozenset(s.labels.items())): s.value
        for family in text_string_to_metric_families(text)
        for s in family.samples
    }


def test_two_nodes_in_one_process_keep_their_own_figures() -> None:
    first, second = NodeMetrics("node-a"), NodeMetrics("node-b")
    first.observe_request("GET", "/v1/queries/{query_id}", 200, 0.003)
    first.failed_login("basic")
    first.failed_login("Negotiate")  # whatever a client sends, the label stays one of three
    for _ in range(2):  # a registry per scrape: registering again is no error
        a, b = scrape(first), scrape(second)
    request = {"method": "GET", "route": "/v1/queries/{query_id}", "status": "200"}
    labels = frozenset({**request, "node": "node-a"}.items())
    assert a[("sparkgate_http_request_duration_seconds_count", labels)] == 1
    assert a[("sparkgate_http_request_duration_seconds_bucket", labels | {("le", "0.005")})] == 1
    failures = "sparkgate_auth_failures_total"
    assert a[(failures, frozenset({"scheme": "basic", "node": "node-a"}.items()))] == 1
    assert a[(failures, frozenset({"scheme": "other", "node": "node-a"}.items()))] == 1
    assert b[(failures, frozenset({"scheme": "basic", "node": "node-b"}.items()))] == 0
    assert not any(name.startswith("sparkgate_http") for name, _ in b)
    for found, node in ((a, "node-a"), (b, "node-b")):
        assert all(dict(labels)["node"] == node for _, labels in found)
        assert not any(name.endswith("_created") for name, _ in found)
        assert any(name.startswith("python_") for name, _ in found)


def test_the_store_reports_each_transaction(tmp_path: Path) -> None:
    store = Store.open(f"sqlite:///{tmp_path / 'store.db'}")
    try:
        store.migrate()
        seen: list[tuple[str, float]] = []
        store.db.observe = lambda mode, seconds: seen.append((mode, seconds))
        with store.db.read():
            pass
        with store.db.begin():
            pass
        with pytest.raises(RuntimeError), store.db.read():
            raise RuntimeError("a failed transaction is timed too")
        assert [mode for mode, _ in seen] == ["read", "write", "read"]
        assert all(seconds >= 0 for _, seconds in seen)
    finally:
        store.close()
