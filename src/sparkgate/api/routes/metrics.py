"""Prometheus metrics: ``GET /metrics``.

Counts come from the store at scrape time (sessions, queries and engines by state), so every
node reports the same truth and nothing is lost when a node restarts.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import cast

import sqlalchemy as sa
from fastapi import APIRouter, Response
from prometheus_client import CONTENT_TYPE_LATEST, generate_latest
from prometheus_client.core import GaugeMetricFamily
from prometheus_client.registry import Collector, CollectorRegistry

from sparkgate.api.deps import NodeDep
from sparkgate.store import Store, schema

router = APIRouter()


class StoreCollector(Collector):
    def __init__(self, store: Store) -> None:
        self.store = store

    def collect(self) -> Iterator[GaugeMetricFamily]:
        tables = [
            ("sparkgate_sessions", "Sessions by kind and state", schema.sessions),
            ("sparkgate_queries", "Queries (statements) by kind and state", schema.statements),
            ("sparkgate_engines", "Engines by kind and state", schema.engines),
        ]
        with self.store.db.read() as conn:
            for name, help_text, table in tables:
                family = GaugeMetricFamily(name, help_text, labels=["kind", "state"])
                query = sa.select(table.c.kind, table.c.state, sa.func.count()).group_by(
                    table.c.kind, table.c.state
                )
                for kind, state, count in conn.execute(query):
                    family.add_metric([str(kind), str(state)], float(cast(int, count)))
                yield family


@router.get("/metrics", include_in_schema=False)
def metrics(node: NodeDep) -> Response:
    registry = CollectorRegistry()
    registry.register(StoreCollector(node.store))
    return Response(generate_latest(registry), media_type=CONTENT_TYPE_LATEST)
