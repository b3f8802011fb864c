"""How manifest jobs, their runs and versions, and deployments look in the JSON of the doors
and on the dashboard: the schemas' models composed from what the service reads (a job with
its stream job, runs and decisions). A single record's view is its model's ``of``
(``Job.of``, ``JobRun.of``, ...)."""

from __future__ import annotations

from sparkgate.schemas.jobs import (
    Decision,
    Deployment,
    Job,
    JobDetail,
    JobHistory,
    JobRun,
    JobStream,
    JobStreamQuery,
    JobVersion,
)
from sparkgate.schemas.streams import Step, StreamJob
from sparkgate.service import jobs


def job_summary_view(summary: jobs.JobSummary) -> Job:
    return Job.of(summary.job, summary.stream, summary.last_run)


def job_detail_view(detail: jobs.JobDetail) -> JobDetail:
    """A job with its manifest, steps, stream job (and its queries), runs and decisions."""
    stream = None
    if detail.stream is not None:
        stream = JobStream(
            **dict(StreamJob.of(detail.stream)),
            queries=[JobStreamQuery.of(q) for q in detail.stream_queries],
        )
    return JobDetail(
        **dict(job_summary_view(detail)),
        manifest=detail.job.manifest,
        steps=[Step.model_validate(step) for step in detail.job.steps],
        stream=stream,
        runs=[JobRun.of(r) for r in detail.runs],
        decisions=[Decision.of(d) for d in detail.decisions],
    )


def job_history_view(name: str, history: jobs.JobHistory) -> JobHistory:
    return JobHistory(
        name=name,
        versions=[JobVersion.of(v) for v in history.versions],
        decisions=[Decision.of(d) for d in history.decisions],
    )


def deployment_detail_view(detail: jobs.DeploymentDetail) -> Deployment:
    return Deployment.of(detail.deployment, [Decision.of(d) for d in detail.decisions])
