"""Deploys and jobs for every door: deploy manifests, read jobs and deployments, run and
cancel batch jobs.

Jobs are the team's: anyone with the ``jobs`` right reads them all. A deployment is its
deployer's (admins see all). Every change needs ``jobs`` and is audited, here.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from sparkgate.auth.access import JOBS
from sparkgate.auth.principal import Principal
from sparkgate.auth.users import Users
from sparkgate.errors.jobs import DeploymentNotFound, JobRunNotFound
from sparkgate.jobs.bundle import Bundle
from sparkgate.jobs.files import SourceFile
from sparkgate.service.deployer import Deployer
from sparkgate.service.job_runs import JobRunner
from sparkgate.service.visibility import list_owner, sees
from sparkgate.store import Store
from sparkgate.store.records import (
    DeploymentRecord,
    JobDecisionRecord,
    JobRecord,
    JobRunRecord,
    JobVersionRecord,
    Page,
    StreamJobRecord,
    StreamQueryRecord,
    Window,
)

RECENT = 10  # runs and decisions on a job's detail


@dataclass(frozen=True)
class DeploymentDetail:
    deployment: DeploymentRecord
    decisions: list[JobDecisionRecord]


@dataclass(frozen=True)
class JobSummary:
    job: JobRecord
    stream: StreamJobRecord | None  # a streaming job's stream job (None: batch, or deleted)
    last_run: JobRunRecord | None


@dataclass(frozen=True)
class JobDetail(JobSummary):
    stream_queries: list[StreamQueryRecord]
    runs: list[JobRunRecord]
    decisions: list[JobDecisionRecord]


@dataclass(frozen=True)
class JobHistory:
    versions: list[JobVersionRecord]
    decisions: list[JobDecisionRecord]


@dataclass
class JobService:
    store: Store
    users: Users
    deployer: Deployer
    runner: JobRunner

    # -- deployments ---------------------------------------------------------------------

    def deploy(
        self,
        manifests: Sequence[SourceFile],
        template: SourceFile | None,
        definitions: Sequence[SourceFile],
        *,
        user: Principal,
        prune: bool = False,
        plan_only: bool = False,
        wait: float = 0.0,
    ) -> DeploymentDetail:
        """Check, plan and (unless ``plan_only``) carry out a deploy (``Deployer.submit``)."""
        self.users.require(user, JOBS, "deploy jobs")

        def check(bundle: Bundle) -> None:
            # Denied Spark settings, in a job's properties. Its SQL cannot set any: sources
            # and definitions are definitions, and sql is one query (jobs.manifest refuses a
            # SET there, naming the file, field and line).
            for job in bundle.jobs:
                where = f"properties of job {job.name} ({job.file})"
                self.users.check_conf(
                    user, job.manifest.properties, target=f"job:{job.name}", where=where
                )

        submitted = self.deployer.submit(
            manifests,
            template,
            definitions,
            prune=prune,
            plan_only=plan_only,
            wait=wait,
            user=user.name,
            check=check,
        )
        deployment = submitted.deployment
        if not plan_only:
            self.users.audit(
                user,
                "deploy",
                "ok",
                target=f"deployment:{deployment.id}",
                detail={"prune": prune, "jobs": sorted({a.name for a in submitted.actions})},
            )
        return self._deployment(deployment)

    def deployments(
        self,
        *,
        user: Principal,
        owner: str | None = None,
        window: Window = Window(limit=20),
    ) -> Page[DeploymentDetail]:
        """The user's deployments (admins: ``owner``'s, or everyone's), newest first."""
        page = self.store.deployments.list_page(owner=list_owner(user, owner), window=window)
        return page.with_items([self._deployment(d) for d in page.items])

    def deployment(self, deployment_id: int, *, user: Principal) -> DeploymentDetail:
        deployment = self.store.deployments.find(deployment_id)
        if deployment is None or not sees(user, deployment.owner):
            raise DeploymentNotFound(deployment_id)
        return self._deployment(deployment)

    def _deployment(self, deployment: DeploymentRecord) -> DeploymentDetail:
        return DeploymentDetail(deployment, self.store.deployments.decisions(deployment.id))

    # -- jobs ----------------------------------------------------------------------------

    def jobs(self, *, user: Principal, removed: bool = False) -> list[JobSummary]:
        self.users.require(user, JOBS, "read jobs")
        return [self._summary(job) for job in self.store.jobs.all(removed=removed)]

    def job(self, name: str, *, user: Principal) -> JobDetail:
        self.users.require(user, JOBS, "read jobs")
        summary = self._summary(self.store.jobs.get(name))
        stream = summary.stream
        return JobDetail(
            summary.job,
            stream,
            summary.last_run,
            self.store.stream_queries.of_job(stream.id) if stream is not None else [],
            self.store.job_runs.of_job(name, limit=RECENT),
            self.store.deployments.decisions_of_job(name, limit=RECENT),
        )

    def history(self, name: str, *, user: Principal, limit: int = 100) -> JobHistory:
        """Every version of a job (newest first) and every deploy decision about it."""
        self.users.require(user, JOBS, "read jobs")
        self.store.jobs.get(name)
        return JobHistory(
            self.store.jobs.versions(name),
            self.store.deployments.decisions_of_job(name, limit=limit),
        )

    def _summary(self, job: JobRecord) -> JobSummary:
        stream = None if job.batch else self.store.stream_jobs.find(job.name)
        runs = self.store.job_runs.of_job(job.name, limit=1) if job.batch else []
        return JobSummary(job, stream, runs[0] if runs else None)

    # -- runs ----------------------------------------------------------------------------

    def run(self, name: str, *, user: Principal) -> JobRunRecord:
        """Run a batch job: its sources, then an atomic replace of its target table."""
        self.users.require(user, JOBS, "run jobs", target=f"job:{name}")
        run = self.runner.start(name, user=user.name)
        self.users.audit(user, "job.run", "ok", target=f"job:{name}", detail={"run": run.id})
        return run

    def runs(self, name: str, *, user: Principal, limit: int = 20) -> list[JobRunRecord]:
        self.users.require(user, JOBS, "read jobs")
        self.store.jobs.get(name)
        return self.store.job_runs.of_job(name, limit=limit)

    def job_run(self, name: str, run_id: int, *, user: Principal) -> JobRunRecord:
        self.users.require(user, JOBS, "read jobs")
        run = self.store.job_runs.get(run_id)
        if run.job != name:
            raise JobRunNotFound(run_id)  # another job's run: as unknown as any
        return run

    def cancel_run(self, name: str, run_id: int, *, user: Principal) -> JobRunRecord:
        """Stop a run: its session is killed; a write under way is aborted (nothing shows)."""
        self.job_run(name, run_id, user=user)
        self.users.require(user, JOBS, "cancel job runs", target=f"job:{name}")
        self.users.audit(user, "job.cancel", "ok", target=f"job:{name}", detail={"run": run_id})
        return self.runner.cancel(run_id)
