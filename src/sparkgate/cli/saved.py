"""``sparkgate saved list|show|add|update|delete|run``: saved queries."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Annotated

import typer
from rich.markup import escape
from rich.text import Text

from sparkgate.cli.common import (
    AfterOption,
    JsonOption,
    LimitOption,
    client,
    console,
    fail,
    fetch_to_show,
    print_field,
    print_json,
    show_page,
)
from sparkgate.cli.render import Shortened, Tabular, table
from sparkgate.cli.sql import sql
from sparkgate.schemas.saved_queries import SavedQuery

app = typer.Typer(help="Saved queries: list, show, add, update, delete, run.", no_args_is_help=True)

SqlOption = Annotated[str | None, typer.Option("--sql", help="The SQL text.")]
FileOption = Annotated[
    Path | None,
    typer.Option("--file", help="Read the SQL from this file ('-': standard input)."),
]
GroupOption = Annotated[
    str | None, typer.Option(help="Share it with this group of yours (else private).")
]
DescriptionOption = Annotated[str | None, typer.Option(help="What it is for.")]


def saved_table(saved: Sequence[SavedQuery]) -> Tabular:
    return table(
        ("id", "name", "owner", "group", "updated", "sql"),
        (
            (
                str(s.id),
                Text(s.name),
                s.owner,
                Text(s.group or ""),
                s.updated_at,
                Shortened(" ".join(s.sql.split()), 60),
            )
            for s in saved
        ),
    )


def _text(sql_text: str | None, file: Path | None, *, needed: bool) -> str | None:
    """The SQL from ``--sql`` or ``--file``, one of them (``needed``: exactly one)."""
    if sql_text is not None and file is not None:
        fail("give --sql or --file, not both.")
    if file is not None:
        try:
            return typer.get_text_stream("stdin").read() if str(file) == "-" else file.read_text()
        except OSError as exc:
            fail(f"--file: cannot read {file}: {exc.strerror or exc}")
    if sql_text is None and needed:
        fail("give the SQL with --sql TEXT or --file FILE.")
    return sql_text


@app.command("list")
def list_saved(
    search: Annotated[
        str | None, typer.Option(help="Only those whose name or SQL holds this (any case).")
    ] = None,
    owner: Annotated[
        str | None, typer.Option(help="Only this user's (admins: shared or not).")
    ] = None,
    limit: LimitOption = 50,
    after: AfterOption = None,
    as_json: JsonOption = False,
) -> None:
    """Yours and those shared with your groups, newest change first.

    Example: sparkgate saved list --search revenue
    """
    with client() as sg:
        page = sg.saved_queries(search=search, owner=owner, limit=limit, after=after)
    show_page(page, page.saved_queries, saved_table, as_json)


@app.command("show")
def show_saved(saved_id: int, as_json: JsonOption = False) -> None:
    """One saved query, its SQL whole."""
    saved = fetch_to_show(lambda sg: sg.saved_query(saved_id), as_json)
    if saved is None:
        return
    for key in ("id", "name", "owner", "group", "description", "created_at", "updated_at"):
        value = getattr(saved, key)
        print_field(key, "" if value is None else escape(str(value)))  # a name is not markup
    console.print("[bold]sql[/]:", highlight=False)
    console.print(saved.sql, markup=False, highlight=False)


@app.command("add")
def add_saved(
    name: Annotated[str, typer.Argument(help="Its name, unique among yours.")],
    sql_text: SqlOption = None,
    file: FileOption = None,
    group: GroupOption = None,
    description: DescriptionOption = None,
    as_json: JsonOption = False,
) -> None:
    """Save a query under a name.

    Example: sparkgate saved add "daily revenue" --file revenue.sql --group analysts
    """
    text = _text(sql_text, file, needed=True)
    assert text is not None
    with client() as sg:
        saved = sg.save_query(name, text, group=group, description=description)
    if as_json:
        print_json(saved)
        return
    shared = f"shared with {saved.group}" if saved.group else "private"
    console.print(f"saved query {saved.id}: {saved.name} ({shared})", highlight=False)


@app.command("update")
def update_saved(
    saved_id: int,
    name: Annotated[str | None, typer.Option(help="A new name.")] = None,
    sql_text: SqlOption = None,
    file: FileOption = None,
    group: GroupOption = None,
    private: Annotated[bool, typer.Option("--private", help="Stop sharing it.")] = False,
    description: DescriptionOption = None,
    as_json: JsonOption = False,
) -> None:
    """Change a saved query of yours: only what is given changes.

    Example: sparkgate saved update 7 --sql "SELECT 2" --private
    """
    if private and group is not None:
        fail("give --group or --private, not both.")
    text = _text(sql_text, file, needed=False)
    with client() as sg:
        saved = sg.update_saved_query(
            saved_id,
            name=name,
            sql=text,
            group=group,
            private=private,
            description=description,
        )
    if as_json:
        print_json(saved)
        return
    console.print(f"saved query {saved.id}: {saved.name} updated", highlight=False)


@app.command("delete")
def delete_saved(saved_id: int) -> None:
    """Delete a saved query of yours (admins: anyone's)."""
    with client() as sg:
        saved = sg.delete_saved_query(saved_id)
    console.print(f"saved query {saved.id}: {saved.name} deleted", highlight=False)


@app.command("run")
def run_saved(
    saved_id: int,
    session: Annotated[
        int | None, typer.Option("--session", help="Run in this session (else as a batch).")
    ] = None,
    limit: Annotated[int, typer.Option(help="Print at most this many rows.")] = 1000,
    as_json: JsonOption = False,
) -> None:
    """Run a saved query as ``sparkgate sql`` runs one: wait, then print its result.

    Example: sparkgate saved run 7
    """
    with client() as sg:
        saved = sg.saved_query(saved_id)
    sql(saved.sql, session=session, limit=limit, as_json=as_json)
