"""A server node, wired together: the node (store, service, duties), the HTTP app with every
HTTP door (``/v1``, Livy, the dashboard, HiveServer2 over HTTP at ``/cliservice``), and the
listeners of the other doors (HiveServer2's binary port, Spark Connect's gRPC port), started
and stopped together.

Nothing else composes doors: each door only translates its protocol to the service.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from typing import Any

from fastapi import Depends, FastAPI, Request

from sparkgate import __version__, livy, web
from sparkgate.api.routes import (
    access,
    audit,
    engine_ui,
    engines,
    health,
    jobs,
    metrics,
    queries,
    saved_queries,
    sessions,
    streams,
    table_data,
    tables,
    usage,
    users,
)
from sparkgate.hive2 import http as hive2_http
from sparkgate.hive2.binary import BinaryServer
from sparkgate.hive2.door import Door
from sparkgate.hive2.service import HiveService
from sparkgate.http import openapi
from sparkgate.http.deps import get_user
from sparkgate.http.errors import UnexpectedErrors, install_error_handlers
from sparkgate.http.instrument import RequestTimer
from sparkgate.http.limits import BodyLimit
from sparkgate.node import ServerNode
from sparkgate.settings import Settings
from sparkgate.web import docs_site


def create_app(settings: Settings) -> FastAPI:
    """The app for one node; the node starts with the app and stops with it."""

    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        node = ServerNode(settings)
        app.state.node = node
        # The HiveServer2 door: the same calls over HTTP (/cliservice) and binary TCP.
        app.state.hive2 = Door(HiveService(node.service))
        binary = BinaryServer(app.state.hive2, node.users, node.settings)
        connect = None
        try:
            # Every door listens before the node's duties start: a port taken ends the start
            # before placement has launched an engine that would outlive the node.
            if settings.connect_port:
                connect = _start_connect(node, settings)
            if settings.thrift_port:
                try:
                    await binary.start()
                except OSError as exc:
                    raise RuntimeError(
                        f"cannot listen for HiveServer2 clients on {settings.host}:"
                        f"{settings.thrift_port}: {exc}. Choose another port with "
                        "SPARKGATE_THRIFT_PORT or --thrift-port (0 turns it off)."
                    ) from exc
            node.start()
            yield
        finally:
            if connect is not None:
                connect.stop()
            await binary.close()
            await node.service.close()
            node.stop()

    # No Swagger UI or ReDoc: they load their scripts from a CDN. /docs is the documentation
    # site (docs_site), whose REST API reference is made from the same /openapi.json.
    app = FastAPI(
        title="sparkgate",
        version=__version__,
        lifespan=lifespan,
        docs_url=None,
        redoc_url=None,
    )
    install_error_handlers(app)
    app.add_middleware(UnexpectedErrors)  # innermost: inside the timer and the body limit
    app.add_middleware(
        BodyLimit, limit=settings.request_max_bytes, exempt=table_data.STREAMED_BODIES
    )
    app.add_middleware(RequestTimer)  # outermost: times every answer, refusals included
    # Every router but liveness authenticates: a route added to any of them is guarded.
    guarded = [Depends(get_user)]
    app.include_router(health.router)
    for router in (
        sessions.router,
        queries.router,
        saved_queries.router,
        engines.router,
        engine_ui.router,
        streams.router,
        jobs.router,
        users.router,
        audit.router,
        usage.router,
        access.router,
        table_data.router,
        tables.router,
        hive2_http.router,
    ):
        app.include_router(router, dependencies=guarded)
    app.include_router(metrics.router, dependencies=[Depends(_metrics_guard(settings))])
    livy.install(app, dependencies=guarded)
    web.install(app)
    docs_site.install(app)
    openapi.install(app)  # every route's errors, in the shape really sent
    return app


def _start_connect(node: ServerNode, settings: Settings) -> Any:
    # Imported only when on: pyspark's Connect messages take most of a second to load.
    from sparkgate.connect.door import ConnectDoor
    from sparkgate.connect.listener import ConnectListener

    listener = ConnectListener(ConnectDoor(node.service.connect, node.users), settings)
    try:
        listener.start()
    except OSError as exc:
        raise RuntimeError(
            f"cannot listen for Spark Connect clients on {settings.host}:"
            f"{settings.connect_port}: {exc}. Choose another port with "
            "SPARKGATE_CONNECT_PORT or --connect-port (0 turns it off)."
        ) from exc
    return listener


def _metrics_guard(settings: Settings) -> Callable[[Request], Awaitable[None]]:
    """Scrapers often cannot authenticate: ``SPARKGATE_METRICS_PUBLIC`` opens /metrics."""

    async def guard(request: Request) -> None:
        if not settings.metrics_public:
            await get_user(request)

    return guard
