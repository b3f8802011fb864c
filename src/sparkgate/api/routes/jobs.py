"""Deploys and jobs: ``/v1/deployments``, ``/v1/jobs``."""

from __future__ import annotations

from fastapi import APIRouter, Response
from pydantic import BaseModel, ConfigDict, Field

from sparkgate.http.deps import ServiceDep, UserDep
from sparkgate.http.openapi import refusals
from sparkgate.http.paging import RecentList
from sparkgate.http.params import Id, ListLimit
from sparkgate.jobs.files import SourceFile
from sparkgate.schemas.jobs import (
    Deployment,
    DeploymentList,
    JobDetail,
    JobHistory,
    JobList,
    JobRun,
    JobRunList,
)
from sparkgate.service.job_views import (
    deployment_detail_view,
    job_detail_view,
    job_history_view,
    job_summary_view,
)

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
    body: DeploymentCreate, service: ServiceDep, user: UserDep, response: Response
) -> Deployment:
    """Deploy jobs: ``{"manifests": [{"path": "clicks.yaml", "content": "name: clicks..."}],
    "template": {...}, "definitions": [...], "prune": false, "plan_only": false, "wait": 30}``.

    Everything is checked first: any problem and the answer is 422, listing every problem with
    its file, field and line, and nothing changes. Otherwise 202 with the plan (each job's
    action and reason); the deployment runs on, ``GET /v1/deployments/{id}`` shows each job's
    outcome. ``plan_only``: 200 with the plan, nothing changes. A deploy under way: waits up to
    ``wait`` seconds, then 409 ``DEPLOY_IN_PROGRESS`` naming it.
    """
    detail = service.jobs.deploy(
        [m.source() for m in body.manifests],
        body.template.source() if body.template is not None else None,
        [d.source() for d in body.definitions],
        user=user,
        prune=body.prune,
        plan_only=body.plan_only,
        wait=body.wait,
    )
    if body.plan_only:
        response.status_code = 200
    return deployment_detail_view(detail)


@router.get("/v1/deployments", response_model=DeploymentList)
def list_deployments(
    service: ServiceDep,
    user: UserDep,
    listing: RecentList,
    owner: str | None = None,
) -> DeploymentList:
    """Your deployments (admins: everyone's, or ``?owner=``), newest first, each with its
    decisions; the next page is ``?after=<next>``."""
    page = service.jobs.deployments(
        user=user,
        owner=owner,
        window=listing.window(),
    )
    return DeploymentList(
        deployments=[deployment_detail_view(d) for d in page.items], **listing.paging(page)
    )


@router.get("/v1/deployments/{deployment_id}", response_model=Deployment)
def get_deployment(deployment_id: Id, service: ServiceDep, user: UserDep) -> Deployment:
    """A deployment: its state, and for each job the action, reason and outcome."""
    return deployment_detail_view(service.jobs.deployment(deployment_id, user=user))


@router.get("/v1/jobs", response_model=JobList, responses=_JOBS_RIGHT)
def list_jobs(service: ServiceDep, user: UserDep, removed: bool = False) -> JobList:
    """Deployed jobs by name (``?removed=true``: pruned ones too). Jobs are the team's: every
    user with the ``jobs`` right sees them all."""
    return JobList(
        jobs=[job_summary_view(j) for j in service.jobs.jobs(user=user, removed=removed)]
    )


@router.get("/v1/jobs/{name}", response_model=JobDetail, responses=_JOBS_RIGHT)
def get_job(name: str, service: ServiceDep, user: UserDep) -> JobDetail:
    """A job: its current version and manifest, what it runs, its stream job (streaming) or
    recent runs (batch), and the latest deploy decisions about it."""
    return job_detail_view(service.jobs.job(name, user=user))


@router.get("/v1/jobs/{name}/history", response_model=JobHistory, responses=_JOBS_RIGHT)
def job_history(
    name: str,
    service: ServiceDep,
    user: UserDep,
    limit: ListLimit = 100,
) -> JobHistory:
    """Every version of a job (newest first) and every deploy decision about it."""
    return job_history_view(name, service.jobs.history(name, user=user, limit=limit))


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
def run_job(name: str, service: ServiceDep, user: UserDep) -> JobRun:
    """Run a batch job: its sources, then an atomic replace of its target table. 202 with the
    run (``running``); ``GET /v1/jobs/{name}/runs/{id}`` says how it ended."""
    return JobRun.of(service.jobs.run(name, user=user))


@router.get("/v1/jobs/{name}/runs", response_model=JobRunList, responses=_JOBS_RIGHT)
def list_runs(
    name: str,
    service: ServiceDep,
    user: UserDep,
    limit: ListLimit = 20,
) -> JobRunList:
    return JobRunList(runs=[JobRun.of(r) for r in service.jobs.runs(name, user=user, limit=limit)])


@router.get("/v1/jobs/{name}/runs/{run_id}", response_model=JobRun, responses=_JOBS_RIGHT)
def get_run(name: str, run_id: Id, service: ServiceDep, user: UserDep) -> JobRun:
    return JobRun.of(service.jobs.job_run(name, run_id, user=user))


@router.post(
    "/v1/jobs/{name}/runs/{run_id}/cancel",
    status_code=202,
    response_model=JobRun,
    responses=_JOBS_RIGHT,
)
def cancel_run(name: str, run_id: Id, service: ServiceDep, user: UserDep) -> JobRun:
    """Stop a run: its session is killed; a write under way is aborted (nothing shows)."""
    return JobRun.of(service.jobs.cancel_run(name, run_id, user=user))
