"""``sparkgate audit``: who did what, from where, and how it went; with ``--object``, who read
and wrote a table (its access history), and ``--export`` for other tools (JSON lines)."""

from __future__ import annotations

import sys
from typing import Annotated, Any

import typer

from sparkgate.cli.common import (
    JsonOption,
    ago,
    client,
    console,
    err_console,
    print_json,
)
from sparkgate.cli.render import cell, table
from sparkgate.client import Client
from sparkgate.doors import DOORS


def audit(
    user: Annotated[str | None, typer.Option("--user", help="Only this user's events.")] = None,
    action: Annotated[
        str | None,
        typer.Option("--action", help="Only actions starting so: session, token.create."),
    ] = None,
    outcome: Annotated[
        str | None, typer.Option("--outcome", help="Only this outcome (e.g. denied).")
    ] = None,
    obj: Annotated[
        str | None,
        typer.Option(
            "--object", help="Only events about this table (hr.salaries): who read and wrote it."
        ),
    ] = None,
    door: Annotated[
        str | None,
        typer.Option("--door", help="Only accesses through this door: " + ", ".join(DOORS) + "."),
    ] = None,
    limit: Annotated[int, typer.Option("--limit", help="At most this many events.")] = 50,
    offset: Annotated[int, typer.Option("--offset", help="Skip this many first.")] = 0,
    after: Annotated[
        str | None,
        typer.Option("--after", help="The page after this cursor (printed after a page)."),
    ] = None,
    since: Annotated[
        str | None, typer.Option("--since", help="Only the last while, e.g. 1h, 7d.")
    ] = None,
    until: Annotated[
        str | None, typer.Option("--until", help="Only events before that long ago, e.g. 1d.")
    ] = None,
    export: Annotated[
        bool,
        typer.Option(
            "--export",
            help="Every matching event, oldest page last, one JSON object a line (for other "
            "tools); --limit is then the page size.",
        ),
    ] = False,
    as_json: JsonOption = False,
) -> None:
    """Audit events and the access history, newest first. Admins see every event; a user
    sees their own, and the whole history of a table they own.

    Examples: sparkgate audit --outcome denied --since 1d;
    sparkgate audit --object hr.salaries --action table.select;
    sparkgate audit --object hr.salaries --since 30d --export > reads.jsonl
    """
    filters: dict[str, Any] = {
        "user": user,
        "action": action,
        "outcome": outcome,
        "since": ago("--since", since),
        "until": ago("--until", until),
        "obj": obj,
        "door": door,
    }
    if export:
        with client() as sg:
            _export(sg, filters, max(1, min(limit, 1000)), after)
        return
    with client() as sg:
        page = sg.audit(offset=offset, limit=limit, after=after, **filters)
    if as_json:
        print_json(page)
        return
    events = page.events  # newest first, as the server answers
    fields = ("at", "user", "door", "query_id", "action", "target", "outcome")
    rows = (
        (
            str(e.id),
            *("" if getattr(e, field) is None else str(getattr(e, field)) for field in fields),
            "" if e.detail in (None, "", {}) else cell(e.detail),
        )
        for e in events
    )
    console.print(table(("id", *fields, "detail"), rows))
    first, total = page.offset, page.total
    of = "" if total is None else f" of {total}"
    if events:
        shown = f"after {after}" if first is None else f"{first + 1}-{first + len(events)}"
        summary = f"{len(events)} events ({shown}{of})"
    else:
        summary = "no events" if total is None else f"no events (of {total})"
    if page.next:
        summary += f"; more: --after {page.next}"
    err_console.print(summary, highlight=False)


def _export(sg: Client, filters: dict[str, Any], size: int, after: str | None) -> None:
    """Page through every matching event by cursor (a page at a time: constant memory),
    writing each as a line of JSON as the API answers it."""
    out = sys.stdout
    while True:
        page = sg.audit(limit=size, after=after, total=False, **filters)
        for event in page.events:
            out.write(event.model_dump_json() + "\n")
        if not page.next:
            break
        after = page.next
    out.flush()
