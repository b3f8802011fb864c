"""The FastAPI application of a server node."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

from fastapi import FastAPI

from sparkgate import __version__
from sparkgate.api import livy
from sparkgate.api.errors import install_error_handlers
from sparkgate.api.routes import engines, health, jobs, metrics, queries, sessions, streams
from sparkgate.api.watcher import StatementWatcher
from sparkgate.node import ServerNode
from sparkgate.settings import Settings


def create_app(settings: Settings) -> FastAPI:
    """The app for one node; the node starts with the app and stops with it."""

    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        node = ServerNode(settings)
        app.state.node = node
        app.state.watcher = StatementWatcher(node.store)
        node.start()
        try:
            yield
        finally:
            await app.state.watcher.close()
            node.stop()

    app = FastAPI(title="sparkgate", version=__version__, lifespan=lifespan)
    install_error_handlers(app)
    app.include_router(health.router)
    app.include_router(sessions.router)
    app.include_router(queries.router)
    app.include_router(engines.router)
    app.include_router(streams.router)
    app.include_router(jobs.router)
    app.include_router(metrics.router)
    livy.install(app)
    return app
