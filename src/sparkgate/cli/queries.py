"""``sparkgate queries list|show|cancel``."""

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
from sparkgate.cli.render import cost_lines, describe_error, output_text, queries_table

app = typer.Typer(help="Queries: list, show, cancel.", no_args_is_help=True)


@app.command("list")
def list_queries(
    session: Annotated[int | None, typer.Option(help="Only this session's queries.")] = None,
    state: Annotated[list[str] | None, typer.Option(help="Only queries in this state.")] = None,
    limit: LimitOption = 50,
    after: AfterOption = None,
    as_json: JsonOption = False,
) -> None:
    """The newest queries first; older ones with ``--after`` and the cursor printed last."""
    with client() as sg:
        page = sg.queries(session_id=session, state=state, limit=limit, after=after)
    show_page(page, page.queries, queries_table, as_json)


@app.command("show")
def show_query(query_id: int, as_json: JsonOption = False) -> None:
    """One query: state, times, error or result shape, and what its Spark tasks cost."""
    query = fetch_to_show(lambda sg: sg.query(query_id), as_json)
    if query is None:
        return
    print_fields(
        query,
        (
            "id",
            "session_id",
            "kind",
            "state",
            "progress",
            "created_at",
            "started_at",
            "finished_at",
        ),
    )
    if query.resource_group:
        turn = query.queue_position
        where = query.resource_group + (f" (queued: turn {turn})" if turn else "")
        print_field("resource group", where)
    print_field("query", query.query)
    if query.error:
        print_field("error", describe_error(query.error))
    text = output_text(query.output)
    if text:
        console.print("[bold]output[/]:", highlight=False)
        console.print(text, markup=False, highlight=False)
    if query.result:
        columns = ", ".join(f"{c.name} {c.type}" for c in query.result.columns)
        print_field("result", f"{query.result.row_count} rows ({columns})")
    for name, text in cost_lines(query.cost) if query.cost else ():
        print_field(name, text)


@app.command("cancel")
def cancel_query(query_id: int) -> None:
    """Cancel a queued, waiting or running query."""
    with client() as sg:
        query = sg.cancel(query_id)
    console.print(f"query {query_id}: {query.state}")
