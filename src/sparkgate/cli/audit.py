"""``sparkgate audit``: who did what, from where, and how it went (admins)."""

from __future__ import annotations

from typing import Annotated

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
        typer.Option("--object", help="Only events about this table (hr.salaries)."),
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
    as_json: JsonOption = False,
) -> None:
    """Audit events, newest first (admins).

    Example: sparkgate audit --outcome denied --since 1d
    """
    since_epoch = ago("--since", since)
    with client() as sg:
        page = sg.audit(
            user=user,
            action=action,
            outcome=outcome,
            offset=offset,
            limit=limit,
            since=since_epoch,
            after=after,
            obj=obj,
        )
    if as_json:
        print_json(page)
        return
    events = page.events  # newest first, as the server answers
    fields = ("at", "user", "address", "action", "target", "outcome")
    rows = (
        (
            str(e.id),
            *(getattr(e, field) or "" for field in fields),
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
