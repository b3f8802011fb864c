"""Engines: ``/v1/engines`` (what runs Spark for sparkgate, and stopping it)."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter

from sparkgate.api.bodies import Engine, EngineList
from sparkgate.api.deps import NodeDep, UserDep
from sparkgate.api.openapi import refusals
from sparkgate.api.params import Id
from sparkgate.api.views import engine_view
from sparkgate.states import LIVE_ENGINE_STATES

router = APIRouter(prefix="/v1/engines", tags=["engines"])


@router.get("", response_model=EngineList)
def list_engines(node: NodeDep, all: bool = False) -> dict[str, Any]:
    """The engines (live ones unless ``?all=true``): kind, state, process, heartbeat."""
    engines = node.store.engines.list_all(states=None if all else LIVE_ENGINE_STATES)
    return {"engines": [engine_view(e) for e in engines]}


@router.get("/{engine_id}", response_model=Engine)
def get_engine(engine_id: Id, node: NodeDep) -> dict[str, Any]:
    return engine_view(node.store.engines.get(engine_id))


@router.post(
    "/{engine_id}/stop",
    status_code=202,
    response_model=Engine,
    responses=refusals({403: "Admins only."}),
)
def stop_engine(engine_id: Id, node: NodeDep, user: UserDep) -> dict[str, Any]:
    """Stop an engine gracefully: it takes no more work, lets its running statements finish,
    ends its sessions (``dead``, ``ENGINE_STOPPED``) and exits. Placement starts replacements
    for the shared and warm engines the settings ask for. Stopping a stopped engine is harmless."""
    return engine_view(node.gateway.stop_engine(engine_id, user=user))
