"""Engines: ``/v1/engines`` (what runs Spark for sparkgate, and stopping it)."""

from __future__ import annotations

from fastapi import APIRouter

from sparkgate.http.deps import ServiceDep, UserDep
from sparkgate.http.openapi import refusals
from sparkgate.http.params import Id
from sparkgate.schemas.engines import Engine, EngineList

router = APIRouter(prefix="/v1/engines", tags=["engines"])


@router.get("", response_model=EngineList)
def list_engines(service: ServiceDep, all: bool = False) -> EngineList:
    """The engines (live ones unless ``?all=true``): kind, state, process, heartbeat."""
    engines = service.engines.list_all(live_only=not all)
    return EngineList(engines=[Engine.of(e) for e in engines])


@router.get("/{engine_id}", response_model=Engine)
def get_engine(engine_id: Id, service: ServiceDep) -> Engine:
    return Engine.of(service.engines.get(engine_id))


@router.post(
    "/{engine_id}/stop",
    status_code=202,
    response_model=Engine,
    responses=refusals({403: "Admins only."}),
)
def stop_engine(engine_id: Id, service: ServiceDep, user: UserDep) -> Engine:
    """Stop an engine gracefully: it takes no more work, lets its running statements finish,
    ends its sessions (``dead``, ``ENGINE_STOPPED``) and exits. Placement starts replacements
    for the shared and warm engines the settings ask for. Stopping a stopped engine is harmless."""
    return Engine.of(service.engines.stop(engine_id, user=user))
