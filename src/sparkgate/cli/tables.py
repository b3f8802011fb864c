"""``sparkgate tables list|show``: the catalog as you may see it."""

from __future__ import annotations

from typing import Annotated

import typer
from rich.filesize import decimal

from sparkgate.cli.common import JsonOption, console, fetch_to_show
from sparkgate.cli.render import describe_error, result_table, table
from sparkgate.schemas.tables import TableDetail

app = typer.Typer(help="The catalog: schemas, tables and views you may see.", no_args_is_help=True)


@app.command("list")
def list_tables(
    schema: Annotated[str | None, typer.Option(help="Only this schema.")] = None,
    as_json: JsonOption = False,
) -> None:
    """The tables and views you may see, schema by schema.

    Example: sparkgate tables list --schema hr
    """
    listing = fetch_to_show(lambda sg: sg.tables(schema), as_json)
    if listing is None:
        return
    rows = [(s.name, t.name, t.kind) for s in listing.schemas for t in s.tables] + [
        (s.name, "-", "-") for s in listing.schemas if not s.tables
    ]
    console.print(table(("schema", "name", "kind"), sorted(rows)))


@app.command("show")
def show_table(
    name: Annotated[str, typer.Argument(help="schema.table (or table, in default)")],
    as_json: JsonOption = False,
) -> None:
    """A table or view: columns, owner, size, last change, first rows, recent queries.

    Example: sparkgate tables show hr.salaries
    """
    detail = fetch_to_show(lambda sg: sg.table(name), as_json)
    if detail is None:
        return
    console.print(
        f"[bold]{detail.name}[/] ({detail.kind}), owned by {detail.owner or '(not recorded)'}",
        highlight=False,
    )
    for line in _facts(detail):
        console.print(line, markup=False, highlight=False)
    console.print(
        table(
            ("column", "type", "nullable", "comment"),
            ((c.name, c.type, _yes_no(c.nullable), c.comment or "") for c in detail.columns),
        )
    )
    preview = detail.preview
    if preview is not None:
        console.print(f"first {len(preview.rows)} rows:", highlight=False)
        console.print(result_table(preview.columns, preview.rows))
    elif detail.preview_error:
        console.print(f"no preview: {describe_error(detail.preview_error)}", highlight=False)
    recent = detail.recent_queries
    console.print(
        table(
            ("query", "user", "access", "state", "at"),
            ((str(q.id), q.user or "", q.access, q.state, q.at) for q in recent),
            title="recent queries" if recent else "recent queries: none of yours",
        )
    )


def _facts(detail: TableDetail) -> list[str]:
    facts = []
    if detail.size_bytes is not None:
        more = "" if detail.files_complete else " (counted so far)"
        facts.append(f"size: {decimal(detail.size_bytes)} in {detail.files} files{more}")
    for key in ("last_change", "created_at", "provider", "location", "comment", "view_text"):
        value = getattr(detail, key)
        if value:
            facts.append(f"{key}: {value}")
    return facts


def _yes_no(value: bool | None) -> str:
    return "" if value is None else ("yes" if value else "no")
