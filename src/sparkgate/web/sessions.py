"""Dashboard pages for sessions and engines, with the kill and recycle buttons.

Like every page, these call the native API's route functions with the signed-in user.
"""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Request
from fastapi.responses import HTMLResponse

from sparkgate.api.deps import NodeDep, UserDep
from sparkgate.api.params import Id
from sparkgate.api.routes import engines as engines_api
from sparkgate.api.routes import sessions as sessions_api
from sparkgate.errors import InvalidRequest
from sparkgate.states import SessionKind, SessionState
from sparkgate.web.paging import page_links
from sparkgate.web.templating import render, render_list

router = APIRouter(prefix="/ui", include_in_schema=False)

PAGE = 50


def _session_filters(state: str | None, kind: str | None, after: str | None) -> dict[str, Any]:
    if state and state not in {s.value for s in SessionState}:
        raise InvalidRequest(f"state: unknown session state {state!r}.", field="state")
    if kind and kind not in {k.value for k in SessionKind}:
        raise InvalidRequest(f"kind: unknown session kind {kind!r}.", field="kind")
    return {"state": state or "", "kind": kind or "", "after": after or ""}


def _sessions(node: NodeDep, user: UserDep, filters: dict[str, Any]) -> dict[str, Any]:
    page = sessions_api.list_sessions(
        node,
        user,
        state=[SessionState(filters["state"])] if filters["state"] else None,
        kind=[SessionKind(filters["kind"])] if filters["kind"] else None,
        limit=PAGE,
        after=filters["after"] or None,
    )
    return page_links(page, filters)


@router.get("/sessions")
def sessions_page(
    request: Request,
    node: NodeDep,
    user: UserDep,
    state: str | None = None,
    kind: str | None = None,
    after: str | None = None,
) -> HTMLResponse:
    filters = _session_filters(state, kind, after)
    return render_list(
        request,
        "sessions.html",
        "_sessions_table.html",
        page=_sessions(node, user, filters),
        filters=filters,
        states=[s.value for s in SessionState],
        kinds=[k.value for k in SessionKind],
    )


@router.post("/sessions/{session_id}/kill")
def kill_session(request: Request, session_id: Id, node: NodeDep, user: UserDep) -> HTMLResponse:
    session = sessions_api.kill_session(session_id, node, user)
    return render(
        request, "_notice.html", message=f"Session {session['id']} is {session['state']}."
    )


def _engines(node: NodeDep, all_engines: bool) -> dict[str, Any]:
    engines = engines_api.list_engines(node, all=all_engines)["engines"]
    return {"engines": engines, "all": all_engines}


@router.get("/engines")
def engines_page(request: Request, node: NodeDep, user: UserDep, all: bool = False) -> HTMLResponse:
    return render_list(request, "engines.html", "_engines_table.html", **_engines(node, all))


@router.post("/engines/{engine_id}/recycle")
def recycle_engine(request: Request, engine_id: Id, node: NodeDep, user: UserDep) -> HTMLResponse:
    """Stop the engine; its sessions end and the warm pool starts a fresh one."""
    engine = engines_api.stop_engine(engine_id, node, user)
    return render(request, "_notice.html", message=f"Engine {engine['id']} is {engine['state']}.")
