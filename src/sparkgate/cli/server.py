"""``sparkgate server``: run a server node."""

from __future__ import annotations

import ipaddress
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer

from sparkgate.cli.common import err_console, fail
from sparkgate.errors import SparkgateError

if TYPE_CHECKING:
    from sparkgate.settings import Settings


def is_loopback(host: str) -> bool:
    name = host.strip().strip("[]").lower()
    if name == "localhost" or name.endswith(".localhost"):
        return True
    try:
        return ipaddress.ip_address(name).is_loopback
    except ValueError:
        return False


def listen_problem(settings: Settings) -> str | None:
    """Why this server must not start as configured (None: it may): the pure check run before
    anything starts."""
    if not settings.auth_methods and not settings.insecure and not is_loopback(settings.host):
        return (
            f"refusing to listen on {settings.host} with SPARKGATE_AUTH={settings.auth}: anyone "
            "who reaches the port could run code on the Spark drivers. Set SPARKGATE_AUTH "
            "(see docs/how-to/authentication.md) or pass --insecure."
        )
    certfile, keyfile = settings.ssl_certfile, settings.ssl_keyfile
    if (certfile is None) != (keyfile is None):
        given, missing = ("certificate", "key") if keyfile is None else ("key", "certificate")
        return (
            f"TLS needs both a certificate and its key: the {given} is set but not the "
            f"{missing} (--ssl-certfile and --ssl-keyfile, or SPARKGATE_SSL_CERTFILE and "
            "SPARKGATE_SSL_KEYFILE)."
        )
    if (
        settings.auth_methods
        and certfile is None
        and not settings.insecure
        and not is_loopback(settings.host)
    ):
        # The doors whose clients send credentials in every call or connection, so that in
        # plain text anyone on the path reads them: Spark's client sends its token in every
        # call; SASL PLAIN sends the password (or token) as it is, once per connection. (The
        # HTTP door only warns: browsers and HTTP clients sit behind TLS proxies far more
        # often than gRPC and Thrift clients do.)
        for port, door, sent, off in (
            (
                settings.connect_port,
                "Spark Connect",
                "tokens",
                "the Connect door off with --connect-port 0",
            ),
            (
                settings.thrift_port,
                "HiveServer2's binary port",
                "passwords and tokens",
                "the port off with --thrift-port 0",
            ),
        ):
            if port:
                return (
                    f"refusing to serve {door} in plain text on {settings.host}: {sent} "
                    "would cross the network readable. Pass --ssl-certfile/--ssl-keyfile, "
                    f"turn {off}, or pass --insecure."
                )
    for option, path in (("--ssl-certfile", certfile), ("--ssl-keyfile", keyfile)):
        if path is not None and not path.expanduser().is_file():
            return f"{option}: no such file {path}."
    return None


def server(
    host: Annotated[
        str | None, typer.Option(help="Address to listen on (default: 127.0.0.1).")
    ] = None,
    port: Annotated[int | None, typer.Option(help="Port to listen on (default: 8998).")] = None,
    thrift_port: Annotated[
        int | None,
        typer.Option(
            "--thrift-port",
            help="HiveServer2 binary (JDBC/ODBC) port (default: 10009; 0 turns it off).",
        ),
    ] = None,
    connect_port: Annotated[
        int | None,
        typer.Option(
            "--connect-port",
            help="Spark Connect (sc://) port (default: 15002; 0 turns it off).",
        ),
    ] = None,
    insecure: Annotated[
        bool,
        typer.Option(
            "--insecure",
            help="Allow SPARKGATE_AUTH=none, or Spark Connect or the HiveServer2 binary port "
            "without TLS, on an address other than loopback.",
        ),
    ] = False,
    ssl_certfile: Annotated[
        Path | None, typer.Option("--ssl-certfile", help="Serve HTTPS with this certificate.")
    ] = None,
    ssl_keyfile: Annotated[
        Path | None, typer.Option("--ssl-keyfile", help="The certificate's private key.")
    ] = None,
) -> None:
    """Start a server node (embedded defaults: SQLite store and Spark local mode under
    ./.sparkgate, or $SPARKGATE_HOME). Engines it starts keep running if it stops."""
    # Imported here: every other command (sparkgate sql ...) starts without pydantic-settings.
    from sparkgate import logs
    from sparkgate.settings import Settings

    settings = Settings()
    options: dict[str, Any] = {
        "host": host,
        "port": port,
        "thrift_port": thrift_port,
        "connect_port": connect_port,
        "insecure": insecure or None,
        "ssl_certfile": ssl_certfile,
        "ssl_keyfile": ssl_keyfile,
    }
    settings = settings.model_copy(update={k: v for k, v in options.items() if v is not None})
    problem = listen_problem(settings)
    if problem is not None:
        fail(problem)
    if settings.auth_methods and settings.ssl_certfile is None and not is_loopback(settings.host):
        err_console.print(
            f"[yellow]warning:[/] serving plain HTTP on {settings.host}: passwords and tokens "
            "cross the network readable; pass --ssl-certfile/--ssl-keyfile or put TLS in front.",
            highlight=False,
            soft_wrap=True,
        )

    from sparkgate.catalog.metastore import java_executable
    from sparkgate.http.serving import serve
    from sparkgate.server import create_app

    logs.configure(settings, process="server")
    tls: dict[str, Any] = {}
    if settings.ssl_certfile is not None and settings.ssl_keyfile is not None:
        tls = {
            "ssl_certfile": str(settings.ssl_certfile.expanduser()),
            "ssl_keyfile": str(settings.ssl_keyfile.expanduser()),
        }
    try:
        java_executable()
        app = create_app(settings)
        serve(
            app,
            host=settings.host,
            port=settings.port,
            http="httptools",  # a dependency: the C parser (h11's pure Python costs more CPU)
            log_level="info",
            log_config=None,  # uvicorn's loggers go through ours (logs.configure): one format
            timeout_keep_alive=int(settings.http_keep_alive),
            **tls,
        )
    except SparkgateError as exc:
        fail(str(exc))
