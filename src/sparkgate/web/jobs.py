"""Dashboard pages for deployed jobs: the list with recent deployments, and one job (its
version, what it runs, where its state is, and every deploy decision with the manifest change
that led to it).

Pages call the service with the signed-in user, as ``/v1/jobs`` does, so they show what it
shows: jobs are the team's, deployments their owner's.
"""

from __future__ import annotations

import difflib
from dataclasses import dataclass
from typing import Any

import yaml
from fastapi import APIRouter, Request
from fastapi.responses import HTMLResponse

from sparkgate.auth.principal import Principal
from sparkgate.http.deps import ServiceDep, UserDep
from sparkgate.http.paging import paging
from sparkgate.schemas.jobs import Decision, Deployment, DeploymentList, JobDetail, JobVersion
from sparkgate.service import Service
from sparkgate.service.job_views import job_detail_view, job_history_view, job_summary_view
from sparkgate.states import ActionKind
from sparkgate.store.records import Window
from sparkgate.web.templating import render, render_list

router = APIRouter(prefix="/ui", include_in_schema=False)

DEPLOYMENTS = 10  # recent deployments on the list page
HISTORY = 100  # decisions on a job's page

# What each decision did, in the page's words and its colour; a decision that made a new
# version says so first ("new version, restarted clean").
_DONE = {
    ActionKind.START_CLEAN: ("started", "started clean"),
    ActionKind.RESUME: ("restarted", "started from saved state"),
    ActionKind.RESTART_CLEAN: ("started", "restarted clean"),
    ActionKind.RESTART_RESUME: ("restarted", "restarted from saved state"),
    ActionKind.UPDATE: ("updated", "updated, not restarted"),
    ActionKind.REGISTER: ("updated", "registered"),
    ActionKind.NOTHING: ("unchanged", "unchanged"),
    ActionKind.ERROR: ("refused", "refused"),
    ActionKind.REMOVE: ("removed", "removed"),
    ActionKind.ORPHANED: ("unchanged", "left as it is (manifest gone)"),
}
_OPEN = frozenset({"planned", "in_progress"})  # outcomes of a deploy still under way


# A diff as the page shows it: (kind, line) pairs (``_diff``).
Diff = list[tuple[str, str]]


class LabelledDecision(Decision):
    """A decision as the pages show it: what it did in the page's words (``label``) and
    colour (``kind``), whether it made a new version, and the change that did (``diff``)."""

    kind: str
    label: str
    new_version: bool
    diff: Diff | None


class ShownVersion(JobVersion):
    """A version with its manifest as its author would write it."""

    yaml: str


@dataclass(frozen=True)
class JobPage:
    """A job's page: the job, its deploy history, and what its poll compares."""

    job: JobDetail
    versions: list[ShownVersion]
    decisions: list[LabelledDecision]
    deploying: bool
    marker: str
    kept_diff: Diff | None
    stream_visible: bool


@router.get("/jobs")
def jobs_page(
    request: Request, service: ServiceDep, user: UserDep, removed: bool = False
) -> HTMLResponse:
    """The jobs and recent deployments; the table alone for the page's poll."""
    return render_list(
        request,
        "jobs.html",
        "_jobs_table.html",
        jobs=[job_summary_view(j) for j in service.jobs.jobs(user=user, removed=removed)],
        deployments=_deployments(service, user),
        removed=removed,
    )


def _deployments(service: Service, user: Principal) -> DeploymentList:
    """The user's recent deployments, each decision as the pages show it."""
    page = service.jobs.deployments(user=user, window=Window(limit=DEPLOYMENTS))
    deployments = [
        Deployment.of(d.deployment, [_labelled(Decision.of(x)) for x in d.decisions])
        for d in page.items
    ]
    return DeploymentList(deployments=deployments, **paging(page, None))


@router.get("/jobs/{name}")
def job_page(request: Request, name: str, service: ServiceDep, user: UserDep) -> HTMLResponse:
    return _render_job(request, "job.html", _detail(service, user, name))


@router.get("/jobs/{name}/state")
def job_state(
    request: Request, name: str, service: ServiceDep, user: UserDep, seen: str = ""
) -> HTMLResponse:
    """The job's state and paths, polled; with its deploy history too (out of band) when that
    changed since the ``seen`` marker the page has."""
    page = _detail(service, user, name)
    return _render_job(request, "_job_state.html", page, history_changed=seen != page.marker)


