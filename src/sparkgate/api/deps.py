"""Request-scoped access to the node (its store, gateway and users) for route functions."""

from __future__ import annotations

import asyncio
from typing import Annotated

from fastapi import Depends, Request

from sparkgate.api.watcher import StatementWatcher
from sparkgate.auth.principal import Principal
from sparkgate.errors import Unauthenticated
from sparkgate.node import ServerNode


def get_node(request: Request) -> ServerNode:
    node: ServerNode = request.app.state.node
    return node


def get_watcher(request: Request) -> StatementWatcher:
    watcher: StatementWatcher = request.app.state.watcher
    return watcher


async def get_user(request: Request) -> Principal:
    """The caller, authenticated from the Authorization header (401 if that fails). Every
    router but /healthz depends on this (``app.py``), so a new route cannot forget it.

    Checking a password may take a bcrypt hash or an LDAP bind: done off the event loop. A
    failed attempt from an address that failed often is answered late, slowing guessing down
    without holding a worker thread. FastAPI runs it once per request, however many
    dependencies name it."""
    node = get_node(request)
    address = request.client.host if request.client is not None else None
    header = request.headers.get("authorization")
    try:
        if node.users.enabled:
            user = await asyncio.to_thread(node.users.authenticate, header, address=address)
        else:
            user = node.users.authenticate(header, address=address)
    except Unauthenticated:
        delay = node.users.failure_delay(address)
        if delay > 0:
            await asyncio.sleep(delay)
        raise
    return user


NodeDep = Annotated[ServerNode, Depends(get_node)]
WatcherDep = Annotated[StatementWatcher, Depends(get_watcher)]
UserDep = Annotated[Principal, Depends(get_user)]
