"""Dashboard pages for queries: the live list, one query, its result, cancelling it.

Each page calls the service with the signed-in user, as the native API does: the same reads,
the same access checks, the same views (``sparkgate.schemas``).
"""

from __future__ import annotations

from fastapi import APIRouter, Request
from fastapi.responses import HTMLResponse, RedirectResponse, Response

from sparkgate.auth.principal import Principal
from sparkgate.errors import InvalidRequest, QueryFinished
from sparkgate.http.deps import ServiceDep, UserDep
from sparkgate.http.params import Id, Offset
from sparkgate.schemas.queries import Query
from sparkgate.service import Service
from sparkgate.service.views import query_view, result_page_view
from sparkgate.states import StatementState
from sparkgate.store.records import StatementRecord
from sparkgate.web.paging import ListPage, checked_choice, shown, window_of
from sparkgate.web.templating import render, render_list

router = APIRouter(prefix="/ui", include_in_schema=False)

RESULT_PAGE = 100  # rows per page of a result preview


@router.get("")
def home(user: UserDep) -> Response:
    return RedirectResponse("/ui/queries", status_code=303)


def _filters(
    state: str | None, owner: str | None, session_id: str | None, after: str | None
) -> dict[str, str]:
    """The list's filters from the form: empty fields mean no filter."""
    filters = {
        "state": checked_choice("state", state, StatementState, "query state"),
        "owner": owner or "",
        "session_id": "",
    }
    if session_id:
        if not session_id.strip().isdigit():
            raise InvalidRequest("session_id: a session id is a number.", field="session_id")
        filters["session_id"] = session_id.strip()
    filters["after"] = after or ""
    return filters


def _page(service: Service, user: Principal, filters: dict[str, str]) -> ListPage[Query]:
    page = service.queries.list_page(
        user=user,
        owner=filters["owner"] or None,
        session_id=int(filters["session_id"]) if filters["session_id"] else None,
        states=[StatementState(filters["state"])] if filters["state"] else None,
        window=window_of(filters),
    )
    views = {d.statement.id: query_view(d) for d in service.queries.described_page(page.items)}
    return shown(page, lambda statement: views[statement.id], filters)


@router.get("/queries")
def queries_page(
    request: Request,
    service: ServiceDep,
    user: UserDep,
    state: str | None = None,
    owner: str | None = None,
    session_id: str | None = None,
    after: str | None = None,
) -> HTMLResponse:
    """The live list: the page, and the table alone for its poll (every 2 s); ``?after=`` is
    the API's cursor of the page before."""
    filters = _filters(state, owner, session_id, after)
    return render_list(
        request,
        "queries.html",
        "_queries_table.html",
        page=_page(service, user, filters),
        filters=filters,
        states=[s.value for s in StatementState],
    )


@router.get("/queries/{query_id}")
def query_page(request: Request, query_id: Id, service: ServiceDep, user: UserDep) -> HTMLResponse:
    statement = service.queries.get(query_id, user=user)
    return render(request, "query.html", query=_whole(service, statement))


@router.get("/queries/{query_id}/state")
def query_state(
    request: Request, query_id: Id, service: ServiceDep, user: UserDep, was: str = ""
) -> HTMLResponse:
    """The query's state, timeline, progress and error; polled while it runs. When it turns
    final, the fragment also replaces the SQL (to mark an error's position) and loads the
    result, out of band."""
    statement = service.queries.get(query_id, user=user)
    query = _whole(service, statement)
    return render(request, "_query_state.html", query=query, changed=was != query.state)


@router.post("/queries/{query_id}/cancel")
def cancel_query(
    request: Request, query_id: Id, service: ServiceDep, user: UserDep
) -> HTMLResponse:
    try:
        query, notice = _whole(service, service.queries.cancel(query_id, user=user)), None
    except QueryFinished as exc:  # it ended meanwhile: show how
        query, notice = _whole(service, service.queries.get(query_id, user=user)), exc.message
    return render(request, "_query_state.html", query=query, changed=True, notice=notice)


def _whole(service: Service, statement: StatementRecord) -> Query:
    return query_view(service.queries.described(statement))


@router.get("/queries/{query_id}/result")
def query_result(
    request: Request, query_id: Id, service: ServiceDep, user: UserDep, offset: Offset = 0
) -> HTMLResponse:
    statement = service.queries.get(query_id, user=user)
    result = result_page_view(service.queries.result_page(statement, max(0, offset), RESULT_PAGE))
    return render(request, "_result.html", query_id=query_id, result=result)
