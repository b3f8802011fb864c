"""The metrics reference: every Prometheus metric ``GET /metrics`` exports, with its type,
labels and help, collected from the collectors themselves.

The registry is built as the route builds it (``api/routes/metrics.py``): the cluster's
collector over a store (an empty one, made for the purpose) and a node's own metrics. The node's
are given one HTTP request and one store transaction first, so that every family has a sample
to read its labels from; the cluster's families declare theirs.
"""

from __future__ import annotations

import tempfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from prometheus_client.metrics_core import Metric
from prometheus_client.registry import CollectorRegistry

from sparkgate.metrics.cluster import SCOPE, ClusterCollector
from sparkgate.metrics.process import NodeMetrics
from sparkgate.store import Store


@dataclass(frozen=True)
class MetricInfo:
    """One exported family: its name, type, labels (the scope/node label first) and help."""

    name: str
    type: str
    labels: tuple[str, ...]
    help: str

    @property
    def exported(self) -> str:
        """The name as scraped: a counter's with ``_total`` (prometheus_client adds it)."""
        return self.name + "_total" if self.type == "counter" else self.name


def _labels(family: Metric) -> tuple[str, ...]:
    names: dict[str, None] = dict.fromkeys(getattr(family, "_labelnames", ()))
    for sample in family.samples:
        names.update(dict.fromkeys(k for k in sample.labels if k not in ("le", "quantile")))
    return tuple(names)


def _collected() -> Iterator[Metric]:
    with tempfile.TemporaryDirectory() as home:
        store = Store.open(f"sqlite:///{Path(home) / 'store.db'}")
        try:
            store.migrate()
            node = NodeMetrics("host:1234:abcd")
            node.observe_request("GET", "/v1/queries/{query_id}", 200, 0.01)
            node.observe_transaction("read", 0.001)
            registry = CollectorRegistry()
            registry.register(ClusterCollector(store))
            registry.register(node)
            yield from registry.collect()
        finally:
            store.close()


def metrics() -> list[MetricInfo]:
    """Every family, in the order a scrape shows them; raises for one without help."""
    found = [
        MetricInfo(family.name, family.type, _labels(family), family.documentation.strip())
        for family in _collected()
    ]
    undocumented = [m.name for m in found if not m.help]
    if undocumented:
        raise RuntimeError(f"metrics without help: {undocumented}")
    return found


_INTRO = """\
# Metrics

`GET /metrics` serves Prometheus' text format (behind authentication unless
`SPARKGATE_METRICS_PUBLIC=true`). Two kinds of figures:

- **The cluster's**, labelled `scope="cluster"`: read from the store at each scrape, so every
  node serves the same values. A dashboard takes `max by (...)` across nodes, not a sum.
  Counters read from the store count its rows: they fall back (a counter reset to Prometheus)
  only when rows are deleted, as a deleted stream job's restarts are.
- **Each node's own**, labelled `node="<node id>"` (`host:pid:random`, new at each start): its
  HTTP requests, store transactions and failed logins, and prometheus_client's standard
  process, platform and garbage-collector figures.

A counter is scraped with `_total` after its name; a histogram as `_bucket` (with `le`),
`_sum` and `_count` series. A ready-made Grafana dashboard is in `deploy/grafana/`; see
[Monitoring](../how-to/monitoring.md).
"""


def _table(found: list[MetricInfo]) -> list[str]:
    lines = ["| Metric | Type | Labels | Help |", "| --- | --- | --- | --- |"]
    for m in found:
        labels = ", ".join(f"`{label}`" for label in m.labels) or "—"
        help_text = m.help.replace("|", "\\|")
        lines.append(f"| `{m.exported}` | {m.type} | {labels} | {help_text} |")
    return lines


def page() -> str:
    found = metrics()
    cluster = [m for m in found if "scope" in m.labels]
    node_own = [m for m in found if m not in cluster and m.name.startswith("sparkgate_")]
    standard = [m for m in found if m not in cluster and m not in node_own]
    lines = [_INTRO]
    lines += [f'## The cluster\'s (`scope="{SCOPE}"`)', "", *_table(cluster), ""]
    lines += ['## The node\'s own (`node="<node id>"`)', "", *_table(node_own), ""]
    lines += [
        '## Process and Python (`node="<node id>"`)',
        "",
        "prometheus_client's standard collectors, as this platform reports them (`process_*` "
        "figures exist on Linux only).",
        "",
        *_table(standard),
        "",
    ]
    return "\n".join(lines)
