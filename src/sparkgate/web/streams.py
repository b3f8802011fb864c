"""Dashboard pages for streams: the live list of stream jobs and of the streaming queries
started in sessions; one job (state, restarts and their backoff, queries, charts of their
progress) with its stop and start buttons; one session's query, with its chart and a stop
button.

Pages call the service with the signed-in user, as the native API does, and show its records
in the API's views. The charts' data is the one read the API has no route for (every stored
progress sample, not only the detail's recent ones): the service reads it with the same access
check.
"""

from __future__ import annotations

import time
from dataclasses import dataclass

from fastapi import APIRouter, Request
from fastapi.responses import HTMLResponse

from sparkgate.auth.principal import Principal
from sparkgate.errors.streams import StreamJobBusy
from sparkgate.http.deps import ServiceDep, UserDep
from sparkgate.http.params import Id, Offset
from sparkgate.schemas.common import Body
from sparkgate.schemas.streams import (
    StreamJobBrief,
    StreamJobDetail,
    StreamProgress,
    StreamQuery,
    StreamRestart,
)
from sparkgate.service import Service
from sparkgate.service.stream_views import (
    query_detail_view,
    stream_detail_view,
    stream_summary_view,
)
from sparkgate.service.streams import (
    STOPPABLE_QUERY_STATES,
    QueryDetail,
    QueryProgress,
    SessionStream,
)
from sparkgate.states import SessionState, StreamJobState, StreamQueryState
from sparkgate.stream_spec import RetryPolicy
from sparkgate.streaming.backoff import backoff_delay
from sparkgate.web.paging import ListPage, checked_choice, shown, window_of
from sparkgate.web.templating import render, render_list, timestamp

router = APIRouter(prefix="/ui", include_in_schema=False)


# What the buttons may do in each state (the same states ``Streams.stop``/``start`` act in;
# elsewhere they would change nothing, so no button is shown).
STOPPABLE = frozenset({"pending", "starting", "running", "restarting"})
STARTABLE = frozenset({"stopped", "failed"})


class SessionQuery(StreamQuery):
    """A streaming query started in a session, as the pages show it: the API's view, and
    whose it is (the session's owner) and the session's state."""

    owner: str | None
    session_state: SessionState

    @classmethod
    def shown(cls, stream: SessionStream, detail: QueryDetail | None = None) -> SessionQuery:
        """With its recent progress and restarts given ``detail`` (its page); the list shows
        neither."""
        if detail is None:
            query = StreamQuery.of(stream.query, progress=[], restarts=[])
        else:
            query = query_detail_view(detail)
        return cls(**dict(query), owner=stream.session.owner, session_state=stream.session.state)


def _filters(state: str | None, owner: str | None, after: str | None) -> dict[str, str]:
    return {
        "state": checked_choice("state", state, StreamJobState, "stream job state"),
        "owner": owner or "",
        "after": after or "",
    }


def _page(service: Service, user: Principal, filters: dict[str, str]) -> ListPage[StreamJobBrief]:
    page = service.streams.list_page(
        user=user,
        owner=filters["owner"] or None,
        states=[StreamJobState(filters["state"])] if filters["state"] else None,
        window=window_of(filters, by_name=True),
    )
    return shown(page, stream_summary_view, filters)


def _in_sessions(service: Service, user: Principal, filters: dict[str, str]) -> list[SessionQuery]:
    state = filters["state"]
    if state and state not in {s.value for s in StreamQueryState}:
        return []  # a state only stream jobs have
    streams = service.streams.in_sessions(
        user=user,
        owner=filters["owner"] or None,
        states=[StreamQueryState(state)] if state else None,
    )
    return [SessionQuery.shown(s) for s in streams]


@router.get("/streams")
def streams_page(
    request: Request,
    service: ServiceDep,
    user: UserDep,
    state: str | None = None,
    owner: str | None = None,
    after: str | None = None,
) -> HTMLResponse:
    """The live list: the page, and the tables alone for its poll (states, restarts and
    errors change without a reload). Stream jobs by name, a page at a time; then the queries
    started in sessions, newest first."""
    filters = _filters(state, owner, after)
    return render_list(
        request,
        "streams.html",
        "_streams_table.html",
        page=_page(service, user, filters),
        in_sessions=_in_sessions(service, user, filters),
        filters=filters,
        states=[s.value for s in StreamJobState],
    )


SCHEDULE = 4  # upcoming backoff delays shown per query


@dataclass(frozen=True)
class Restart:
    """A row of a stream job's restarts: its own relaunch (``of`` None) or a query's."""

    of: str | None
    restart: StreamRestart


def _restarts(stream: StreamJobDetail) -> list[Restart]:
    """The job's relaunches and its queries' restarts in one list, newest first."""
    rows = [Restart(None, r) for r in stream.recent_restarts]
    for query in stream.queries:
        rows.extend(Restart(query.name, r) for r in query.recent_restarts)
    return sorted(rows, key=lambda r: r.restart.failed_at, reverse=True)


def _schedule(query: StreamQuery) -> list[float]:
    """The delays the query would wait if it failed again now, and again after that: the
    supervisor's own backoff function on the query's own policy (without the random part)."""
    if query.retry is None:
        return []
    policy = RetryPolicy.from_json(query.retry.model_dump())
    if not policy.enabled:
        return []
    left = max(0, min(SCHEDULE, policy.max_attempts - query.failures))
    return [backoff_delay(query.failures + n, policy, rand=lambda: 0.0) for n in range(left)]


