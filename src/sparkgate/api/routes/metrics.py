"""Prometheus metrics: ``GET /metrics``.

Two kinds of figures (the docs' reference/metrics.md lists them): the cluster's, read from the
store at scrape time and labelled ``scope="cluster"`` (every node serves the same values, so a
dashboard takes ``max by`` across nodes), and this node's own, labelled ``node="<node id>"``.
"""

from __future__ import annotations

from fastapi import APIRouter, Response
from prometheus_client import CONTENT_TYPE_LATEST, generate_latest
from prometheus_client.registry import CollectorRegistry

from sparkgate.http.deps import NodeDep
from sparkgate.http.openapi import REASONS, refusals
from sparkgate.metrics.cluster import ClusterCollector

router = APIRouter()


@router.get(
    "/metrics",
    response_class=Response,
    responses={
        200: {
            "description": "Prometheus' text exposition format.",
            "content": {CONTENT_TYPE_LATEST: {"schema": {"type": "string"}}},
        },
        # Its guard (app.py) authenticates unless SPARKGATE_METRICS_PUBLIC: not a dependency
        # the schema's pass can see.
        **refusals({401: REASONS[401] + " Unless `SPARKGATE_METRICS_PUBLIC` is on."}),
    },
)
def metrics(node: NodeDep) -> Response:
    # A registry per scrape: nothing registered globally, so nodes sharing a process (tests)
    # never collide, and the store is read only when someone asks.
    registry = CollectorRegistry()
    registry.register(ClusterCollector(node.store))
    registry.register(node.metrics)
    return Response(generate_latest(registry), media_type=CONTENT_TYPE_LATEST)
