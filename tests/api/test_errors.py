"""A 500 over real HTTP: answered in the native error shape, logged once, and the keep-alive
connection still serves the client's next request."""

from __future__ import annotations

import logging
import threading
from collections.abc import Iterator

import httpx
import pytest
import uvicorn
from fastapi import FastAPI

from sparkgate.errors import NotFound
from sparkgate.http.errors import UnexpectedErrors, install_error_handlers
from sparkgate_dev import eventually, free_port


def _app() -> FastAPI:
    app = FastAPI()
    install_error_handlers(app)
    app.add_middleware(UnexpectedErrors)

    @app.get("/boom")
    def boom() -> None:
        raise ValueError("secret internals: SELECT * FROM tokens")

    @app.get("/async-boom")
    async def async_boom() -> None:
        raise RuntimeError("async")

    @app.get("/missing")
    def missing() -> None:
        raise NotFound("Nothing here.")

    @app.get("/fine")
    def fine() -> dict[str, bool]:
        return {"fine": True}

    return app


@pytest.fixture(scope="module")
def url() -> Iterator[str]:
    port = free_port()
    config = uvicorn.Config(_app(), host="127.0.0.1", port=port, log_config=None)
    server = uvicorn.Server(config)
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    try:
        eventually(lambda: server.started, timeout=30, what="uvicorn to start")
        yield f"http://127.0.0.1:{port}"
    finally:
        server.should_exit = True
        thread.join(timeout=30)


def test_a_500_is_logged_once_and_the_connection_stays_usable(
    url: str, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO)
    connections: set[int] = set()
    with httpx.Client(base_url=url) as client:
        for path in ("/boom", "/async-boom"):
            answer = client.get(path)
            assert answer.status_code == 500
            error = answer.json()["error"]
            assert error["code"] == "INTERNAL_ERROR"
            assert "secret internals" not in answer.text  # the log has them, not the client
            # The same connection answers the next request (it was dropped after every 500).
            stream = answer.extensions["network_stream"]
            connections.add(id(stream))
            after = client.get("/fine")
            assert after.status_code == 200
            assert id(after.extensions["network_stream"]) == id(stream)
        assert client.get("/missing").status_code == 404
    tracebacks = [r for r in caplog.records if r.exc_info is not None]
    assert [r.getMessage() for r in tracebacks] == [
        "unexpected error on GET /boom",
        "unexpected error on GET /async-boom",
    ]
    assert not any("Exception in ASGI application" in r.getMessage() for r in caplog.records)
    assert len(connections) == 1
