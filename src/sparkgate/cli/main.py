"""The ``sparkgate`` command: ``server``, ``sql``, ``deploy``, ``queries``, ``sessions``,
``streams``, ``jobs``, ``engines``, ``stop``, ``login``, ``logout``, ``whoami``, ``tokens``,
``users``, ``audit``, ``usage``, ``access``, ``load``, ``tables``, ``saved``."""

from __future__ import annotations

import typer

from sparkgate.cli import (
    access,
    auth,
    engines,
    jobs,
    queries,
    saved,
    sessions,
    streams,
    tables,
    users,
)
from sparkgate.cli.audit import audit
from sparkgate.cli.connection import Sparkgate, before_command
from sparkgate.cli.deploy import deploy
from sparkgate.cli.load import load
from sparkgate.cli.server import server
from sparkgate.cli.sql import sql
from sparkgate.cli.usage import usage

app = typer.Typer(
    cls=Sparkgate,  # the connection options, before the command and after it
    help="sparkgate: a SQL gateway and job supervisor for Apache Spark.",
    no_args_is_help=True,
    pretty_exceptions_enable=False,
)
app.callback()(before_command)
app.command()(server)
app.command()(sql)
app.command()(deploy)
app.command()(load)
app.add_typer(queries.app, name="queries")
app.add_typer(sessions.app, name="sessions")
app.add_typer(streams.app, name="streams")
app.add_typer(jobs.app, name="jobs")
app.add_typer(engines.app, name="engines")
app.command()(engines.stop)
app.command()(auth.login)
app.command()(auth.logout)
app.command()(auth.whoami)
app.add_typer(auth.app, name="tokens")
app.add_typer(users.app, name="users")
app.command()(audit)
app.command()(usage)
app.add_typer(access.app, name="access")
app.add_typer(tables.app, name="tables")
app.add_typer(saved.app, name="saved")


def main() -> None:
    app()


if __name__ == "__main__":
    main()
