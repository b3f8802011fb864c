"""``sparkgate users add|remove|list``: edit the password file (``auth=password``) in place.

The server re-reads the file when it changes, so no restart is needed.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Annotated

import typer

from sparkgate.cli.common import JsonOption, console, fail, print_json, stdin_is_tty
from sparkgate.errors import SparkgateError

app = typer.Typer(help="Users of the password file: add, remove, list.", no_args_is_help=True)

PasswordFileOption = Annotated[
    Path | None,
    typer.Option(
        "--password-file",
        envvar="SPARKGATE_AUTH_PASSWORD_FILE",
        help="The user:bcrypt-hash file the server reads.",
    ),
]


def password_file(path: Path | None) -> Path:
    if path is not None:
        return path
    from sparkgate.settings import Settings

    configured = Settings().auth_password_file
    if configured is None:
        fail("which password file? pass --password-file or set SPARKGATE_AUTH_PASSWORD_FILE.")
    return configured


@app.command("add")
def add_user(
    name: str,
    file: PasswordFileOption = None,
    password_stdin: Annotated[
        bool, typer.Option("--password-stdin", help="Read the password from stdin's first line.")
    ] = False,
) -> None:
    """Add a user, or set the password of one (asked twice, hidden).

    Example: echo "$PW" | sparkgate users add alice --password-stdin
    """
    from sparkgate.auth.passwords import PasswordFile

    path = password_file(file)
    if password_stdin:
        password = sys.stdin.readline().rstrip("\r\n")
    elif stdin_is_tty():
        password = str(
            typer.prompt(f"Password for {name}", hide_input=True, confirmation_prompt=True)
        )
    else:
        fail("no terminal to ask for the password on: pass --password-stdin.")
    if not password:
        fail("refusing an empty password.")
    try:
        passwords = PasswordFile(path)
        existed = name in passwords.users()
        passwords.set(name, password)
    except SparkgateError as exc:
        fail(str(exc))
    except OSError as exc:
        fail(f"cannot write {path}: {exc.strerror or exc}")
    console.print(
        f"{'password changed for' if existed else 'added'} {name} in {path}", highlight=False
    )


@app.command("remove")
def remove_user(name: str, file: PasswordFileOption = None) -> None:
    """Remove a user. Tokens they created are not touched here: an admin lists them with
    `sparkgate tokens list --owner NAME` and revokes them with `sparkgate tokens revoke`."""
    from sparkgate.auth.passwords import PasswordFile

    path = password_file(file)
    try:
        removed = PasswordFile(path).remove(name)
    except SparkgateError as exc:
        fail(str(exc))
    except OSError as exc:
        fail(f"cannot write {path}: {exc.strerror or exc}")
    if not removed:
        fail(f"no user {name!r} in {path}.")
    console.print(f"removed {name} from {path}", highlight=False, soft_wrap=True)


@app.command("list")
def list_users(file: PasswordFileOption = None, as_json: JsonOption = False) -> None:
    """The users' names (never their hashes)."""
    from sparkgate.auth.passwords import PasswordFile

    path = password_file(file)
    try:
        names = sorted(PasswordFile(path).users())
    except SparkgateError as exc:
        fail(str(exc))
    except OSError as exc:
        fail(f"cannot read {path}: {exc.strerror or exc}")
    if as_json:
        print_json(names)
    else:
        for n in names:
            typer.echo(n)
