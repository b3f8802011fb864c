"""Request-scoped access to the node and its service, and the authenticated caller, for the
route functions of every HTTP door."""

from __future__ import annotations

import dataclasses
from typing import Annotated

from fastapi import Depends, Request

from sparkgate import logs
from sparkgate.auth.principal import Principal
from sparkgate.doors import CLI_AGENT
from sparkgate.node import ServerNode
from sparkgate.service import Service


def get_node(request: Request) -> ServerNode:
    node: ServerNode = request.app.state.node
    return node


def get_service(request: Request) -> Service:
    return get_node(request).service


async def get_user(request: Request) -> Principal:
    """The caller, authenticated from the Authorization header (401 if that fails). Every
    router but /healthz depends on this (``app.py``), so a new route cannot forget it.

    FastAPI runs it once per request, however many dependencies name it."""
    node = get_node(request)
    address = request.client.host if request.client is not None else None
    header = request.headers.get("authorization") or dashboard_credentials(request)
    user = await node.users.authenticate_later(header, address=address)
    user = dataclasses.replace(user, door=door_of(request))
    # The request's own context (its task, and the threads it hands work to): what it logs
    # names the caller and the objects its path names.
    params = request.path_params
    logs.bind(
        user=user.name,
        query_id=_path_id(params.get("query_id")),
        session_id=_path_id(params.get("session_id") or params.get("batch_id")),
        engine_id=_path_id(params.get("engine_id")),
    )
    return user


# Which door an HTTP request came through, by its path's first segment (the access history
# names it); the native API's own command line says it is the one calling in its User-Agent.
_DOORS = {
    "v1": "rest",
    "ui": "dashboard",
    "sessions": "livy",
    "batches": "livy",
    "cliservice": "hive2",
}


def door_of(request: Request) -> str:
    door = _DOORS.get(request.url.path.lstrip("/").partition("/")[0], "rest")
    if door == "rest" and request.headers.get("user-agent", "").startswith(CLI_AGENT):
        return "cli"
    return door


def _path_id(value: object) -> int | None:
    """An id from the path as routing leaves it (text, not yet validated), if it is one."""
    if isinstance(value, str) and value.isascii() and value.isdigit() and len(value) < 19:
        return int(value)
    return None


# The dashboard's login cookie: a personal access token made at login (``web/login.py``).
DASHBOARD_COOKIE = "sparkgate_session"
_SAFE_METHODS = frozenset({"GET", "HEAD"})


def dashboard_credentials(request: Request) -> str | None:
    """The dashboard's cookie as a Bearer header, for requests a browser makes from the
    dashboard: reads (pages, the engine UI it links to), and changes sent by its own scripts,
    which add the ``HX-Request`` header. Another site cannot add that header without a CORS
    preflight we never grant, and the cookie is SameSite=Strict: no cross-site request
    forgery changes anything."""
    token = request.cookies.get(DASHBOARD_COOKIE)
    if not token:
        return None
    if request.method not in _SAFE_METHODS and request.headers.get("hx-request") != "true":
        return None
    return f"Bearer {token}"


NodeDep = Annotated[ServerNode, Depends(get_node)]
ServiceDep = Annotated[Service, Depends(get_service)]
UserDep = Annotated[Principal, Depends(get_user)]
