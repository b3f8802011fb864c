"""``sparkgate sql``: run one query and print its result (or write it whole to a file)."""

from __future__ import annotations

from typing import Annotated

import typer

from sparkgate.cli.common import (
    JsonOption,
    TagOption,
    client,
    console,
    err_console,
    fail,
    print_json,
    tags_option,
)
from sparkgate.cli.queries import DownloadFormatOption, OutputOption, download, output_format
from sparkgate.cli.render import describe_error, result_table
from sparkgate.cli.waiting import follow
from sparkgate.schemas.queries import WaitedQuery


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
    tag: TagOption = None,
    output: OutputOption = None,
    format: DownloadFormatOption = None,
    reuse: Annotated[
        bool,
        typer.Option(
            "--reuse/--no-reuse",
            help="--no-reuse: run it even if an earlier result of the same query, on tables "
            "unchanged since, could answer it.",
        ),
    ] = True,
    as_json: JsonOption = False,
) -> None:
    """Submit a query, wait for it (showing its state), and print the result, or with
    ``--output`` write it whole to a file.

    Example: sparkgate sql "SELECT id, id % 3 AS r FROM range(10)" --tag team=finance

    Example: sparkgate sql "SELECT * FROM analysts.sales" --output sales.parquet
    """
    tags = tags_option(tag)
    fmt = output_format(output, format)
    with client() as sg:
        # Held up to a second: a short query answers, first page and all, in this one request.
        submitted = sg.submit(
            query,
            session_id=session,
            isolation=isolation,
            wait=1,
            limit=0 if output is not None else limit,
            tags=tags,
            reuse=reuse,
        )
        query_id = submitted.id
        current = follow(sg, submitted)
        if current.state != "success":
            if as_json:
                print_json(current)
            fail(f"query {query_id} {current.state}: {describe_error(current.error)}")
        if output is not None and fmt is not None:
            download(sg, query_id, output, fmt)
            return
        page = (
            current.page if isinstance(current, WaitedQuery) else sg.result(query_id, limit=limit)
        )
        if as_json:
            whole = current.model_dump(mode="json", by_alias=True, exclude={"page"})
            print_json({"query": whole, "schema": page.columns, "rows": page.rows})
            return
        if page.columns:
            console.print(result_table(page.columns, page.rows))
        shown = len(page.rows)
        total = page.total
        more = f" (showing {shown})" if shown < total else ""
        err_console.print(
            f"[dim]{total} row{'s' if total != 1 else ''}{more} · query {query_id}[/]"
        )
