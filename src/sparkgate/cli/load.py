"""``sparkgate load``: a local file into a table."""

from __future__ import annotations

from enum import StrEnum
from pathlib import Path
from typing import Annotated

import typer
from rich.progress import BarColumn, DownloadColumn, Progress, TransferSpeedColumn

from sparkgate.cli.common import (
    JsonOption,
    TagOption,
    client,
    err_console,
    fail,
    print_json,
    tags_option,
)
from sparkgate.cli.render import describe_error
from sparkgate.cli.waiting import follow
from sparkgate.client import Client, format_of
from sparkgate.schemas.queries import Submitted


class Format(StrEnum):
    csv = "csv"
    parquet = "parquet"
    json = "json"


class Mode(StrEnum):
    create = "create"
    append = "append"
    overwrite = "overwrite"


def load(
    file: Annotated[
        Path, typer.Argument(help="The file to load.", exists=True, dir_okay=False, readable=True)
    ],
    table: Annotated[str, typer.Option("--table", help="schema.table (or table, in default).")],
    format: Annotated[
        Format | None, typer.Option(help="The file's format (default: from its extension).")
    ] = None,
    mode: Annotated[
        Mode,
        typer.Option(help="create a new table, append to one, or overwrite its rows."),
    ] = Mode.create,
    header: Annotated[
        bool, typer.Option("--header", help="CSV: the first line names the columns.")
    ] = False,
    schema: Annotated[
        str | None,
        typer.Option(
            help='The columns, e.g. "a INT, b STRING" (default: inferred for create, the '
            "table's for append and overwrite)."
        ),
    ] = None,
    tag: TagOption = None,
    as_json: JsonOption = False,
) -> None:
    """Upload a CSV, Parquet or JSON-lines file into a table, whole or not at all.

    Example: sparkgate load sales.csv --table analysts.sales --header --tag team=finance
    """
    tags = tags_option(tag)
    fmt = format.value if format is not None else None
    if fmt is None:
        try:
            fmt = format_of(file)
        except ValueError as exc:
            fail(f"{exc} (--format)")
    size = file.stat().st_size
    with client() as sg:
        submitted = _upload(sg, file, table, fmt, mode.value, header, schema, size, tags)
        query_id = submitted.id
        current = follow(sg, submitted, what=f"loading into {table}: ")
    if as_json:
        print_json(current)
    if current.state != "success":
        fail(f"load {query_id} {current.state}: {describe_error(current.error)}")
    if not as_json:
        loaded = (current.output or {}).get("load") or {}
        columns = ", ".join(f"{name} {kind}" for name, kind in loaded.get("columns", []))
        err_console.print(
            f"loaded {file.name} ({size:,} bytes) into {table} ({mode.value}) · query {query_id}"
            + (f"\n[dim]columns: {columns}[/]" if columns else "")
        )


def _upload(
    sg: Client,
    file: Path,
    table: str,
    fmt: str,
    mode: str,
    header: bool,
    schema: str | None,
    size: int,
    tags: dict[str, str] | None,
) -> Submitted:
    """Send the file, with a progress bar on a terminal; the load's query as queued."""
    with Progress(
        "[progress.description]{task.description}",
        BarColumn(),
        DownloadColumn(),
        TransferSpeedColumn(),
        console=err_console,
        transient=True,
        disable=not err_console.is_terminal,
    ) as progress:
        task = progress.add_task(f"uploading {file.name}", total=size)
        return sg.load(
            file,
            table,
            format=fmt,
            mode=mode,
            header=header,
            schema=schema,
            progress=lambda sent: progress.update(task, completed=sent),
            tags=tags,
        )
