"""``sparkgate streams list|show|create|stop|start|delete``: durable stream jobs."""

from __future__ import annotations

import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Annotated

import typer
from rich.table import Table

from sparkgate.cli.common import (
    JsonOption,
    client,
    console,
    err_console,
    fail,
    fetch_to_show,
    print_field,
    print_json,
    show_page,
)
from sparkgate.cli.render import cell, describe_error, short_error, table
from sparkgate.cli.waiting import poll
from sparkgate.client import Client
from sparkgate.schemas.streams import StreamJobBrief, StreamJobDetail, StreamQuery

app = typer.Typer(
    help="Stream jobs: list, show, create, stop, start, delete.", no_args_is_help=True
)

WaitOption = Annotated[
    bool, typer.Option("--wait/--no-wait", help="Wait until it gets there, showing its state.")
]
TimeoutOption = Annotated[float, typer.Option(help="Give up waiting after this many seconds.")]


@app.command("list")
def list_streams(
    state: Annotated[list[str] | None, typer.Option(help="Only jobs in this state.")] = None,
    as_json: JsonOption = False,
) -> None:
    """Stream jobs by name, with their queries' states."""
    with client() as sg:
        page = sg.streams(state=state)
        show_page(page, page.streams, streams_table, as_json)


def streams_table(jobs: Sequence[StreamJobBrief]) -> Table:
    rows = (
        (
            job.name,
            job.state,
            ", ".join(f"{q.name} {q.state}" for q in job.queries) or "-",
            str(job.restarts),
            job.running_since or "",
            short_error(job.last_error),
        )
        for job in jobs
    )
    columns = ("name", "state", "queries", "restarts", "running since", "last error")
    return table(columns, rows)


@app.command("show")
def show_stream(name: str, as_json: JsonOption = False) -> None:
    """One stream job: state, restarts, next restart, last error, and its queries' progress."""
    job = fetch_to_show(lambda sg: sg.stream(name), as_json)
    if job is None:
        return
    for key in ("name", "state", "revision", "session_id", "restarts", "next_restart_at"):
        value = getattr(job, key)
        if value is not None:
            print_field(key, value)
    if job.last_error:
        print_field("last error", describe_error(job.last_error))
    columns = ("name", "state", "sink", "restarts", "next restart", "batch", "rows/s", "last error")
    console.print(table(columns, map(_query_row, job.queries), title="queries"))


def _query_row(query: StreamQuery) -> tuple[str, ...]:
    progress = query.last_progress or {}
    rate = progress.get("processed_rows_per_second")
    return (
        query.name,
        query.state,
        cell(query.sink),
        str(query.restarts),
        query.next_restart_at or "",
        cell(progress.get("batch_id")),
        f"{rate:.1f}" if isinstance(rate, (int, float)) else "",
        short_error(query.last_error),
    )


@app.command("create")
def create_stream(
    name: str,
    script: Annotated[str, typer.Argument(help="A file with the job's SQL, or - for stdin.")],
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
    with client() as sg:
        job = sg.create_stream(name, sql, conf=settings, checkpoint_root=checkpoint_root)
    if as_json:
        print_json(job)
    else:
        console.print(f"stream job {job.name}: {job.state}")


@app.command("stop")
def stop_stream(
    name: str,
    wait: WaitOption = True,
    timeout: TimeoutOption = 300,
) -> None:
    """Stop a job at a micro-batch boundary (its checkpoints stay consistent)."""
    _change(name, Client.stop_stream, {"stopped", "failed"} if wait else None, timeout)


@app.command("start")
def start_stream(
    name: str,
    wait: WaitOption = False,
    timeout: TimeoutOption = 300,
) -> None:
    """Start a stopped or failed job again; its queries resume from their checkpoints."""
    until = {"running", "failed", "stopped"} if wait else None
    job = _change(name, Client.start_stream, until, timeout)
    if job.state == "failed":
        fail(describe_error(job.last_error))


@app.command("delete")
def delete_stream(
    name: str,
    stop: Annotated[bool, typer.Option("--stop", help="Stop it first if it runs.")] = False,
    keep_checkpoints: Annotated[
        bool, typer.Option("--keep-checkpoints", help="Keep its checkpoint directories.")
    ] = False,
    timeout: TimeoutOption = 300,
) -> None:
    """Delete a stopped or failed job (with --stop, stop it first)."""
    with client() as sg:
        if stop and sg.stream(name).state not in ("stopped", "failed"):
            sg.stop_stream(name)
            _wait(sg, name, {"stopped", "failed"}, timeout)
        sg.delete_stream(name, keep_checkpoints=keep_checkpoints)
    console.print(f"stream job {name}: deleted")


def _change(
    name: str,
    change: Callable[[Client, str], StreamJobDetail],
    until: set[str] | None,
    timeout: float,
) -> StreamJobDetail:
    """Ask for a change of the job, wait (if ``until``) for one of those states, say where
    it got."""
    with client() as sg:
        job = change(sg, name)
        if until:
            job = _wait(sg, name, until, timeout)
    console.print(f"stream job {name}: {job.state}")
    return job


def _wait(sg: Client, name: str, states: set[str], timeout: float) -> StreamJobDetail:
    job = sg.stream(name)
    with err_console.status(f"stream job {name}: {job.state}") as status:
        return poll(
            job,
            lambda: sg.stream(name),
            done=lambda j: j.state in states,
            show=lambda j: status.update(f"stream job {name}: {j.state}"),
            timeout=timeout,
            timed_out=lambda j: f"stream job {name} is still {j.state} after {timeout:.0f}s",
        )


def _read(path: str) -> str:
    try:
        return Path(path).read_text()
    except OSError as exc:
        fail(f"cannot read {path}: {exc.strerror}")
