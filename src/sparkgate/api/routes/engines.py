"""Engines: ``/v1/engines`` (what runs Spark for sparkgate, and stopping it)."""

from __future__ import annotations

from fastapi import APIRouter

from sparkgate.http.deps import ServiceDep, UserDep
from sparkgate.http.openapi import refusals
from sparkgate.http.params import Id, LogTail
from sparkgate.schemas.engines import Engine, EngineList, EngineLog
from sparkgate.service.views import engine_view

router = APIRouter(prefix="/v1/engines", tags=["engines"])
_NOT_SEEN = "No such engine, or one that ran none of the caller's sessions (admins see all)."


@router.get("", response_model=EngineList)
def list_engines(service: ServiceDep, user: UserDep, all: bool = False) -> EngineList:
    """The engines (live ones unless ``?all=true``): kind, state, process, heartbeat. Admins
    see all; other users only those that ran their sessions, without host, pid, Spark
    application or log."""
    engines = service.engines.list_all(user=user, live_only=not all)
    whose = service.engines.whose(engines, user=user)
    return EngineList(engines=[engine_view(e, whose.get(e.id)) for e in engines])


@router.get("/{engine_id}", response_model=Engine, responses=refusals({404: _NOT_SEEN}))
def get_engine(engine_id: Id, service: ServiceDep, user: UserDep) -> Engine:
    engine = service.engines.get(engine_id, user=user)
    return engine_view(engine, service.engines.whose([engine], user=user).get(engine_id))


@router.get(
    "/{engine_id}/log",
    response_model=EngineLog,
    responses=refusals({403: "Admins only.", 404: "No such engine."}),
)
def engine_log(
    engine_id: Id, service: ServiceDep, user: UserDep, tail: LogTail = None
) -> EngineLog:
    """An engine driver's output: its log file, or on Kubernetes its pod's log (through the
    API server), the last ``tail`` lines or all. Admins only."""
    return EngineLog(engine_id=engine_id, log=service.engines.log(engine_id, user=user, tail=tail))


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
