"""Deploys and jobs: ``/v1/deployments``, ``/v1/jobs``."""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter, Query, Response
from pydantic import BaseModel, ConfigDict, Field

from sparkgate.api.bodies import (
    Deployment,
    DeploymentList,
    JobDetail,
    JobHistory,
    JobList,
    JobRun,
    JobRunList,
)
from sparkgate.api.deps import NodeDep, UserDep
from sparkgate.api.openapi import refusals
from sparkgate.api.paging import After, Total, counted, id_after, paging
from sparkgate.api.params import Id, Offset
from sparkgate.api.views import (
    decision_view,
    deployment_view,
    job_run_view,
    job_version_view,
    job_view,
    stream_job_view,
)
from sparkgate.auth.access import JOBS
from sparkgate.errors import DeploymentNotFound, JobRunNotFound
from sparkgate.jobs.bundle import Bundle
from sparkgate.jobs.files import SourceFile
from sparkgate.node import ServerNode
from sparkgate.store.records import JobRecord

router = APIRouter(tags=["jobs"])

_MAX_WAIT = 600.0

_JOBS_RIGHT = refusals({403: "The `jobs` right is missing."})


class FileBody(BaseModel):
    model_config = ConfigDict(extra="forbid")

    path: str = Field(min_length=1, description="the file's name, as errors will show it")
    content: str

    def source(self) -> SourceFile:
        return SourceFile(self.path, self.content)


class DeploymentCreate(BaseModel):
    model_config = ConfigDict(extra="forbid")

    manifests: list[FileBody] = Field(min_length=1)
    template: FileBody | None = None
    definitions: list[FileBody] = Field(default_factory=list)
    prune: bool = False
    plan_only: bool = False
    wait: float = Field(
        default=0.0,
        strict=True,
        ge=0,
        le=_MAX_WAIT,
        description="seconds to wait for a deploy under way",
    )


@router.post(
    "/v1/deployments",
    status_code=202,
    response_model=Deployment,
    response_description="The deployment, running on.",
    responses={
        200: {"model": Deployment, "description": "`plan_only`: the plan; nothing changed."},
        **refusals(
            {
                403: "The `jobs` right is missing, or a manifest sets a denied setting.",
                409: "Another deploy is still running after `wait` (`DEPLOY_IN_PROGRESS`).",
                422: "Invalid body, or problems in the manifests (`MANIFESTS_INVALID`, each "
                "with its file, field and line in `errors`): nothing was deployed.",
            }
        ),
    },
)
def create_deployment(
    body: DeploymentCreate, node: NodeDep, user: UserDep, response: Response
) -> dict[str, Any]:
    """Deploy jobs: ``{"manifests": [{"path": "clicks.yaml", "content": "name: clicks..."}],
    "template": {...}, "definitions": [...], "prune": false, "plan_only": false, "wait": 30}``.

    Everything is checked first: any problem and the answer is 422, listing every problem with
    its file, field and line, and nothing changes. Otherwise 202 with the plan (each job's
    action and reason); the deployment runs on, ``GET /v1/deployments/{id}`` shows each job's
    outcome. ``plan_only``: 200 with the plan, nothing changes. A deploy under way: waits up to
    ``wait`` seconds, then 409 ``DEPLOY_IN_PROGRESS`` naming it.
    """
    node.users.require(user, JOBS, "deploy jobs")

    def check(bundle: Bundle) -> None:
        for job in bundle.jobs:
            node.users.check_conf(user, dict(job.manifest.properties), target=f"job:{job.name}")

    submitted = node.deployer.submit(
        [m.source() for m in body.manifests],
        body.template.source() if body.template is not None else None,
        [d.source() for d in body.definitions],
        prune=body.prune,
        plan_only=body.plan_only,
        wait=body.wait,
        user=user.name,
        check=check,
    )
    deployment = submitted.deployment
    if not body.plan_only:
        node.users.audit(
            user,
            "deploy",
            "ok",
            target=f"deployment:{deployment.id}",
            detail={"prune": body.prune, "jobs": sorted({a.name for a in submitted.actions})},
        )
    if body.plan_only:
        response.status_code = 200
    return deployment_view(deployment, node.store.deployments.decisions(deployment.id))


@router.get("/v1/deployments", response_model=DeploymentList)
def list_deployments(
    node: NodeDep,
    user: UserDep,
    owner: str | None = None,
    offset: Offset = 0,
    limit: Annotated[int, Query(ge=1, le=1000)] = 20,
    after: After = None,
    total: Total = None,
) -> dict[str, Any]:
    """Your deployments (admins: everyone's, or ``?owner=``), newest first, each with its
    decisions; the next page is ``?after=<next>``."""
    page = node.store.deployments.list_page(
        owner=user.owner_filter(owner),
        offset=offset,
        limit=limit,
        after=id_after(after, offset),
        count=counted(total, after),
    )
    return {
        "deployments": [
            deployment_view(d, node.store.deployments.decisions(d.id)) for d in page.items
        ],
        **paging(page, after),
    }


@router.get("/v1/deployments/{deployment_id}", response_model=Deployment)
def get_deployment(deployment_id: Id, node: NodeDep, user: UserDep) -> dict[str, Any]:
    """A deployment: its state, and for each job the action, reason and outcome."""
    deployment = node.store.deployments.get(deployment_id)
    if not user.owns(deployment.owner):
        raise DeploymentNotFound(deployment_id)
    return deployment_view(deployment, node.store.deployments.decisions(deployment.id))


