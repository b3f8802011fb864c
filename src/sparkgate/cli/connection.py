"""The connection options, ``--server``, ``--user`` and ``--token``: parsed here and only here.

They are global options, typed before the command (``sparkgate --server URL sql ...``), after it
(``sparkgate sql --server URL ...``, ``sparkgate sessions list --server URL``), or set in the
environment (``SPARKGATE_SERVER``, ``SPARKGATE_USER``, ``SPARKGATE_TOKEN``). A typed option
beats the environment and the token ``sparkgate login`` stored; typed twice, the one after the
command wins. Commands read the outcome, ``connection``, and declare none of them: ``Sparkgate``,
the root command group, adds them to every command that talks to a server, except where a
command has an option of that name of its own (``sparkgate audit --user`` filters events: log in
as someone with ``sparkgate --user carol audit --user bob``).
"""

from __future__ import annotations

from typing import Annotated, Any
from urllib.parse import urlsplit

import typer
from typer.core import TyperCommand, TyperGroup

from sparkgate.cli.common import connection, fail
from sparkgate.client import DEFAULT_SERVER
from sparkgate.credentials import node_urls

PANEL = "Connection"
SERVER_HELP = "The sparkgate server to talk to (several nodes: their URLs, comma-separated)."
USER_HELP = "Log in as this user (password from SPARKGATE_PASSWORD, or asked for)."
TOKEN_HELP = "A personal access token (sgp_...) or a JWT."

# Commands that talk to no server: the options are not theirs.
LOCAL_COMMANDS = frozenset({"server", "stop", "users"})


def checked_server(value: str) -> str:
    """``value`` if each of its comma-separated nodes is an http(s) URL with a host; else a
    usage error that quotes the bad part."""
    urls = node_urls(value)
    if not urls:
        raise typer.BadParameter("no server URL given; expected http(s)://host:port.")
    for url in urls:
        try:
            parts = urlsplit(url)
            parts.port  # noqa: B018 -- raises ValueError for a port that is no number
        except ValueError:
            parts = None
        if parts is None or parts.scheme not in {"http", "https"} or not parts.hostname:
            raise typer.BadParameter(
                f"{url!r} is not a server URL; expected http(s)://host:port "
                "(several nodes: comma-separated)."
            )
    return value


def _set_user(user: str | None, *, typed: bool) -> None:
    if typed and connection.token_typed:
        fail("pass --user or --token, not both.")
    connection.user, connection.user_typed, connection.password = user, typed, None


def _set_token(token: str | None, *, typed: bool) -> None:
    if typed and connection.user_typed:
        fail("pass --user or --token, not both.")
    connection.token, connection.token_typed = token, typed


def before_command(
    ctx: typer.Context,
    server: Annotated[
        str,
        typer.Option(
            "--server", envvar="SPARKGATE_SERVER", help=SERVER_HELP, rich_help_panel=PANEL
        ),
    ] = DEFAULT_SERVER,
    user: Annotated[
        str | None,
        typer.Option("--user", envvar="SPARKGATE_USER", help=USER_HELP, rich_help_panel=PANEL),
    ] = None,
    token: Annotated[
        str | None,
        typer.Option("--token", envvar="SPARKGATE_TOKEN", help=TOKEN_HELP, rich_help_panel=PANEL),
    ] = None,
) -> None:
    """The root command's callback: the options before the command, and the environment."""

    # By name: typer has its own copy of click, whose ParameterSource is not click's.
    def typed(name: str) -> bool:
        source = ctx.get_parameter_source(name)
        return source is not None and source.name == "COMMANDLINE"

    # A bad URL from the environment is as much an error as a typed one (say which it was),
    # but only for a command that would use it.
    try:
        local = ctx.invoked_subcommand in LOCAL_COMMANDS
        connection.server = server if local else checked_server(server)
    except typer.BadParameter as exc:
        where = "--server" if typed("server") else "SPARKGATE_SERVER"
        raise typer.BadParameter(f"{where}: {exc.message}") from None
    connection.user_typed = connection.token_typed = False
    _set_user(user, typed=typed("user"))
    _set_token(token, typed=typed("token"))


def _server_after(value: str | None) -> None:
    if value is not None:
        connection.server = checked_server(value)


def _user_after(value: str | None) -> None:
    if value is not None:
        _set_user(value, typed=True)


def _token_after(value: str | None) -> None:
    if value is not None:
        _set_token(value, typed=True)


def _after_command(
    server: Annotated[
        str | None,
        typer.Option("--server", callback=_server_after, help=SERVER_HELP, rich_help_panel=PANEL),
    ] = None,
    user: Annotated[
        str | None,
        typer.Option("--user", callback=_user_after, help=USER_HELP, rich_help_panel=PANEL),
    ] = None,
    token: Annotated[
        str | None,
        typer.Option("--token", callback=_token_after, help=TOKEN_HELP, rich_help_panel=PANEL),
    ] = None,
) -> None:
    """The same options after the command, typed only (the environment was read before it):
    a value typed there is kept by its callback, and never reaches the command."""


def _after_options() -> list[Any]:
    # Built by typer from ``_after_command``'s signature, as any command's options are.
    holder = typer.Typer()
    holder.command()(_after_command)
    params = list(typer.main.get_command(holder).params)
    for param in params:
        param.expose_value = False
    return params


def _add_options(command: Any) -> None:
    if isinstance(command, TyperGroup):
        for sub in command.commands.values():
            _add_options(sub)
        return
    assert isinstance(command, TyperCommand), command
    # By option and by name: click keeps parsed values by name, so an argument of the
    # command named ``user`` would otherwise be read as the --user option too.
    taken = {opt for param in command.params for opt in getattr(param, "opts", ())}
    names = {param.name for param in command.params}
    command.params.extend(
        p for p in _after_options() if not set(p.opts) & taken and p.name not in names
    )


class Sparkgate(TyperGroup):
    """The ``sparkgate`` command group: adds the connection options to every command that
    talks to a server, so that they are accepted after the command too."""

    def __init__(self, **attrs: Any) -> None:
        super().__init__(**attrs)
        for name, command in self.commands.items():
            if name not in LOCAL_COMMANDS:
                _add_options(command)
