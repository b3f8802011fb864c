"""``sparkgate sessions list|show|kill``."""

from __future__ import annotations

from typing import Annotated

import typer

from sparkgate.cli.common import (
    AfterOption,
    JsonOption,
    LimitOption,
    client,
    console,
    fetch_to_show,
    print_field,
    print_fields,
    show_page,
)
from sparkgate.cli.render import describe_error, sessions_table

app = typer.Typer(help="Sessions: list, show, kill.", no_args_is_help=True)


@app.command("list")
def list_sessions(
    state: Annotated[list[str] | None, typer.Option(help="Only sessions in this state.")] = None,
    limit: LimitOption = 100,
    after: AfterOption = None,
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
    show_page(page, page.sessions, sessions_table, as_json)


@app.command("show")
def show_session(session_id: int, as_json: JsonOption = False) -> None:
    """One session."""
    session = fetch_to_show(lambda sg: sg.session(session_id), as_json)
    if session is None:
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
    if session.conf:
        print_field("conf", session.conf)
    if session.error:
        print_field("error", describe_error(session.error))


@app.command("kill")
def kill_session(session_id: int) -> None:
    """End a session; its running query is cancelled."""
    with client() as sg:
        session = sg.kill_session(session_id)
    console.print(f"session {session_id}: {session.state}")
