"""What every CLI command shares: where to connect and as whom (``connection``, which
``connection.py`` fills from the options), credentials, the client, and failing clearly."""

from __future__ import annotations

import json
import os
import sys
import time
from collections.abc import Callable, Iterable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Annotated, Any, NoReturn, TypedDict, TypeVar

import typer
from pydantic import BaseModel
from pydantic_core import to_jsonable_python
from rich.console import Console, RenderableType

from sparkgate import credentials
from sparkgate.client import DEFAULT_SERVER, Client, ClientError
from sparkgate.credentials import CredentialsError
from sparkgate.doors import CLI_AGENT
from sparkgate.errors import InvalidRequest
from sparkgate.schemas.common import Paging
from sparkgate.sql.durations import parse_duration
from sparkgate.tags import from_words as tags_from_words

console = Console()
# Piped or redirected, what is printed goes out whole: without a terminal to ask, Rich would
# wrap and cut every line to 80 columns. (Tables print as TSV there: render.Tabular.)
console.soft_wrap = not console.is_terminal
err_console = Console(stderr=True)

JsonOption = Annotated[bool, typer.Option("--json", help="Print JSON instead of a table.")]
LimitOption = Annotated[int, typer.Option(help="At most this many.")]
AfterOption = Annotated[
    str | None, typer.Option(help="The page after this cursor (a list's `next`).")
]
TagOption = Annotated[
    list[str] | None,
    typer.Option(
        "--tag",
        metavar="KEY=VALUE",
        help="Tag the query (usage sums by tags; resource groups match them); repeatable.",
    ),
]


@dataclass
class Connection:
    """Where commands connect and with which credentials; ``*_typed``: typed on the command
    line (which beats the environment and the stored token) rather than from the
    environment."""

    server: str = DEFAULT_SERVER
    user: str | None = None
    token: str | None = None
    user_typed: bool = False
    token_typed: bool = False
    password: str | None = None  # once asked for, not asked again in the same command


# Changed in place, never replaced: commands imported it.
connection = Connection()


def fail(message: str, code: int = 1) -> NoReturn:
    err_console.print(f"[bold red]error:[/] {message}", highlight=False, soft_wrap=True)
    raise typer.Exit(code)


def ago(option: str, value: str | None) -> float | None:
    """The epoch seconds a ``--since 7d``-style option names (that long ago), or None; a
    value that is no duration ends the command saying so."""
    if value is None:
        return None
    try:
        return time.time() - parse_duration(value)
    except ValueError as exc:
        fail(f"{option}: {exc}")


def tags_option(words: list[str] | None) -> dict[str, str] | None:
    """``--tag team=finance --tag project=churn`` as tags (None for none); a tag without
    ``=`` or with an empty key, or one the server would refuse, ends the command."""
    if not words:
        return None
    for word in words:
        key, equals, _ = word.partition("=")
        if not equals or not key.strip():
            fail(f"--tag {word!r}: give a tag as KEY=VALUE, e.g. --tag team=finance")
    try:
        return tags_from_words(words, field="--tag")
    except InvalidRequest as exc:
        fail(str(exc))


def stdin_is_tty() -> bool:
    return sys.stdin is not None and sys.stdin.isatty()


def ask_password(user: str, *, confirm: bool = False) -> str:
    """SPARKGATE_PASSWORD, or asked for (hidden) on a terminal; fails when neither."""
    password = os.environ.get("SPARKGATE_PASSWORD")
    if password:
        return password
    if not stdin_is_tty():
        fail(f"no password for {user}: set SPARKGATE_PASSWORD, or run in a terminal.")
    answer: str = typer.prompt(
        f"Password for {user}", hide_input=True, confirmation_prompt=confirm, err=True
    )
    return answer


class ClientCredentials(TypedDict, total=False):
    user: str
    password: str
    token: str


def client_credentials(server: str) -> ClientCredentials:
    """The Client keyword arguments the global options call for; {} leaves the choice to the
    Client (SPARKGATE_TOKEN, SPARKGATE_USER + SPARKGATE_PASSWORD, then the stored token)."""
    opts = connection
    if opts.user_typed and opts.user:
        opts.password = opts.password or ask_password(opts.user)
        return {"user": opts.user, "password": opts.password}
    if opts.token:
        return {"token": opts.token}
    if opts.user and not os.environ.get("SPARKGATE_PASSWORD") and stdin_is_tty():
        # SPARKGATE_USER alone: ask for the password, unless a stored token covers the server.
        try:
            stored = credentials.load(server)
        except CredentialsError as exc:
            fail(str(exc))
        if stored is None:
            opts.password = opts.password or ask_password(opts.user)
            return {"user": opts.user, "password": opts.password}
    return {}


def unauthenticated_hint(server: str) -> str:
    return (
        f"Log in with `sparkgate login --server {server}`, or pass --token / --user "
        "(SPARKGATE_TOKEN, SPARKGATE_USER and SPARKGATE_PASSWORD)."
    )


def make_client(server: str | None = None) -> Client:
    """A client for the command's server (or ``server``) with its credentials (see
    ``client_credentials``)."""
    server = server or connection.server
    try:
        return Client(server, agent=CLI_AGENT, **client_credentials(server))
    except CredentialsError as exc:
        fail(str(exc))


def describe_client_error(exc: ClientError, server: str) -> str:
    if exc.status == 401:
        message = str(exc).rstrip()
        return f"{message}{'' if message.endswith('.') else '.'} {unauthenticated_hint(server)}"
    return str(exc)


@contextmanager
def client(server: str | None = None) -> Iterator[Client]:
    """A client for the command's server (or ``server``) with its credentials, whose errors
    end the command with one clear line and a non-zero exit."""
    server = server or connection.server
    try:
        with make_client(server) as c:
            yield c
    except ClientError as exc:
        fail(describe_client_error(exc, server))


Item = TypeVar("Item")


def print_json(value: Any) -> None:
    """``value`` as JSON; answers (models, in lists and dicts too) as the server sent them."""
    found = to_jsonable_python(value, by_alias=True, fallback=str)
    typer.echo(json.dumps(found, indent=2))


def fetch_to_show(read: Callable[[Client], Item], as_json: bool) -> Item | None:
    """What ``read`` asks the server, for the command to show; None once ``--json`` printed
    it (as the server sent it), which leaves the command nothing more to do."""
    with client() as sg:
        answer = read(sg)
    if as_json:
        print_json(answer)
        return None
    return answer


def more_hint(page: BaseModel) -> None:
    """After a list's table, how to see the next page (on stderr; nothing on the last, nor
    for a list that is never paged)."""
    if isinstance(page, Paging) and page.next:
        err_console.print(f"more: --after {page.next}", highlight=False)


def show_page(
    page: BaseModel,
    items: Sequence[Item],
    table: Callable[[Sequence[Item]], RenderableType],
    as_json: bool,
) -> None:
    """A list answer: as JSON, or its ``items`` as a table and the next page's hint."""
    if as_json:
        print_json(page)
        return
    console.print(table(items))
    more_hint(page)


def print_field(name: str, value: object) -> None:
    """A ``name: value`` line of a record, the name bold, the value not highlighted (ids and
    times stay plain)."""
    console.print(f"[bold]{name}[/]: {value}", highlight=False)


def print_fields(record: BaseModel, keys: Iterable[str]) -> None:
    """``key: value`` lines of a record, in the given order."""
    for key in keys:
        print_field(key, getattr(record, key))
