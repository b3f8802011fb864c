"""``sparkgate jobs list|show|history|run``: deployed jobs, their versions and decisions."""

from __future__ import annotations

from collections.abc import Sequence
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
    print_fields,
    print_json,
    show_page,
)
from sparkgate.cli.render import describe_error, short_error, table, versions_text
from sparkgate.cli.waiting import poll
from sparkgate.schemas.jobs import Decision, Job, JobRun

app = typer.Typer(help="Deployed jobs: list, show, history, run.", no_args_is_help=True)


@app.command("list")
def list_jobs(
    removed: Annotated[bool, typer.Option("--removed", help="Pruned jobs too.")] = False,
    as_json: JsonOption = False,
) -> None:
    """Jobs by name, with their version and state."""
    with client() as sg:
        page = sg.jobs(removed=removed)
        show_page(page, page.jobs, jobs_table, as_json)


def jobs_table(jobs: Sequence[Job]) -> Table:
    rows = (
        (
            job.name,
            job.mode,
            str(job.version),
            _state(job),
            job.target_table or "",
            short_error(job.last_error or (job.last_run.error if job.last_run else None)),
        )
        for job in jobs
    )
    return table(("name", "mode", "version", "state", "target", "last error"), rows)


@app.command("show")
def show_job(name: str, as_json: JsonOption = False) -> None:
    """One job: version, state, query id, its latest decisions and runs."""
    job = fetch_to_show(lambda sg: sg.job(name), as_json)
    if job is None:
        return
    print_fields(job, ("name", "mode", "version", "query_id", "query_created_at", "target_table"))
    print_field("state", _state(job))
    if job.description:
        print_field("description", job.description)
    if job.last_error:
        print_field("last error", describe_error(job.last_error))
    stream = job.stream
    if stream is not None:
        for query in stream.queries:
            console.print(
                f"[bold]query[/] {query.name}: {query.state}, {query.restarts} "
                f"restarts, checkpoint {query.checkpoint}",
                highlight=False,
            )
    if job.runs:
        console.print(runs_table(job.runs))
    console.print(decisions_table(job.decisions, title="latest decisions"))


@app.command("history")
def job_history(name: str, as_json: JsonOption = False) -> None:
    """Every version of a job, and every deploy decision about it."""
    history = fetch_to_show(lambda sg: sg.job_history(name), as_json)
    if history is None:
        return
    rows = (
        (
            str(version.version),
            version.query_id,
            version.created_at,
            str(version.manifest.get("description", "")),
        )
        for version in history.versions
    )
    console.print(table(("version", "query id", "created", "description"), rows, title="versions"))
    console.print(decisions_table(history.decisions, title="decisions"))


@app.command("run")
def run_job(
    name: str,
    wait: Annotated[
        bool, typer.Option("--wait/--no-wait", help="Wait for the run to end, showing its state.")
    ] = True,
    timeout: Annotated[float, typer.Option(help="Give up waiting after this many seconds.")] = 3600,
    as_json: JsonOption = False,
) -> None:
    """Run a batch job: its sources, then an atomic replace of its target table. Exits
    non-zero if the run fails.

    Example: sparkgate jobs run daily_totals
    """
    with client() as sg:
        run = sg.run_job(name)
        if wait:
            run_id = run.id
            still = f"run {run_id} of {name} still running after {timeout:.0f}s"
            with err_console.status(f"job {name}: run {run_id} {run.state}") as status:
                run = poll(
                    run,
                    lambda: sg.job_run(name, run_id),
                    done=lambda r: r.state != "running",
                    show=lambda r: status.update(
                        f"job {name}: run {run_id} {r.state} "
                        f"(step {r.steps_submitted} of {r.steps})"
                    ),
                    timeout=timeout,
                    timed_out=lambda _: still,
                )
    if as_json:
        print_json(run)
    else:
        console.print(f"job {name}: run {run.id} {run.state}", highlight=False)
    if run.state in ("failed", "cancelled"):
        fail(describe_error(run.error))


def decisions_table(decisions: Sequence[Decision], *, title: str) -> Table:
    rows = (
        (
            str(d.deployment_id),
            versions_text(d),
            d.action,
            d.reason,
            d.outcome + (f": {short_error(d.error)}" if d.error else ""),
            d.finished_at or d.started_at or "",
        )
        for d in decisions
    )
    columns = ("deployment", "version", "action", "reason", "outcome", "when")
    return table(columns, rows, title=title)


def runs_table(runs: Sequence[JobRun]) -> Table:
    rows = (
        (
            str(run.id),
            str(run.version),
            run.state,
            str(run.session_id),
            run.created_at or "",
            run.finished_at or "",
            short_error(run.error),
        )
        for run in runs
    )
    columns = ("run", "version", "state", "session", "created", "finished", "error")
    return table(columns, rows, title="runs")


def _state(job: Job) -> str:
    if job.state == "batch":
        last = job.last_run
        return f"batch, last run {last.state}" if last else "batch, never run"
    return str(job.state)
