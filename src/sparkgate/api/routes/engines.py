"""Engines: ``/v1/engines`` (what runs Spark for sparkgate, and stopping it)."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter

from sparkgate.http.deps import ServiceDep, UserDep
from sparkgate.http.openapi import refusals
from sparkgate.http.params import Id
from sparkgate.schemas.engines import Engine, EngineList
from sparkgate.service.views import engine_view

router = APIRouter(prefix="/v1/engines", tags=["engines"])


@router.get("", response_model=EngineList)
def list_engines(service: ServiceDep, all: bool = False) -> dict[str, Any]:
    """The engines (live ones unless ``?all=true``): kind, state, process, heartbeat."""
    engines = service.gateway.engines(live_only=not all)
    return {"engines": [engine_view(e) for e in engines]}


@router.get("/{engine_id}", response_model=Engine)
def get_engine(engine_id: Id, service: ServiceDep) -> dict[str, Any]:
    return engine_view(service.gateway.engine(engine_id))


@router.post(
    "/{engine_id}/stop",
    status_code=202,
    response_model=Engine,
    responses=refusals({403: "Admins only."}),
)
def stop_engine(engine_id: Id, service: ServiceDep, user: UserDep) -> dict[str, Any]:
    """Stop an engine gracefully: it takes no more work, lets its running statements finish,
    ends its sessions (``dead``, ``ENGINE_STOPPED``) and exits. Placement starts replacements
    for the shared and warm engines the settings ask for. Stopping a stopped engine is harmless."""
    return engine_view(service.gateway.stop_engine(engine_id, user=user))
