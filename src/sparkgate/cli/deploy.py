"""``sparkgate deploy PATH...``: make what runs match the job manifests."""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path
from typing import Annotated

import typer
from rich.live import Live
from rich.table import Table

from sparkgate.cli.common import (
    JsonOption,
    connection,
    console,
    describe_client_error,
    err_console,
    fail,
    make_client,
    print_json,
)
from sparkgate.cli.render import describe_error, table, versions_text
from sparkgate.cli.waiting import poll
from sparkgate.client import Client, ClientError
from sparkgate.recorded import ErrorCode
from sparkgate.schemas.jobs import Deployment

MANIFEST_SUFFIXES = (".yaml", ".yml")
_ACTION_STYLES = {
    "error": "bold red",
    "remove": "red",
    "restart-clean": "yellow",
    "start-clean": "green",
    "orphaned": "magenta",
    "nothing": "dim",
}
_OUTCOME_STYLES = {"done": "green", "failed": "bold red", "skipped": "yellow"}


def deploy(
    paths: Annotated[
        list[Path], typer.Argument(help="Manifest files, or directories holding *.yaml files.")
    ],
    template: Annotated[
        Path | None, typer.Option(help="Defaults merged under every manifest (YAML).")
    ] = None,
    definitions: Annotated[
        list[Path] | None,
        typer.Option(help="SQL files of CREATE STREAM / CREATE TABLE statements jobs read."),
    ] = None,
    plan: Annotated[
        bool, typer.Option("--plan", help="Show what would be done; change nothing.")
    ] = False,
    prune: Annotated[
        bool, typer.Option("--prune", help="Remove jobs whose manifest is not given.")
    ] = False,
    wait: Annotated[
        float, typer.Option(help="Seconds to wait for a deploy already under way.")
    ] = 0.0,
    timeout: Annotated[
        float, typer.Option(help="Give up waiting for the deployment after this many seconds.")
    ] = 1800.0,
    as_json: JsonOption = False,
) -> None:
    """Compare every manifest with the deployed job and act: start new jobs with clean state,
    restart changed ones (from their saved state, or as a new version when the query
    changed), leave unchanged ones alone. Exits non-zero if any job could not be deployed.

    Example: sparkgate deploy jobs/ --template jobs/template.yaml --definitions tables.sql
    """
    skip = {p.resolve() for p in [template, *(definitions or [])] if p is not None}
    manifests = [_file(p) for p in manifest_files(paths, skip)]
    if not manifests:
        fail(f"no manifests (*.yaml, *.yml) in {', '.join(map(str, paths))}")
    body_template = _file(template) if template is not None else None
    body_definitions = [_file(p) for p in definitions or []]
    with make_client() as sg:
        try:
            deployment = sg.deploy(
                manifests,
                template=body_template,
                definitions=body_definitions,
                prune=prune,
                plan_only=plan,
                wait=wait,
            )
            if not plan and not as_json:
                console.print(plan_table(deployment, title=f"deployment {deployment.id}"))
                deployment = _follow(sg, deployment, timeout)
            elif not plan:
                deployment = sg.wait_deployment(deployment.id, timeout)
        except ClientError as exc:
            _refused(exc)
    if as_json:
        print_json(deployment)
    elif plan:
        console.print(plan_table(deployment, title="plan (nothing changed)"))
    else:
        console.print(outcome_table(deployment))
    decisions = deployment.decisions
    if plan:
        if any(d.action == "error" for d in decisions):
            raise typer.Exit(1)
        return
    if deployment.state != "succeeded":
        failed = [d for d in decisions if d.outcome == "failed"]
        for decision in failed:
            err_console.print(
                f"[bold red]{decision.job}[/]: {describe_error(decision.error)}",
                highlight=False,
                soft_wrap=True,
            )
        message = describe_error(deployment.error) if deployment.error else "not deployed"
        fail(f"deployment {deployment.id} {deployment.state}: {message}")


def manifest_files(paths: Iterable[Path], skip: set[Path] | None = None) -> list[Path]:
    """The manifest files named: files as given, directories searched (sorted)."""
    found: list[Path] = []
    for path in paths:
        if not path.exists():
            fail(f"{path}: no such file or directory")
        if path.is_dir():
            found.extend(
                sorted(p for p in path.rglob("*") if p.suffix in MANIFEST_SUFFIXES and p.is_file())
            )
        else:
            found.append(path)
    return [p for p in dict.fromkeys(found) if p.resolve() not in (skip or set())]


def plan_table(deployment: Deployment, *, title: str) -> Table:
    rows = ((d.job, versions_text(d), _action(d.action), d.reason) for d in deployment.decisions)
    return table(("job", "version", "action", "reason"), rows, title=title)


def outcome_table(deployment: Deployment) -> Table:
    title = f"deployment {deployment.id}: {deployment.state}"
    rows = []
    for d in deployment.decisions:
        style = _OUTCOME_STYLES.get(d.outcome, "")
        outcome = f"[{style}]{d.outcome}[/]" if style else d.outcome
        note = describe_error(d.error) if d.error else d.note or ""
        rows.append((d.job, versions_text(d), _action(d.action), outcome, note))
    return table(("job", "version", "action", "outcome", "note"), rows, title=title)


def _follow(sg: Client, deployment: Deployment, timeout: float) -> Deployment:
    """Show each job's outcome as it comes, until the deployment ends."""
    deployment_id = deployment.id
    with Live(outcome_table(deployment), console=err_console, transient=True) as live:
        return poll(
            deployment,
            lambda: sg.deployment(deployment_id),
            done=lambda d: d.state != "running",
            show=lambda d: live.update(outcome_table(d)),
            timeout=timeout,
            timed_out=lambda _: f"deployment {deployment_id} still running after {timeout:.0f}s",
        )


def _refused(exc: ClientError) -> None:
    error = exc.body.get("error", {}) if isinstance(exc.body, dict) else {}
    problems = error.get("errors")
    if exc.code == ErrorCode.MANIFESTS_INVALID and isinstance(problems, list):
        for p in problems:
            where = str(p["file"]) + (f":{p['line']}" if p.get("line") else "")
            field = f" [bold]{p['field']}[/]:" if p.get("field") else ""
            err_console.print(f"{where}:{field} {p['message']}", highlight=False, soft_wrap=True)
        fail(f"nothing was deployed: {len(problems)} problem(s) in the manifests")
    fail(describe_client_error(exc, connection.server))


def _file(path: Path) -> dict[str, str]:
    try:
        return {"path": str(path), "content": path.read_text(encoding="utf-8")}
    except (OSError, UnicodeDecodeError) as exc:
        fail(f"cannot read {path}: {getattr(exc, 'strerror', None) or exc}")


def _action(action: str) -> str:
    style = _ACTION_STYLES.get(action)
    return f"[{style}]{action}[/]" if style else action
