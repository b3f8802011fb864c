"""Waiting in the CLI: for a query, a spinner saying its state (and, while its engine's Spark
driver is still starting, that it waits for that), Ctrl-C cancelling it; for a job run, a
stream job or a deployment, reading it again until it settles or the timeout passes."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import TypeVar

from sparkgate.cli.common import err_console, fail
from sparkgate.client import FINAL_STATES, Client
from sparkgate.schemas.engines import Engine
from sparkgate.schemas.queries import Query, Session, Submitted

_UNPLACED = {"not_started", "starting"}  # a session's states before its engine takes it

T = TypeVar("T")


def status_text(query: Submitted, session: Session | None, engine: Engine | None) -> str:
    """What the spinner says: the query's state, or, while it waits for an engine that is
    still starting (a server's first minute: a Spark driver takes tens of seconds to
    start), that it waits for that, lest the wait look like a hang."""
    starting = (
        query.state == "waiting"
        and session is not None
        and session.state in _UNPLACED
        and engine is not None
        and engine.id == session.engine_id
        and engine.state == "starting"
    )
    if starting:
        wait = "waiting for its Spark engine to start (a new driver takes tens of seconds)"
        return f"query {query.id}: {wait}"
    return f"query {query.id}: {query.state}"


def _status(sg: Client, query: Submitted) -> str:
    """``status_text`` with the query's session and engine, read only while it waits and
    only for a terminal (nothing else shows the spinner)."""
    if query.state != "waiting" or not err_console.is_terminal:
        return status_text(query, None, None)
    session = sg.session(query.session_id)
    engine = None
    if session.engine_id is not None:
        live = sg.engines().engines
        engine = next((e for e in live if e.id == session.engine_id), None)
    return status_text(query, session, engine)


def follow(sg: Client, submitted: Submitted, *, what: str = "") -> Query:
    """Wait for the query ``submitted`` to be final, showing its state on a terminal (after
    ``what``: "loading into t: "); the final query (as waited for: with its first page when
    the submit's own wait saw it succeed). Ctrl-C cancels it and exits 130."""
    query_id = submitted.id
    current = submitted
    try:
        with err_console.status(what + _status(sg, current)) as status:
            # A query as just queued (not the whole query) is read whole before it is done.
            while not isinstance(current, Query) or current.state not in FINAL_STATES:
                current = sg.query(query_id, wait=1)
                status.update(what + _status(sg, current))
    except KeyboardInterrupt:
        sg.cancel(query_id)
        fail(f"query {query_id} cancelled", code=130)
    return current


def poll(
    current: T,
    read: Callable[[], T],
    *,
    done: Callable[[T], bool],
    show: Callable[[T], None],
    timeout: float,
    timed_out: Callable[[T], str],
) -> T:
    """Read ``current`` again every half second until it is ``done``, showing each reading;
    after ``timeout`` seconds the command fails, saying ``timed_out`` of the last one."""
    deadline = time.monotonic() + timeout
    while not done(current):
        if time.monotonic() > deadline:
            fail(timed_out(current))
        time.sleep(0.5)
        current = read()
        show(current)
    return current
