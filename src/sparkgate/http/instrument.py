"""HTTP request timing for ``/metrics``: a pure ASGI middleware.

Each request is timed from arrival to the end of its response and recorded under its route
template (``/v1/queries/{query_id}``), never the raw path: ids in paths would make a series
per query. A request no route matched (404, a refused body) is recorded as ``unmatched``.
"""

from __future__ import annotations

import time

from starlette.routing import Mount
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from sparkgate.metrics.process import NodeMetrics

UNMATCHED = "unmatched"


class RequestTimer:
    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        metrics = _metrics_of(scope) if scope["type"] == "http" else None
        if metrics is None:
            await self.app(scope, receive, send)
            return
        root_path = scope.get("root_path", "")
        status = 500  # what the client gets if the app fails before answering

        async def recording_send(message: Message) -> None:
            nonlocal status
            if message["type"] == "http.response.start":
                status = message["status"]
            await send(message)

        started = time.perf_counter()
        try:
            await self.app(scope, receive, recording_send)
        finally:
            seconds = time.perf_counter() - started
            metrics.observe_request(
                scope["method"], route_template(scope, root_path), status, seconds
            )


def _metrics_of(scope: Scope) -> NodeMetrics | None:
    # Read before the request runs: a mounted sub-application replaces scope["app"]. No node
    # (the app's lifespan has not run): nothing to record into.
    node = getattr(getattr(scope.get("app"), "state", None), "node", None)
    metrics = getattr(node, "metrics", None)
    return metrics if isinstance(metrics, NodeMetrics) else None


def route_template(scope: Scope, root_path: str) -> str:
    """The template of the route that answered, from what routing left in ``scope``: the
    route, and the prefixes of any mounts on the way (added to ``root_path``)."""
    route = scope.get("route")
    if route is None:
        return UNMATCHED
    mounted = str(scope.get("root_path", ""))[len(root_path) :]
    if isinstance(route, Mount):  # a mounted app with no routes of its own (static files)
        return f"{mounted}/{{path}}"
    template = getattr(route, "path_format", None) or getattr(route, "path", None)
    return f"{mounted}{template}" if isinstance(template, str) else UNMATCHED
