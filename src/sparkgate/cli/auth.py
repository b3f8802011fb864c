"""``sparkgate login|logout|whoami`` and ``sparkgate tokens create|list|revoke``."""

from __future__ import annotations

import socket
import sys
from typing import Annotated

import typer

from sparkgate import credentials
from sparkgate.cli.common import (
    JsonOption,
    ask_password,
    client,
    connection,
    console,
    describe_client_error,
    err_console,
    fail,
    fetch_to_show,
    make_client,
    print_json,
    stdin_is_tty,
)
from sparkgate.cli.render import table
from sparkgate.client import Client, ClientError
from sparkgate.credentials import CredentialsError
from sparkgate.schemas.users import Whoami
from sparkgate.sql.durations import COMPACT_HELP, parse_duration

app = typer.Typer(help="Personal access tokens: create, list, revoke.", no_args_is_help=True)

NameOption = Annotated[str | None, typer.Option("--name", help="A name to tell the token by.")]
ExpiresOption = Annotated[
    str | None,
    typer.Option("--expires", help="Lifetime, e.g. 12h, 30d (default: never expires)."),
]


def expires_seconds(text: str | None) -> int | None:
    if text is None:
        return None
    try:
        seconds = parse_duration(text)
    except ValueError as exc:
        fail(f"--expires: {exc}")
    if seconds < 1:
        fail(f"--expires: {text!r} is under a second; write {COMPACT_HELP}")
    return round(seconds)


def describe(me: Whoami) -> str:
    groups = ", ".join(me.groups or []) or "none"
    admin = "yes" if me.admin else "no"
    return f"{me.user} (via {me.via}; groups: {groups}; admin: {admin})"


def login(
    name: NameOption = None,
    expires: ExpiresOption = None,
    password_stdin: Annotated[
        bool, typer.Option("--password-stdin", help="Read the password from stdin.")
    ] = False,
) -> None:
    """Log in with a user and password: create a personal access token and keep it (0600) for
    later commands to this server.

    Example: sparkgate login --user alice --expires 30d
    """
    server = connection.server
    expires_in = expires_seconds(expires)
    user = connection.user  # --user, or SPARKGATE_USER
    if not user:
        if not stdin_is_tty():
            fail("which user? pass --user (or set SPARKGATE_USER).")
        user = str(typer.prompt("User", err=True))
    if password_stdin:
        password = sys.stdin.readline().rstrip("\r\n")
        if not password:
            fail("--password-stdin: stdin held no password.")
    else:
        password = ask_password(user)
    token_name = name or f"sparkgate login on {socket.gethostname()}"
    try:
        previous = credentials.load(server)
        with Client(server, user=user, password=password) as sg:
            me = sg.whoami()
            created = sg.create_token(token_name, expires_in)
        where = credentials.save(server, me.user or user, created.token, created.id)
    except ClientError as exc:
        fail(str(exc))
    except CredentialsError as exc:
        fail(str(exc))
    if previous is not None and previous.token_id is not None:
        _revoke_quietly(server, previous)
    expiry = created.expires_at or "never"
    console.print(f"logged in to {server} as {describe(me)}", highlight=False, soft_wrap=True)
    console.print(
        f"token {created.id} ({token_name}, expires {expiry}) stored in {where}",
        highlight=False,
        soft_wrap=True,
    )


def logout() -> None:
    """Revoke the token `sparkgate login` stored for this server (if the server can be
    reached) and forget it."""
    server = connection.server
    try:
        stored = credentials.load(server)
    except CredentialsError as exc:
        fail(str(exc))
    if stored is None:
        console.print(f"not logged in to {server}", highlight=False, soft_wrap=True)
        return
    revoked = stored.token_id is None or _revoke_quietly(server, stored)
    credentials.forget(server)
    console.print(f"logged out of {server}", highlight=False, soft_wrap=True)
    if not revoked:
        err_console.print(
            f"[yellow]warning:[/] the token {stored.token_id} could not be revoked on the server; "
            f"it works until it expires unless revoked with `sparkgate tokens revoke "
            f"{stored.token_id}`.",
            highlight=False,
            soft_wrap=True,
        )