def _render_stream(
    request: Request, template: str, stream: StreamJobDetail, notice: str | None = None
) -> HTMLResponse:
    """A stream job's page, or its state fragment."""
    next_at = timestamp(stream.next_restart_at)
    return render(
        request,
        template,
        stream=stream,
        restarts=_restarts(stream),
        schedules={q.name: _schedule(q) for q in stream.queries},
        restart_in=None if next_at is None else max(0.0, next_at - time.time()),
        stoppable=STOPPABLE,
        startable=STARTABLE,
        notice=notice,
    )


def _state(request: Request, stream: StreamJobDetail, notice: str | None = None) -> HTMLResponse:
    return _render_stream(request, "_stream_state.html", stream, notice)


@router.get("/streams/{name}")
def stream_page(request: Request, name: str, service: ServiceDep, user: UserDep) -> HTMLResponse:
    stream = stream_detail_view(service.streams.get(name, user=user))
    return _render_stream(request, "stream.html", stream)


@router.get("/streams/{name}/state")
def stream_state(request: Request, name: str, service: ServiceDep, user: UserDep) -> HTMLResponse:
    """State, queries, restarts and last error; the page polls it."""
    return _state(request, stream_detail_view(service.streams.get(name, user=user)))


class ChartSeries(Body):
    """One query's line on the charts: its progress samples, oldest first."""

    name: str
    points: list[StreamProgress]


class ChartData(Body):
    """The charts' data, and the cursor to ask for what comes after it."""

    cursor: int
    queries: list[ChartSeries]


@router.get("/streams/{name}/progress")
def stream_progress(name: str, service: ServiceDep, user: UserDep, after: Offset = 0) -> ChartData:
    """The charts' data: each query's stored progress samples, oldest first, and a cursor.
    ``?after=<cursor>`` answers only the samples stored since, which the charts append."""
    return _progress(service.streams.progress(name, user=user, after=after), after)


def _progress(queries: list[QueryProgress], after: int) -> ChartData:
    cursor = max([after, *(p.id for q in queries for p in q.samples)])
    series = [
        ChartSeries(name=q.name, points=[StreamProgress.of(p) for p in q.samples]) for q in queries
    ]
    return ChartData(cursor=cursor, queries=series)


@router.post("/streams/{name}/stop")
def stop_stream(request: Request, name: str, service: ServiceDep, user: UserDep) -> HTMLResponse:
    stream = stream_detail_view(service.streams.stop(name, user=user))
    return _state(request, stream, notice=f"Stopping {name} at the end of its micro-batch.")


@router.post("/streams/{name}/start")
def start_stream(request: Request, name: str, service: ServiceDep, user: UserDep) -> HTMLResponse:
    try:
        stream = stream_detail_view(service.streams.start(name, user=user))
    except StreamJobBusy as exc:
        # Still stopping (another tab, another user's click): say so where the button was.
        return _state(
            request, stream_detail_view(service.streams.get(name, user=user)), notice=exc.message
        )
    return _state(request, stream, notice=f"Starting {name} from its checkpoints.")


# -- the streaming queries started in sessions (SAVE STREAM) -------------------------------

# The states in which a session's query shows a Stop button (a stream job's: STOPPABLE).
QUERY_STOPPABLE = frozenset(s.value for s in STOPPABLE_QUERY_STATES)


def _session_stream(
    service: Service, session_id: int, stream_id: int, user: Principal
) -> SessionQuery:
    stream, detail = service.streams.session_query(session_id, stream_id, user=user)
    return SessionQuery.shown(stream, detail)


def _render_session_stream(
    request: Request, template: str, query: SessionQuery, notice: str | None = None
) -> HTMLResponse:
    """The page of a session's streaming query, or its state fragment."""
    return render(request, template, query=query, stoppable=QUERY_STOPPABLE, notice=notice)


@router.get("/sessions/{session_id}/streams/{stream_id}")
def session_stream_page(
    request: Request, session_id: Id, stream_id: Id, service: ServiceDep, user: UserDep
) -> HTMLResponse:
    """A streaming query started in a session: its state, progress and chart."""
    query = _session_stream(service, session_id, stream_id, user)
    return _render_session_stream(request, "session_stream.html", query)


@router.get("/sessions/{session_id}/streams/{stream_id}/state")
def session_stream_state(
    request: Request, session_id: Id, stream_id: Id, service: ServiceDep, user: UserDep
) -> HTMLResponse:
    query = _session_stream(service, session_id, stream_id, user)
    return _render_session_stream(request, "_session_stream_state.html", query)


@router.get("/sessions/{session_id}/streams/{stream_id}/progress")
def session_stream_progress(
    session_id: Id, stream_id: Id, service: ServiceDep, user: UserDep, after: Offset = 0
) -> ChartData:
    """The chart's data, as a stream job's (``/ui/streams/{name}/progress``)."""
    progress = service.streams.session_progress(session_id, stream_id, user=user, after=after)
    return _progress(progress, after)


@router.post("/sessions/{session_id}/streams/{stream_id}/stop")
def stop_session_stream(
    request: Request, session_id: Id, stream_id: Id, service: ServiceDep, user: UserDep
) -> HTMLResponse:
    """``STOP STREAM`` in the query's session, as ``POST /v1/queries`` would submit it."""
    statement = service.streams.stop_in_session(session_id, stream_id, user=user)
    query = _session_stream(service, session_id, stream_id, user)
    notice = (
        f"Stopping {query.name} at the end of its micro-batch (query {statement.id} in "
        f"session {session_id})."
    )
    return _render_session_stream(request, "_session_stream_state.html", query, notice=notice)