@router.get("/v1/jobs", response_model=JobList, responses=_JOBS_RIGHT)
def list_jobs(node: NodeDep, user: UserDep, removed: bool = False) -> dict[str, Any]:
    """Deployed jobs by name (``?removed=true``: pruned ones too). Jobs are the team's: every
    user with the ``jobs`` right sees them all."""
    node.users.require(user, JOBS, "read jobs")
    return {"jobs": [_job(node, job) for job in node.store.jobs.all(removed=removed)]}


@router.get("/v1/jobs/{name}", response_model=JobDetail, responses=_JOBS_RIGHT)
def get_job(name: str, node: NodeDep, user: UserDep) -> dict[str, Any]:
    """A job: its current version and manifest, what it runs, its stream job (streaming) or
    recent runs (batch), and the latest deploy decisions about it."""
    node.users.require(user, JOBS, "read jobs")
    job = node.store.jobs.get(name)
    view = _job(node, job)
    stream = None if job.batch else node.store.stream_jobs.find(name)
    view["manifest"] = job.manifest
    view["steps"] = job.steps
    view["stream"] = stream_job_view(stream) if stream is not None else None
    if stream is not None:
        view["stream"]["queries"] = [
            {
                "name": q.name,
                "state": q.state.value,
                "restarts": q.restarts,
                "checkpoint": q.checkpoint,
                "last_error": q.error,
            }
            for q in node.store.stream_queries.of_job(stream.id)
        ]
    view["runs"] = [job_run_view(r) for r in node.store.job_runs.of_job(name, limit=10)]
    view["decisions"] = [
        decision_view(d) for d in node.store.deployments.decisions_of_job(name, limit=10)
    ]
    return view


@router.get("/v1/jobs/{name}/history", response_model=JobHistory, responses=_JOBS_RIGHT)
def job_history(
    name: str, node: NodeDep, user: UserDep, limit: Annotated[int, Query(ge=1, le=1000)] = 100
) -> dict[str, Any]:
    """Every version of a job (newest first) and every deploy decision about it."""
    node.users.require(user, JOBS, "read jobs")
    node.store.jobs.get(name)
    return {
        "name": name,
        "versions": [job_version_view(v) for v in node.store.jobs.versions(name)],
        "decisions": [
            decision_view(d) for d in node.store.deployments.decisions_of_job(name, limit=limit)
        ],
    }


@router.post(
    "/v1/jobs/{name}/runs",
    status_code=202,
    response_model=JobRun,
    responses=refusals(
        {
            403: "The `jobs` right is missing.",
            409: "The job is a streaming job (`JOB_NOT_BATCH`) or was removed (`JOB_REMOVED`).",
        }
    ),
)
def run_job(name: str, node: NodeDep, user: UserDep) -> dict[str, Any]:
    """Run a batch job: its sources, then an atomic replace of its target table. 202 with the
    run (``running``); ``GET /v1/jobs/{name}/runs/{id}`` says how it ended."""
    node.users.require(user, JOBS, "run jobs", target=f"job:{name}")
    run = node.job_runner.start(name, user=user.name)
    node.users.audit(user, "job.run", "ok", target=f"job:{name}", detail={"run": run.id})
    return job_run_view(run)


@router.get("/v1/jobs/{name}/runs", response_model=JobRunList, responses=_JOBS_RIGHT)
def list_runs(
    name: str, node: NodeDep, user: UserDep, limit: Annotated[int, Query(ge=1, le=1000)] = 20
) -> dict[str, Any]:
    node.users.require(user, JOBS, "read jobs")
    node.store.jobs.get(name)
    return {"runs": [job_run_view(r) for r in node.store.job_runs.of_job(name, limit=limit)]}


@router.get("/v1/jobs/{name}/runs/{run_id}", response_model=JobRun, responses=_JOBS_RIGHT)
def get_run(name: str, run_id: Id, node: NodeDep, user: UserDep) -> dict[str, Any]:
    node.users.require(user, JOBS, "read jobs")
    run = node.store.job_runs.get(run_id)
    if run.job != name:
        raise JobRunNotFound(run_id)  # another job's run: as unknown as any
    return job_run_view(run)


@router.post(
    "/v1/jobs/{name}/runs/{run_id}/cancel",
    status_code=202,
    response_model=JobRun,
    responses=_JOBS_RIGHT,
)
def cancel_run(name: str, run_id: Id, node: NodeDep, user: UserDep) -> dict[str, Any]:
    """Stop a run: its session is killed; a write under way is aborted (nothing shows)."""
    get_run(name, run_id, node, user)
    node.users.require(user, JOBS, "cancel job runs", target=f"job:{name}")
    node.users.audit(user, "job.cancel", "ok", target=f"job:{name}", detail={"run": run_id})
    return job_run_view(node.job_runner.cancel(run_id))


def _job(node: ServerNode, job: JobRecord) -> dict[str, Any]:
    stream = None if job.batch else node.store.stream_jobs.find(job.name)
    runs = node.store.job_runs.of_job(job.name, limit=1) if job.batch else []
    return job_view(job, stream, runs[0] if runs else None)
