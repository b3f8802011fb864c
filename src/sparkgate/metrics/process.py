"""This process's figures, kept in memory by a server node and labelled with its id.

Each node holds its own metric objects, registered in no global registry: ``GET /metrics``
puts them in a fresh registry per scrape. So several nodes can live in one process (the tests
start several) without prometheus_client's duplicate-registration errors, and each reports
only what it measured. Python's standard process, platform and garbage-collector figures
come along, with the same ``node`` label.

    metrics = NodeMetrics(node_id)
    metrics.observe_request("GET", "/v1/queries/{query_id}", 200, 0.004)
"""

from __future__ import annotations

from collections.abc import Iterator

from prometheus_client import (
    Counter,
    GCCollector,
    Histogram,
    PlatformCollector,
    ProcessCollector,
)
from prometheus_client.metrics_core import Metric
from prometheus_client.registry import Collector, CollectorRegistry

# HTTP: most answers take milliseconds; long polls hold up to long_poll_max (120 s).
HTTP_SECONDS = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 120.0)
# Store transactions: sub-millisecond on SQLite, a network round trip or two on PostgreSQL; the
# upper buckets show lock waits (SQLite's busy timeout is 30 s).
STORE_SECONDS = (0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 5.0, 30.0)
# What a failed login presented, never what it contained.
AUTH_SCHEMES = ("basic", "bearer", "other")


class NodeMetrics(Collector):
    def __init__(self, node_id: str) -> None:
        self.node_id = node_id
        self.http_requests = Histogram(
            "sparkgate_http_request_duration_seconds",
            "HTTP requests this node answered, by method, route template and status",
            ["method", "route", "status"],
            buckets=HTTP_SECONDS,
            registry=None,
        )
        self.store_transactions = Histogram(
            "sparkgate_store_transaction_duration_seconds",
            "Store transactions this node ran, begin to end, by mode (read or write)",
            ["mode"],
            buckets=STORE_SECONDS,
            registry=None,
        )
        self.auth_failures = Counter(
            "sparkgate_auth_failures",
            "Failed logins at this node (HTTP and HiveServer2), by the scheme presented",
            ["scheme"],
            registry=None,
        )
        for scheme in AUTH_SCHEMES:
            self.auth_failures.labels(scheme=scheme)  # a zero to compare with from the start
        # Every store transaction is observed: the two series are looked up once, not each time.
        self._transactions = {
            mode: self.store_transactions.labels(mode=mode) for mode in ("read", "write")
        }
        # prometheus_client's own collectors, in a registry of this node's (GCCollector
        # cannot be made without one; it registers nothing on interpreters other than CPython).
        self._standard = CollectorRegistry()
        ProcessCollector(registry=self._standard)
        PlatformCollector(registry=self._standard)
        GCCollector(registry=self._standard)

    def observe_request(self, method: str, route: str, status: int, seconds: float) -> None:
        self.http_requests.labels(method=method, route=route, status=str(status)).observe(seconds)

    def observe_transaction(self, mode: str, seconds: float) -> None:
        series = self._transactions.get(mode) or self.store_transactions.labels(mode=mode)
        series.observe(seconds)

    def failed_login(self, scheme: str) -> None:
        self.auth_failures.labels(scheme=scheme if scheme in AUTH_SCHEMES else "other").inc()

    def collect(self) -> Iterator[Metric]:
        collectors: list[Collector] = [
            self.http_requests,
            self.store_transactions,
            self.auth_failures,
            self._standard,
        ]
        for collector in collectors:
            for family in collector.collect():
                yield _with_node(family, self.node_id)


def _with_node(family: Metric, node_id: str) -> Metric:
    labelled = Metric(family.name, family.documentation, family.type, family.unit)
    labelled.samples = [
        sample._replace(labels={**sample.labels, "node": node_id})
        for sample in family.samples
        # When each series was created: clutter that no dashboard here reads.
        if not sample.name.endswith("_created")
    ]
    return labelled
