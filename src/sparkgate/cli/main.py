"""The ``sparkgate`` command: ``server``, ``sql``, ``deploy``, ``queries``, ``sessions``,
``streams``, ``jobs``, ``engines``, ``stop``, ``login``, ``logout``, ``whoami``, ``tokens``,
``users``, ``audit``."""

from __future__ import annotations

import typer

from sparkgate.cli import auth, engines, jobs, queries, sessions, streams, users
from sparkgate.cli.audit import audit
from sparkgate.cli.common import TokenOption, UserOption, set_login
from sparkgate.cli.deploy import deploy
from sparkgate.cli.server import server
from sparkgate.cli.sql import sql

app = typer.Typer(
    help="sparkgate: a SQL gateway and job supervisor for Apache Spark.",
    no_args_is_help=True,
    pretty_exceptions_enable=False,
)


@app.callback()
def credentials_options(
    ctx: typer.Context, user: UserOption = None, token: TokenOption = None
) -> None:
    # Typed options beat the environment and the token ``sparkgate login`` stored. By name:
    # typer has its own copy of click, whose ParameterSource is not click's.
    def typed(name: str) -> bool:
        source = ctx.get_parameter_source(name)
        return source is not None and source.name == "COMMANDLINE"

    set_login(user, token, user_typed=typed("user"), token_typed=typed("token"))


app.command()(server)
app.command()(sql)
app.command()(deploy)
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


def main() -> None:
    app()


if __name__ == "__main__":
    main()