def _revoke_quietly(server: str, stored: credentials.StoredCredentials) -> bool:
    """Revoke a stored token with itself; whether it no longer works (revoked now, before,
    or expired)."""
    assert stored.token_id is not None
    try:
        with Client(server, token=stored.token) as sg:
            sg.revoke_token(stored.token_id)
    except ClientError as exc:
        return exc.status in {401, 404}
    return True


def whoami(as_json: JsonOption = False) -> None:
    """Who the server takes you for, and which credentials said so."""
    server = connection.server
    with client() as sg:
        me = sg.whoami()
        source = sg.auth_source
    if as_json:
        print_json(me)
        return
    console.print(describe(me), highlight=False, soft_wrap=True)
    if me.rights:
        console.print(f"rights: {', '.join(map(str, me.rights))}", highlight=False, soft_wrap=True)
    console.print(
        f"server: {server}; credentials: {source or 'none'}", highlight=False, soft_wrap=True
    )


@app.command("create")
def create_token(
    name: NameOption = None,
    expires: ExpiresOption = None,
    as_json: JsonOption = False,
) -> None:
    """Create a personal access token; its secret is printed once. Use it as SPARKGATE_TOKEN,
    --token, Authorization: Bearer, or as the password.

    Example: sparkgate tokens create --name ci --expires 90d
    """
    server = connection.server
    expires_in = expires_seconds(expires)
    sg = make_client(server)
    if sg.uses_personal_token:
        # A token cannot create tokens (a stolen one must not outlive its revocation).
        user = connection.user or sg.auth_user
        sg.close()
        if not user:
            fail(
                "tokens are created with a password or a JWT, not with another token: "
                "pass --user NAME (password from SPARKGATE_PASSWORD, or asked for)."
            )
        err_console.print(f"creating a token takes {user}'s password", highlight=False)
        sg = Client(server, user=user, password=ask_password(user))
    try:
        with sg:
            created = sg.create_token(name, expires_in)
    except ClientError as exc:
        fail(describe_client_error(exc, server))
    if as_json:
        print_json(created)
    else:
        typer.echo(created.token)
    err_console.print(
        f"token {created.id} ({created.name or 'unnamed'}, owner {created.owner}, "
        f"expires {created.expires_at or 'never'}). "
        "This is the only time the secret is shown: keep it now.",
        highlight=False,
        soft_wrap=True,
    )


@app.command("list")
def list_tokens(
    owner: Annotated[
        str | None, typer.Option("--owner", help="Another user's tokens (admins).")
    ] = None,
    as_json: JsonOption = False,
) -> None:
    """Your tokens (never their secrets)."""
    tokens = fetch_to_show(lambda sg: sg.tokens(owner).tokens, as_json)
    if tokens is None:
        return
    rows = (
        (
            str(t.id),
            t.name or "",
            t.prefix or "",
            t.owner or "",
            t.created_at or "",
            t.expires_at or "never",
            t.last_used_at or "",
            t.revoked_at or "",
        )
        for t in tokens
    )
    columns = ("id", "name", "prefix", "owner", "created", "expires", "last used", "revoked")
    console.print(table(columns, rows))


@app.command("revoke")
def revoke_token(token_id: str) -> None:
    """Revoke a token: it stops working at once."""
    server = connection.server
    with client() as sg:
        token = sg.revoke_token(token_id)
    console.print(
        f"token {token_id}: revoked at {token.revoked_at}", highlight=False, soft_wrap=True
    )
    try:
        stored = credentials.load(server)
        if stored is not None and stored.token_id == str(token_id):
            credentials.forget(server)
            console.print(
                f"it was your login token for {server}: logged out", highlight=False, soft_wrap=True
            )
    except CredentialsError:
        pass
