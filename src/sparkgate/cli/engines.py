"""``sparkgate engines list|stop`` and ``sparkgate stop``."""

from __future__ import annotations

import time
from typing import Annotated

import typer

from sparkgate.cli.common import JsonOption, client, console, fail, fetch_to_show
from sparkgate.cli.render import table
from sparkgate.errors import SparkgateError
from sparkgate.schemas.errors import RecordedError

app = typer.Typer(help="Engines (Spark drivers): list, logs, stop.", no_args_is_help=True)


@app.command("list")
def list_engines(
    all_: Annotated[bool, typer.Option("--all", help="Include ended engines.")] = False,
    as_json: JsonOption = False,
) -> None:
    """The engines: kind, state, the session a dedicated one serves, process, heartbeat."""
    engines = fetch_to_show(lambda sg: sg.engines(all=all_).engines, as_json)
    if engines is None:
        return
    rows = (
        (
            str(e.id),
            e.kind,
            _whose(e.share_level, e.runs_for),
            e.state,
            str(e.session_id or ""),
            e.pod or e.host or "",
            str(e.pid or ""),
            e.heartbeat_at or "",
            _error(e.error),
            e.log_path or "",
        )
        for e in engines
    )
    # On Kubernetes the host column names the driver pod (namespace/name) and log says k8s://.
    columns = (
        "id",
        "kind",
        "runs for",
        "state",
        "session",
        "host/pod",
        "pid",
        "heartbeat",
        "error",
        "log",
    )
    console.print(table(columns, rows, fold=False))


def _whose(share_level: str | None, runs_for: str | None) -> str:
    """Whose work an engine runs (admins are told; others see nothing)."""
    if share_level is None:
        return ""
    if share_level == "server":
        return "shared"
    return f"{share_level} {runs_for}" if runs_for else share_level


def _error(error: RecordedError | None) -> str:
    """An ended engine's error code; after NO_EXECUTORS, the attempt and the next one's time."""
    if not error:
        return ""
    text = error.code
    next_attempt = error.param("next_attempt_at")
    if next_attempt is not None:
        when = time.strftime("%H:%M:%S UTC", time.gmtime(float(next_attempt)))
        text += f" (attempt {error.param('attempt')}, next {when})"
    return text


@app.command("logs")
def engine_logs(
    engine_id: int,
    tail: Annotated[int | None, typer.Option(help="Only the last N lines.", min=1)] = None,
) -> None:
    """An engine driver's output: its log file, or on Kubernetes its pod's log (admins)."""
    with client() as sg:
        text = sg.engine_log(engine_id, tail=tail).log
    typer.echo(text, nl=not text.endswith("\n"))


@app.command("stop")
def stop_engine(engine_id: int) -> None:
    """Stop an engine gracefully (its running statements finish; its sessions end)."""
    with client() as sg:
        engine = sg.stop_engine(engine_id)
    console.print(f"engine {engine_id}: {engine.state}")


def stop(
    timeout: Annotated[float, typer.Option(help="Seconds to wait before killing engines.")] = 60,
    force: Annotated[bool, typer.Option(help="Even if a server node seems to run.")] = False,
) -> None:
    """Stop the engines and the embedded metastore of this home ($SPARKGATE_HOME or
    ./.sparkgate), which outlive the server on purpose. Stop the server first."""
    from sparkgate.launcher.shutdown import stop_home
    from sparkgate.settings import Settings

    try:
        report = stop_home(Settings(), timeout=timeout, force=force)
    except SparkgateError as exc:
        fail(str(exc))
    console.print(
        f"engines stopped: {len(report.stopped)}, killed: {len(report.terminated)}; "
        f"metastore {'stopped' if report.metastore else 'was not running'}"
    )
