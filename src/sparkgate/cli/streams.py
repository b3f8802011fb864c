"""``sparkgate streams list|show|create|stop|start|delete``: durable stream jobs."""

from __future__ import annotations

import sys
import time
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.table import Table

from sparkgate.cli.common import (
    JsonOption,
    ServerOption,
    client,
    console,
    err_console,
    fail,
    print_json,
)
from sparkgate.cli.render import cell, describe_error
from sparkgate.client import DEFAULT_SERVER, Client

app = typer.Typer(
    help="Stream jobs: list, show, create, stop, start, delete.", no_args_is_help=True
)

WaitOption = Annotated[
    bool, typer.Option("--wait/--no-wait", help="Wait until it gets there, showing its state.")
]
TimeoutOption = Annotated[float, typer.Option(help="Give up waiting after this many seconds.")]


@app.command("list")
def list_streams(
    server: ServerOption = DEFAULT_SERVER,
    state: Annotated[list[str] | None, typer.Option(help="Only jobs in this state.")] = None,
    as_json: JsonOption = False,
) -> None:
    """Stream jobs by name, with their queries' states."""
    with client(server) as sg:
        page = sg.streams(state=state)
    if as_json:
        print_json(page)
        return
    table = Table(header_style="bold")
    for name in ("name", "state", "queries", "restarts", "running since", "last error"):
        table.add_column(name, overflow="fold")
    for job in page["streams"]:
        queries = ", ".join(f"{q['name']} {q['state']}" for q in job["queries"]) or "-"
        table.add_row(
            job["name"],
            job["state"],
            queries,
            str(job["restarts"]),
            job["running_since"] or "",
            _short_error(job["last_error"]),
        )
    console.print(table)


@app.command("show")
def show_stream(
    name: str, server: ServerOption = DEFAULT_SERVER, as_json: JsonOption = False
) -> None:
    """One stream job: state, restarts, next restart, last error, and its queries' progress."""
    with client(server) as sg:
        job = sg.stream(name)
    if as_json:
        print_json(job)
        return
    for key in ("name", "state", "revision", "session_id", "restarts", "next_restart_at"):
        if job[key] is not None:
            console.print(f"[bold]{key}[/]: {job[key]}", highlight=False)
    if job["last_error"]:
        console.print(f"[bold]last error[/]: {describe_error(job['last_error'])}", highlight=False)
    table = Table(header_style="bold", title="queries")
    columns = ("name", "state", "sink", "restarts", "next restart", "batch", "rows/s", "last error")
    for column in columns:
        table.add_column(column, overflow="fold")
    for query in job["queries"]:
        progress = query["last_progress"] or {}
        rate = progress.get("processed_rows_per_second")
        table.add_row(
            query["name"],
            query["state"],
            cell(query["sink"]),
            str(query["restarts"]),
            query["next_restart_at"] or "",
            cell(progress.get("batch_id")),
            f"{rate:.1f}" if isinstance(rate, (int, float)) else "",
            _short_error(query["last_error"]),
        )
    console.print(table)


@app.command("create")
def create_stream(
    name: str,
    script: Annotated[str, typer.Argument(help="A file with the job's SQL, or - for stdin.")],
    server: ServerOption = DEFAULT_SERVER,
    conf: Annotated[
        list[str] | None, typer.Option(help="Spark conf of the job's session, KEY=VALUE.")
    ] = None,
    checkpoint_root: Annotated[
        str | None, typer.Option(help="Where its queries keep their checkpoints.")
    ] = None,
    as_json: JsonOption = False,
) -> None:
    """Create a stream job from a script of CREATE STREAM, views and SAVE STREAM statements.

    Example: sparkgate streams create clicks clicks.sql
    """
    sql = sys.stdin.read() if script == "-" else _read(script)
    settings: dict[str, str] = {}
    for entry in conf or []:
        key, sep, value = entry.partition("=")
        if not sep:
            fail(f"--conf {entry}: expected KEY=VALUE")
        settings[key.strip()] = value.strip()
    with client(server) as sg:
        job = sg.create_stream(name, sql, conf=settings, checkpoint_root=checkpoint_root)
    if as_json:
        print_json(job)
    else:
        console.print(f"stream job {job['name']}: {job['state']}")


@app.command("stop")
def stop_stream(
    name: str,
    server: ServerOption = DEFAULT_SERVER,
    wait: WaitOption = True,
    timeout: TimeoutOption = 300,
) -> None:
    """Stop a job at a micro-batch boundary (its checkpoints stay consistent)."""
    with client(server) as sg:
        job = sg.stop_stream(name)
        if wait:
            job = _wait(sg, name, {"stopped", "failed"}, timeout)
    console.print(f"stream job {name}: {job['state']}")


@app.command("start")
def start_stream(
    name: str,
    server: ServerOption = DEFAULT_SERVER,
    wait: WaitOption = False,
    timeout: TimeoutOption = 300,
) -> None:
    """Start a stopped or failed job again; its queries resume from their checkpoints."""
    with client(server) as sg:
        job = sg.start_stream(name)
        if wait:
            job = _wait(sg, name, {"running", "failed", "stopped"}, timeout)
    console.print(f"stream job {name}: {job['state']}")
    if job["state"] == "failed":
        fail(describe_error(job["last_error"]))


@app.command("delete")
def delete_stream(
    name: str,
    server: ServerOption = DEFAULT_SERVER,
    stop: Annotated[bool, typer.Option("--stop", help="Stop it first if it runs.")] = False,
    keep_checkpoints: Annotated[
        bool, typer.Option("--keep-checkpoints", help="Keep its checkpoint directories.")
    ] = False,
    timeout: TimeoutOption = 300,
) -> None:
    """Delete a stopped or failed job (with --stop, stop it first)."""
    with client(server) as sg:
        if stop and sg.stream(name)["state"] not in ("stopped", "failed"):
            sg.stop_stream(name)
            _wait(sg, name, {"stopped", "failed"}, timeout)
        sg.delete_stream(name, keep_checkpoints=keep_checkpoints)
    console.print(f"stream job {name}: deleted")


def _wait(sg: Client, name: str, states: set[str], timeout: float) -> dict[str, Any]:
    deadline = time.monotonic() + timeout
    job = sg.stream(name)
    with err_console.status(f"stream job {name}: {job['state']}") as status:
        while job["state"] not in states:
            if time.monotonic() > deadline:
                fail(f"stream job {name} is still {job['state']} after {timeout:.0f}s")
            time.sleep(0.5)
            job = sg.stream(name)
            status.update(f"stream job {name}: {job['state']}")
    return job


def _read(path: str) -> str:
    try:
        return Path(path).read_text()
    except OSError as exc:
        fail(f"cannot read {path}: {exc.strerror}")


def _short_error(error: dict[str, Any] | None) -> str:
    if not error:
        return ""
    text = describe_error(error).splitlines()[0]
    return text if len(text) <= 80 else text[:77] + "..."
