"""``sparkgate sessions list|show|kill``."""

from __future__ import annotations

from typing import Annotated

import typer

from sparkgate.cli.common import (
    JsonOption,
    client,
    console,
    print_fields,
    print_json,
    show_page,
)
from sparkgate.cli.render import describe_error, sessions_table

app = typer.Typer(help="Sessions: list, show, kill.", no_args_is_help=True)


@app.command("list")
def list_sessions(
    state: Annotated[list[str] | None, typer.Option(help="Only sessions in this state.")] = None,
    limit: Annotated[int, typer.Option(help="At most this many.")] = 100,
    after: Annotated[
        str | None, typer.Option(help="The page after this cursor (a list's `next`).")
    ] = None,
    one_off: Annotated[
        bool,
        typer.Option(
            "--one-off", help="One-off queries' sessions (`sparkgate sql` without --session) too."
        ),
    ] = False,
    as_json: JsonOption = False,
) -> None:
    """Sessions, oldest first; newer ones with ``--after`` and the cursor printed last.
    Each one-off query runs in a session of its own, ended with it: those are left out
    unless ``--one-off``."""
    with client() as sg:
        page = sg.sessions(state=state, limit=limit, after=after, one_off=one_off)
    show_page(page, "sessions", sessions_table, as_json)


@app.command("show")
def show_session(session_id: int, as_json: JsonOption = False) -> None:
    """One session."""
    with client() as sg:
        session = sg.session(session_id)
    if as_json:
        print_json(session)
        return
    print_fields(
        session,
        (
            "id",
            "kind",
            "name",
            "state",
            "engine_id",
            "statement_count",
            "created_at",
            "finished_at",
        ),
    )
    if session["conf"]:
        console.print(f"[bold]conf[/]: {session['conf']}", highlight=False)
    if session["error"]:
        console.print(f"[bold]error[/]: {describe_error(session['error'])}", highlight=False)


@app.command("kill")
def kill_session(session_id: int) -> None:
    """End a session; its running query is cancelled."""
    with client() as sg:
        session = sg.kill_session(session_id)
    console.print(f"session {session_id}: {session['state']}")
