"""An engine's Spark UI, through sparkgate: ``/v1/engines/{id}/ui/…`` (admins only).

Engines' Spark UIs listen on loopback only (engine/spark.py), so nobody reaches them but
through this route, which checks who asks. Only GET is passed on: the UI cannot kill jobs
(``spark.ui.killEnabled=false``; sparkgate's own cancel does that, with its access checks).
The engine makes its links under this path (``spark.ui.proxyBase``), so pages need no
rewriting; only redirects, which Jetty makes absolute to the loopback address, are mapped back.
"""

from __future__ import annotations

import ipaddress
import socket
from urllib.parse import urlsplit

import httpx
from fastapi import APIRouter, Request, Response
from fastapi.responses import HTMLResponse

from sparkgate.engine.spark import ui_proxy_base
from sparkgate.errors import Conflict
from sparkgate.http.deps import ServiceDep, UserDep
from sparkgate.http.openapi import refusals
from sparkgate.http.params import Id
from sparkgate.recorded import ErrorCode
from sparkgate.states import LIVE_ENGINE_STATES
from sparkgate.store.records import EngineRecord

router = APIRouter(tags=["engines"])

_TIMEOUT = httpx.Timeout(30.0, connect=5.0)
# Response headers passed on as they are; the body is sent decoded, so no content-encoding.
_PASSED_HEADERS = (
    "content-type",
    "cache-control",
    "content-disposition",
    "content-security-policy",
    "x-content-type-options",
    "x-frame-options",
    "last-modified",
    "etag",
)
_PASSED_REQUEST_HEADERS = ("accept", "accept-language", "if-none-match", "if-modified-since")


class EngineUiUnavailable(Conflict):
    code = ErrorCode.ENGINE_UI_UNAVAILABLE

    def __init__(self, engine_id: int, reason: str) -> None:
        super().__init__(f"The Spark UI of engine {engine_id} {reason}", engine_id=engine_id)


# The UI's pages are HTML (its scripts, styles and JSON come in their own media types), with
# the UI's own status (a redirect, its 404...).
_PAGE = "A page of the Spark UI, as the UI answers it."
_REFUSALS = refusals(
    {
        403: "Admins only.",
        409: "The engine serves no UI: it is gone, its UI is off or not started, or it runs on "
        "another host (`ENGINE_UI_UNAVAILABLE`).",
    }
)


@router.get(
    "/v1/engines/{engine_id}/ui",
    response_class=HTMLResponse,
    response_description=_PAGE,
    responses=_REFUSALS,
)
@router.get(
    "/v1/engines/{engine_id}/ui/{path:path}",
    response_class=HTMLResponse,
    response_description=_PAGE,
    responses=_REFUSALS,
)
def engine_ui(
    engine_id: Id, request: Request, service: ServiceDep, user: UserDep, path: str = ""
) -> Response:
    """A page of engine ``engine_id``'s Spark UI (admins only)."""
    engine = service.engines.ui(engine_id, user=user)  # EngineNotFound: 404
    origin = _ui_origin(engine)
    target = f"{origin}/{path}"
    headers = {k: v for k, v in request.headers.items() if k.lower() in _PASSED_REQUEST_HEADERS}
    try:
        with httpx.Client(timeout=_TIMEOUT, follow_redirects=False) as client:
            upstream = client.get(target, params=request.query_params, headers=headers)
    except httpx.HTTPError as exc:
        raise EngineUiUnavailable(
            engine_id, f"did not answer ({type(exc).__name__}); is the engine still running?"
        ) from exc
    passed = {k: v for k, v in upstream.headers.items() if k.lower() in _PASSED_HEADERS}
    location = upstream.headers.get("location")
    if location is not None:
        passed["location"] = _map_location(location, origin, ui_proxy_base(engine_id))
    return Response(content=upstream.content, status_code=upstream.status_code, headers=passed)


def _ui_origin(engine: EngineRecord) -> str:
    """``http://127.0.0.1:PORT`` of the engine's UI, or EngineUiUnavailable (409)."""
    if engine.state not in LIVE_ENGINE_STATES:
        raise EngineUiUnavailable(engine.id, f"is gone: the engine is {engine.state.value}.")
    ui_url = engine.ui_url  # recorded by the engine when it starts running (sc.uiWebUrl)
    if not ui_url:
        raise EngineUiUnavailable(
            engine.id,
            "is off (SPARKGATE_SPARK_UI=true turns engines' UIs on) or not started yet.",
        )
    if engine.host and engine.host != socket.gethostname():
        raise EngineUiUnavailable(
            engine.id, f"listens on loopback on host {engine.host}; ask a node on that host."
        )
    parts = urlsplit(ui_url)
    if parts.port is None or not _is_loopback(parts.hostname or ""):
        # Only ever proxy to this machine's loopback: a UI elsewhere was not set up by us.
        raise EngineUiUnavailable(engine.id, f"is not on loopback ({ui_url}).")
    return f"{parts.scheme or 'http'}://127.0.0.1:{parts.port}"


def _is_loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def _map_location(location: str, origin: str, base: str) -> str:
    """A redirect of the UI, as a path under ``base`` (Jetty redirects to its own address)."""
    parts = urlsplit(location)
    if parts.scheme or parts.netloc:
        if not _is_loopback(parts.hostname or "") or f":{parts.port}" not in origin:
            return location
        location = parts.path + (f"?{parts.query}" if parts.query else "")
    if location.startswith("/") and not location.startswith(base + "/") and location != base:
        return base + location
    return location
