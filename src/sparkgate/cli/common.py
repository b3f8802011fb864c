"""What every CLI command shares: the server option, the client, and failing clearly."""

from __future__ import annotations

import json
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Annotated, Any, NoReturn

import typer
from rich.console import Console

from sparkgate.client import DEFAULT_SERVER, Client, ClientError

console = Console()
err_console = Console(stderr=True)

ServerOption = Annotated[
    str,
    typer.Option("--server", envvar="SPARKGATE_SERVER", help="The sparkgate server to talk to."),
]
JsonOption = Annotated[bool, typer.Option("--json", help="Print JSON instead of a table.")]

DEFAULT = DEFAULT_SERVER


def fail(message: str, code: int = 1) -> NoReturn:
    err_console.print(f"[bold red]error:[/] {message}", highlight=False, soft_wrap=True)
    raise typer.Exit(code)


@contextmanager
def client(server: str) -> Iterator[Client]:
    """A client whose errors end the command with one clear line and a non-zero exit."""
    try:
        with Client(server) as c:
            yield c
    except ClientError as exc:
        fail(str(exc))


def print_json(value: Any) -> None:
    typer.echo(json.dumps(value, indent=2, default=str))
