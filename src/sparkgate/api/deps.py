"""Request-scoped access to the node (its store and gateway) for route functions."""

from __future__ import annotations

from typing import Annotated

from fastapi import Depends, Request

from sparkgate.api.watcher import StatementWatcher
from sparkgate.node import ServerNode


def get_node(request: Request) -> ServerNode:
    node: ServerNode = request.app.state.node
    return node


def get_watcher(request: Request) -> StatementWatcher:
    watcher: StatementWatcher = request.app.state.watcher
    return watcher


NodeDep = Annotated[ServerNode, Depends(get_node)]
WatcherDep = Annotated[StatementWatcher, Depends(get_watcher)]
