"""Dashboard pages for stream jobs: the live list, one job (state, restarts and their backoff,
queries, charts of their progress), and the stop and start buttons.

Pages call the service with the signed-in user, as the native API does, and show its records
in the API's views. The charts' data is the one read the API has no route for (every stored
progress sample, not only the detail's recent ones): the service reads it with the same access
check.
"""

from __future__ import annotations

import time
from typing import Any

from fastapi import APIRouter, Request
from fastapi.responses import HTMLResponse

from sparkgate.auth.principal import Principal
from sparkgate.errors import InvalidRequest, StreamJobBusy
from sparkgate.http.deps import ServiceDep, UserDep
from sparkgate.http.params import Offset
from sparkgate.service import Service
from sparkgate.service.views import stream_detail_view, stream_progress_view, stream_summary_view
from sparkgate.states import StreamJobState
from sparkgate.streaming.backoff import RetryPolicy, backoff_delay
from sparkgate.web.paging import shown, window_of
from sparkgate.web.templating import render, render_list, timestamp

router = APIRouter(prefix="/ui", include_in_schema=False)


# What the buttons may do in each state (the same states ``Streams.stop``/``start`` act in;
# elsewhere they would change nothing, so no button is shown).
STOPPABLE = frozenset({"pending", "starting", "running", "restarting"})
STARTABLE = frozenset({"stopped", "failed"})


def _filters(state: str | None, owner: str | None, after: str | None) -> dict[str, Any]:
    if state and state not in {s.value for s in StreamJobState}:
        raise InvalidRequest(f"state: unknown stream job state {state!r}.", field="state")
    return {"state": state or "", "owner": owner or "", "after": after or ""}


def _page(service: Service, user: Principal, filters: dict[str, Any]) -> dict[str, Any]:
    page = service.streams.list_page(
        user=user,
        owner=filters["owner"] or None,
        states=[StreamJobState(filters["state"])] if filters["state"] else None,
        window=window_of(filters, by_name=True),
    )
    return shown("streams", page, stream_summary_view, filters)


@router.get("/streams")
def streams_page(
    request: Request,
    service: ServiceDep,
    user: UserDep,
    state: str | None = None,
    owner: str | None = None,
    after: str | None = None,
) -> HTMLResponse:
    """The live list: the page, and the table alone for its poll (states, restarts and
    errors change without a reload)."""
    filters = _filters(state, owner, after)
    return render_list(
        request,
        "streams.html",
        "_streams_table.html",
        page=_page(service, user, filters),
        filters=filters,
        states=[s.value for s in StreamJobState],
    )


SCHEDULE = 4  # upcoming backoff delays shown per query


def _restarts(stream: dict[str, Any]) -> list[dict[str, Any]]:
    """The job's relaunches and its queries' restarts in one list, newest first."""
    rows = [{**r, "of": None} for r in stream["recent_restarts"]]
    for query in stream["queries"]:
        rows.extend({**r, "of": query["name"]} for r in query.get("recent_restarts", []))
    return sorted(rows, key=lambda r: r["failed_at"] or "", reverse=True)


def _schedule(query: dict[str, Any]) -> list[float]:
    """The delays the query would wait if it failed again now, and again after that: the
    supervisor's own backoff function on the query's own policy (without the random part)."""
    if not query.get("retry"):
        return []
    policy = RetryPolicy.from_json(query["retry"])
    if not policy.enabled:
        return []
    left = max(0, min(SCHEDULE, policy.max_attempts - query["failures"]))
    return [backoff_delay(query["failures"] + n, policy, rand=lambda: 0.0) for n in range(left)]


def _context(stream: dict[str, Any]) -> dict[str, Any]:
    next_at = timestamp(stream["next_restart_at"])
    return {
        "stream": stream,
        "restarts": _restarts(stream),
        "schedules": {q["name"]: _schedule(q) for q in stream["queries"]},
        "restart_in": None if next_at is None else max(0.0, next_at - time.time()),
        "stoppable": STOPPABLE,
        "startable": STARTABLE,
    }


def _state(request: Request, stream: dict[str, Any], notice: str | None = None) -> HTMLResponse:
    return render(request, "_stream_state.html", notice=notice, **_context(stream))


@router.get("/streams/{name}")
def stream_page(request: Request, name: str, service: ServiceDep, user: UserDep) -> HTMLResponse:
    return render(
        request, "stream.html", **_context(stream_detail_view(service.streams.get(name, user=user)))
    )


@router.get("/streams/{name}/state")
def stream_state(request: Request, name: str, service: ServiceDep, user: UserDep) -> HTMLResponse:
    """State, queries, restarts and last error; the page polls it."""
    return _state(request, stream_detail_view(service.streams.get(name, user=user)))


@router.get("/streams/{name}/progress")
def stream_progress(
    name: str, service: ServiceDep, user: UserDep, after: Offset = 0
) -> dict[str, Any]:
    """The charts' data: each query's stored progress samples, oldest first, and a cursor.
    ``?after=<cursor>`` answers only the samples stored since, which the charts append."""
    queries = service.streams.progress(name, user=user, after=after)
    cursor = max([after, *(p.id for q in queries for p in q.samples)])
    points = [
        {"name": q.name, "points": [stream_progress_view(p) for p in q.samples]} for q in queries
    ]
    return {"cursor": cursor, "queries": points}


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
