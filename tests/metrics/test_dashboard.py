"""The Grafana dashboard (deploy/grafana/sparkgate.json) asks only for figures sparkgate
exports, and never adds up the copies of the cluster's figures that every node serves."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

from sparkgate.metrics.cluster import ClusterCollector
from sparkgate.metrics.process import NodeMetrics
from sparkgate.store import Store

DASHBOARD = Path(__file__).parents[2] / "deploy" / "grafana" / "sparkgate.json"


def expressions(dashboard: dict[str, Any]) -> list[str]:
    return [target["expr"] for panel in dashboard["panels"] for target in panel.get("targets", [])]


def test_the_dashboard_reads_exported_figures(store: Store) -> None:
    dashboard = json.loads(DASHBOARD.read_text())
    exported = {f.name for f in ClusterCollector(store).collect()}
    exported |= {f.name for f in NodeMetrics("node").collect()}
    exprs = expressions(dashboard)
    asked = {
        re.sub(r"_(bucket|count|sum|total)$", "", name)
        for expr in exprs
        for name in re.findall(r"\b(?:sparkgate|process)_[a-z_]+", expr)
    }
    assert asked and asked <= exported, sorted(asked - exported)
    for expr in exprs:
        if 'scope="cluster"' in expr:
            assert "max by" in expr, expr  # one node's copy, not the sum of all nodes'
    variables = {v["name"]: v for v in dashboard["templating"]["list"]}
    assert variables["datasource"]["type"] == "datasource"
    for panel in dashboard["panels"]:
        if panel["type"] != "row":
            assert panel["datasource"]["uid"] == "${datasource}", panel["title"]
