"""Dashboard pages for sessions and engines, with the kill and recycle buttons.

Like every page, these call the service with the signed-in user, and show its records as
the native API does (``sparkgate.schemas``).
"""

from __future__ import annotations

from dataclasses import dataclass
from urllib.parse import urlencode

from fastapi import APIRouter, Request
from fastapi.responses import HTMLResponse

from sparkgate.auth.principal import Principal
from sparkgate.http.deps import ServiceDep, UserDep
from sparkgate.http.params import Id
from sparkgate.schemas.queries import Session
from sparkgate.service import Service
from sparkgate.service.views import engine_view
from sparkgate.states import SessionKind, SessionState
from sparkgate.store.records import Page, SessionRecord, Window
from sparkgate.web.paging import ListPage, checked_choice, shown, window_of
from sparkgate.web.templating import render, render_list

router = APIRouter(prefix="/ui", include_in_schema=False)


def _session_filters(
    state: str | None, kind: str | None, one_off: bool, after: str | None
) -> dict[str, str]:
    return {
        "state": checked_choice("state", state, SessionState, "session state"),
        "kind": checked_choice("kind", kind, SessionKind, "session kind"),
        "one_off": "true" if one_off else "",
        "after": after or "",
    }


@dataclass(frozen=True)
class OneOffSessions:
    """The one-off queries' sessions a page of sessions leaves out (0 when it shows them),
    and the link that shows or hides them."""

    hidden: int
    toggle: str


def _sessions(
    service: Service, user: Principal, filters: dict[str, str]
) -> tuple[ListPage[Session], OneOffSessions]:
    """A page of sessions. One-off queries' sessions (one each, ended with it: most of a new
    user's) are left out unless asked for; the page says how many, and links to them."""

    def listed(one_off: bool | None, window: Window) -> Page[SessionRecord]:
        return service.sessions.list_page(
            user=user,
            states=[SessionState(filters["state"])] if filters["state"] else None,
            kinds=[SessionKind(filters["kind"])] if filters["kind"] else None,
            one_off=one_off,
            window=window,
        )

    with_one_off = bool(filters["one_off"])
    page = listed(None if with_one_off else False, window_of(filters))
    hidden = 0 if with_one_off else listed(True, Window(limit=0)).total or 0
    # The same list with them, or without them again (its first page).
    kept = {k: v for k, v in filters.items() if v and k not in {"after", "one_off"}}
    toggled = urlencode(kept if with_one_off else {**kept, "one_off": "true"})
    toggle = f"/ui/sessions?{toggled}" if toggled else "/ui/sessions"
    return shown(page, Session.of, filters), OneOffSessions(hidden, toggle)


@router.get("/sessions")
def sessions_page(
    request: Request,
    service: ServiceDep,
    user: UserDep,
    state: str | None = None,
    kind: str | None = None,
    one_off: bool = False,
    after: str | None = None,
) -> HTMLResponse:
    filters = _session_filters(state, kind, one_off, after)
    page, one_off_sessions = _sessions(service, user, filters)
    return render_list(
        request,
        "sessions.html",
        "_sessions_table.html",
        page=page,
        one_off=one_off_sessions,
        filters=filters,
        states=[s.value for s in SessionState],
        kinds=[k.value for k in SessionKind],
    )


@router.post("/sessions/{session_id}/kill")
def kill_session(
    request: Request, session_id: Id, service: ServiceDep, user: UserDep
) -> HTMLResponse:
    session = service.sessions.kill(session_id, user=user)
    return render(
        request, "_notice.html", message=f"Session {session.id} is {session.state.value}."
    )


@router.get("/engines")
def engines_page(
    request: Request, service: ServiceDep, user: UserDep, all: bool = False
) -> HTMLResponse:
    records = service.engines.list_all(user=user, live_only=not all)
    whose = service.engines.whose(records, user=user)
    engines = [engine_view(e, whose.get(e.id)) for e in records]
    return render_list(request, "engines.html", "_engines_table.html", engines=engines, all=all)


@router.post("/engines/{engine_id}/recycle")
def recycle_engine(
    request: Request, engine_id: Id, service: ServiceDep, user: UserDep
) -> HTMLResponse:
    """Stop the engine; its sessions end and the warm pool starts a fresh one."""
    engine = service.engines.stop(engine_id, user=user)
    message = f"Engine {engine.id} is {engine.state.value}."
    return render(request, "_notice.html", message=message)
