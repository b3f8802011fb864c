"""``sparkgate server``: run a server node."""

from __future__ import annotations

import logging
from typing import Annotated

import typer

from sparkgate.cli.common import fail
from sparkgate.errors import SparkgateError
from sparkgate.settings import Settings


def server(
    host: Annotated[
        str | None, typer.Option(help="Address to listen on [default: 127.0.0.1].")
    ] = None,
    port: Annotated[int | None, typer.Option(help="Port to listen on [default: 8998].")] = None,
) -> None:
    """Start a server node (embedded defaults: SQLite store and Spark local mode under
    ./.sparkgate, or $SPARKGATE_HOME). Engines it starts keep running if it stops."""
    import uvicorn

    from sparkgate.api.app import create_app
    from sparkgate.catalog.metastore import java_executable

    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s %(message)s")
    settings = Settings()
    updates = {k: v for k, v in {"host": host, "port": port}.items() if v is not None}
    settings = settings.model_copy(update=updates)
    try:
        java_executable()
        app = create_app(settings)
        uvicorn.run(
            app,
            host=settings.host,
            port=settings.port,
            log_level="info",
            timeout_keep_alive=int(settings.http_keep_alive),
        )
    except SparkgateError as exc:
        fail(str(exc))
