"""``sparkgate queries list|show|result|cancel``."""

from __future__ import annotations

from enum import StrEnum
from pathlib import Path
from typing import Annotated

import typer
from rich.progress import DownloadColumn, Progress, SpinnerColumn, TransferSpeedColumn

from sparkgate.cli.common import (
    AfterOption,
    JsonOption,
    LimitOption,
    client,
    console,
    err_console,
    fail,
    fetch_to_show,
    print_field,
    print_fields,
    print_json,
    show_page,
)
from sparkgate.cli.render import (
    cost_lines,
    describe_error,
    output_text,
    queries_table,
    result_table,
)
from sparkgate.client import Client
from sparkgate.client.queries import Downloaded, download_format_of

app = typer.Typer(help="Queries: list, show, download the result, cancel.", no_args_is_help=True)


class DownloadFormat(StrEnum):
    csv = "csv"
    jsonl = "jsonl"
    parquet = "parquet"
    arrow = "arrow"


OutputOption = Annotated[
    Path | None,
    typer.Option(
        "--output",
        "-o",
        dir_okay=False,
        help="Write the whole result to this file (.csv, .jsonl, .parquet or .arrow).",
    ),
]
DownloadFormatOption = Annotated[
    DownloadFormat | None,
    typer.Option("--format", help="The file's format (default: from its extension)."),
]


def output_format(output: Path | None, format: DownloadFormat | None) -> str | None:
    """The format ``--output`` is written in (None without it): ``--format``, else the file's
    extension (a name that says none, or ``--format`` without ``--output``, ends the
    command), checked before anything runs."""
    if output is None:
        if format is not None:
            fail("--format is the format of the --output file: give --output too.")
        return None
    if format is not None:
        return format.value
    try:
        return download_format_of(output)
    except ValueError as exc:
        fail(f"{exc} (--format)")


def download(sg: Client, query_id: int, output: Path, fmt: str) -> Downloaded:
    """The query's whole result written to ``output``, with a progress line on a terminal;
    where it went, its rows and bytes said on stderr."""
    with Progress(
        SpinnerColumn(),
        "[progress.description]{task.description}",
        DownloadColumn(),
        TransferSpeedColumn(),
        console=err_console,
        transient=True,
        disable=not err_console.is_terminal,
    ) as progress:
        task = progress.add_task(f"query {query_id}: downloading {fmt}", total=None)
        done = sg.download(
            query_id,
            output,
            format=fmt,
            progress=lambda written: progress.update(task, completed=written),
        )
    rows = "" if done.rows is None else f"{done.rows:,} row{'s' if done.rows != 1 else ''}, "
    err_console.print(
        f"wrote {done.path} ({rows}{done.bytes:,} bytes, {fmt}) · query {query_id}",
        highlight=False,
        soft_wrap=True,  # a path cut over two lines is no path to paste
    )
    return done


@app.command("list")
def list_queries(
    session: Annotated[int | None, typer.Option(help="Only this session's queries.")] = None,
    state: Annotated[list[str] | None, typer.Option(help="Only queries in this state.")] = None,
    search: Annotated[
        str | None, typer.Option(help="Only queries whose text holds this (any case).")
    ] = None,
    limit: LimitOption = 50,
    after: AfterOption = None,
    as_json: JsonOption = False,
) -> None:
    """The newest queries first; older ones with ``--after`` and the cursor printed last."""
    with client() as sg:
        page = sg.queries(session_id=session, state=state, search=search, limit=limit, after=after)
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
    for name, text in cost_lines(query.cost, query.price) if query.cost else ():
        print_field(name, text)


@app.command("result")
def query_result(
    query_id: int,
    output: OutputOption = None,
    format: DownloadFormatOption = None,
    limit: Annotated[
        int, typer.Option(help="Without --output: print at most this many rows.")
    ] = 1000,
    as_json: JsonOption = False,
) -> None:
    """A query's result: printed (its first rows), or whole to a file with ``--output``.

    Example: sparkgate queries result 42 --output sales.parquet
    """
    fmt = output_format(output, format)
    if output is not None and fmt is not None:
        with client() as sg:
            download(sg, query_id, output, fmt)
        return
    with client() as sg:
        page = sg.result(query_id, limit=limit)
    if as_json:
        print_json(page)
        return
    if page.columns:
        console.print(result_table(page.columns, page.rows))
    more = f" (showing {len(page.rows)})" if len(page.rows) < page.total else ""
    err_console.print(f"[dim]{page.total} row{'s' if page.total != 1 else ''}{more}[/]")


@app.command("cancel")
def cancel_query(query_id: int) -> None:
    """Cancel a queued, waiting or running query."""
    with client() as sg:
        query = sg.cancel(query_id)
    console.print(f"query {query_id}: {query.state}")
