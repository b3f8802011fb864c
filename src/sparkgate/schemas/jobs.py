"""Deployments and the jobs they declare: decisions, versions, history and batch runs.
A streaming job's detail holds its stream job, hence the import of ``streams``.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import Field

from sparkgate.schemas.common import Body, Paging, Timestamp
from sparkgate.schemas.errors import RecordedError
from sparkgate.schemas.streams import Step, StreamJob
from sparkgate.states import (
    ActionKind,
    DeploymentState,
    JobRunState,
    StreamJobState,
    StreamQueryState,
)


class Decision(Body):
    deployment_id: int
    job: str
    from_version: int | None
    to_version: int | None
    action: ActionKind
    reason: str
    outcome: Literal["planned", "plan-only", "in_progress", "done", "failed", "skipped"]
    note: str | None
    error: RecordedError | None
    started_at: Timestamp | None
    finished_at: Timestamp | None


class DeployedFiles(Body):
    manifests: list[str]
    template: str | None
    definitions: list[str]


class Deployment(Body):
    id: int
    state: DeploymentState
    plan_only: bool
    prune: bool
    node_id: str | None
    files: DeployedFiles
    error: RecordedError | None
    created_at: Timestamp
    finished_at: Timestamp | None
    decisions: list[Decision]


class DeploymentList(Paging):
    deployments: list[Deployment]


class JobRun(Body):
    id: int
    job: str
    version: int
    state: JobRunState
    session_id: int | None
    steps: int
    steps_submitted: int
    query_id: int | None
    error: RecordedError | None
    created_at: Timestamp
    finished_at: Timestamp | None


class Job(Body):
    name: str
    mode: Literal["streaming", "batch"]
    # ``views.job_view``: removed, batch, or its stream job's state (missing: deleted by hand).
    state: Literal["removed", "batch", "missing"] | StreamJobState
    version: int
    query_id: str
    query_created_at: Timestamp
    started_before: bool
    description: str
    target_table: str | None
    last_error: RecordedError | None
    last_run: JobRun | None
    created_at: Timestamp
    updated_at: Timestamp


class JobList(Body):
    jobs: list[Job]


class JobStreamQuery(Body):
    name: str
    state: StreamQueryState
    restarts: int
    checkpoint: str | None
    last_error: RecordedError | None


class JobStream(StreamJob):
    queries: list[JobStreamQuery]


class JobDetail(Job):
    manifest: dict[str, Any] = Field(description="The manifest as deployed (free-form YAML).")
    steps: list[Step]
    stream: JobStream | None
    runs: list[JobRun]
    decisions: list[Decision]


class JobVersion(Body):
    version: int
    query_id: str
    created_at: Timestamp
    manifest: dict[str, Any]


class JobHistory(Body):
    name: str
    versions: list[JobVersion]
    decisions: list[Decision]


class JobRunList(Body):
    runs: list[JobRun]