def _render_job(
    request: Request, template: str, page: JobPage, *, history_changed: bool = False
) -> HTMLResponse:
    """A job's page, or its state fragment: the templates read the page's fields by name."""
    return render(request, template, **vars(page), history_changed=history_changed)


def _detail(service: Service, user: Principal, name: str) -> JobPage:
    job = job_detail_view(service.jobs.job(name, user=user))
    history = job_history_view(name, service.jobs.history(name, user=user, limit=HISTORY))
    manifests = {v.version: v.manifest for v in history.versions}
    decisions = [_labelled(d, manifests) for d in history.decisions]
    current = manifests.get(job.version)
    deploying = sum(d.outcome in _OPEN for d in decisions)
    latest = decisions[0].deployment_id if decisions else 0
    return JobPage(
        job=job,
        versions=[ShownVersion(**dict(v), yaml=_yaml(v.manifest)) for v in history.versions],
        decisions=decisions,
        deploying=deploying > 0,
        # What the history shows changes with a new decision, an outcome, or the manifest.
        marker=f"{latest}.{len(decisions)}.{deploying}.{job.version}.{job.updated_at}",
        # Changes that kept the version (run config, description) are not kept one by one:
        # the store has each version's first manifest and the current one.
        kept_diff=_diff(current, job.manifest, f"version {job.version} as made", "now")
        if current is not None and current != job.manifest
        else None,
        # A job is the team's, its stream job its deployer's: link it only for those who see it.
        stream_visible=job.stream is not None and service.streams.visible(name, user=user),
    )


def _labelled(
    decision: Decision, manifests: dict[int, dict[str, Any]] | None = None
) -> LabelledDecision:
    """A decision with what the page says of it and, given the versions' manifests, the
    change that caused a new version."""
    action = decision.action
    kind, label = _DONE.get(action, ("unchanged", action.value))
    before, after = decision.from_version, decision.to_version
    new_version = after is not None and after != before and kind not in ("refused", "removed")
    planned = decision.outcome == "plan-only"
    if new_version and before is not None:
        kind, label = "new", f"new version, {label}"
    diff = None
    # A plan only made no version: the stored one of that number may be another deploy's.
    if manifests is not None and new_version and after in manifests and not planned:
        old = manifests.get(before) if before is not None else None
        diff = _diff(
            old, manifests[after], f"version {before}" if old else "nothing", f"version {after}"
        )
    return LabelledDecision(
        **dict(decision), kind=kind, label=label, new_version=new_version, diff=diff
    )


def _diff(before: dict[str, Any] | None, after: dict[str, Any], old: str, new: str) -> Diff:
    """A unified diff of two manifests as YAML, as (kind, line) pairs: ``add``, ``del``,
    ``hunk``, ``file`` or ``same``. The whole manifest is shown: they are short, and the
    lines around a change are what make it readable."""
    lines = difflib.unified_diff(
        _yaml(before).splitlines(), _yaml(after).splitlines(), old, new, lineterm="", n=1000
    )
    kinds = {"+": "add", "-": "del", "@": "hunk", " ": "same"}
    shown = []
    for line in lines:
        if line.startswith(("+++", "---")):
            shown.append(("file", line))
        else:
            shown.append((kinds.get(line[:1], "same"), line))
    return shown


def _yaml(manifest: dict[str, Any] | None) -> str:
    """A manifest as its author would write it: fields left unset (null, empty) are left out,
    and multi-line SQL or code is a literal block."""
    if manifest is None:
        return ""
    return yaml.dump(_set(manifest), Dumper=_Dumper, sort_keys=False, allow_unicode=True, width=100)


def _set(value: Any) -> Any:
    if isinstance(value, dict):
        kept = {k: _set(v) for k, v in value.items()}
        return {k: v for k, v in kept.items() if v not in (None, {}, [])}
    if isinstance(value, list):
        return [_set(v) for v in value]
    return value


class _Dumper(yaml.SafeDumper):
    pass


def _string(dumper: yaml.SafeDumper, value: str) -> yaml.ScalarNode:
    style = "|" if "\n" in value else None
    return dumper.represent_scalar("tag:yaml.org,2002:str", value, style=style)


_Dumper.add_representer(str, _string)
