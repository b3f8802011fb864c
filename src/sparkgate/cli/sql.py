"""``sparkgate sql``: run one query and print its result."""

from __future__ import annotations

from typing import Annotated, Any

import typer

from sparkgate.cli.common import (
    JsonOption,
    client,
    console,
    err_console,
    fail,
    print_json,
)
from sparkgate.cli.render import describe_error, result_table
from sparkgate.client import FINAL_STATES, Client

_UNPLACED = {"not_started", "starting"}  # a session's states before its engine takes it


def status_text(
    query: dict[str, Any], session: dict[str, Any] | None, engine: dict[str, Any] | None
) -> str:
    """What the spinner says: the query's state, or, while it waits for an engine that is
    still starting (a server's first minute: a Spark driver takes tens of seconds to
    start), that it waits for that, lest the wait look like a hang."""
    starting = (
        query["state"] == "waiting"
        and session is not None
        and session["state"] in _UNPLACED
        and engine is not None
        and engine["id"] == session["engine_id"]
        and engine["state"] == "starting"
    )
    if starting:
        wait = "waiting for its Spark engine to start (a new driver takes tens of seconds)"
        return f"query {query['id']}: {wait}"
    return f"query {query['id']}: {query['state']}"


def _status(sg: Client, query: dict[str, Any]) -> str:
    """``status_text`` with the query's session and engine, read only while it waits and
    only for a terminal (nothing else shows the spinner)."""
    if query["state"] != "waiting" or not err_console.is_terminal:
        return status_text(query, None, None)
    session = sg.session(query["session_id"])
    engine = None
    if session["engine_id"] is not None:
        live = sg.engines()["engines"]
        engine = next((e for e in live if e["id"] == session["engine_id"]), None)
    return status_text(query, session, engine)


def sql(
    query: Annotated[str, typer.Argument(help="The SQL to run.")],
    session: Annotated[
        int | None, typer.Option("--session", help="Run in this session (else as a batch).")
    ] = None,
    isolation: Annotated[
        str | None,
        typer.Option(
            help="Without --session: 'session' (default) runs the query in a fresh Spark "
            "session on a warm shared engine; 'engine' gives it a Spark driver of its own."
        ),
    ] = None,
    limit: Annotated[int, typer.Option(help="Print at most this many rows.")] = 1000,
    as_json: JsonOption = False,
) -> None:
    """Submit a query, wait for it (showing its state), and print the result.

    Example: sparkgate sql "SELECT id, id % 3 AS r FROM range(10)"
    """
    with client() as sg:
        # Held up to a second: a short query answers, first page and all, in this one request.
        submitted = sg.submit(query, session_id=session, isolation=isolation, wait=1, limit=limit)
        query_id = submitted["id"]
        current = submitted
        try:
            with err_console.status(_status(sg, current)) as status:
                while current["state"] not in FINAL_STATES:
                    current = sg.query(query_id, wait=1)
                    status.update(_status(sg, current))
        except KeyboardInterrupt:
            sg.cancel(query_id)
            fail(f"query {query_id} cancelled", code=130)
        if current["state"] != "success":
            if as_json:
                print_json(current)
            fail(f"query {query_id} {current['state']}: {describe_error(current['error'])}")
        page = current.pop("page", None) or sg.result(query_id, limit=limit)
        if as_json:
            print_json({"query": current, "schema": page["schema"], "rows": page["rows"]})
            return
        if page["schema"]:
            console.print(result_table(page["schema"], page["rows"]))
        shown = len(page["rows"])
        total = page["total"]
        more = f" (showing {shown})" if shown < total else ""
        err_console.print(
            f"[dim]{total} row{'s' if total != 1 else ''}{more} · query {query_id}[/]"
        )
