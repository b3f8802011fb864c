"""The ``sparkgate`` command: ``server``, ``sql``, ``deploy``, ``queries``, ``sessions``,
``streams``, ``jobs``, ``engines``, ``stop``."""

from __future__ import annotations

import typer

from sparkgate.cli import engines, jobs, queries, sessions, streams
from sparkgate.cli.deploy import deploy
from sparkgate.cli.server import server
from sparkgate.cli.sql import sql

app = typer.Typer(
    help="sparkgate: a SQL gateway and job supervisor for Apache Spark.",
    no_args_is_help=True,
    pretty_exceptions_enable=False,
)
app.command()(server)
app.command()(sql)
app.command()(deploy)
app.add_typer(queries.app, name="queries")
app.add_typer(sessions.app, name="sessions")
app.add_typer(streams.app, name="streams")
app.add_typer(jobs.app, name="jobs")
app.add_typer(engines.app, name="engines")
app.command()(engines.stop)


def main() -> None:
    app()


if __name__ == "__main__":
    main()
