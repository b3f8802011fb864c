"""Deployments and the jobs they declare: decisions, versions, history and batch runs; each
built from its store records (``Job.of``, ...). A streaming job's detail holds its stream job,
hence the import of ``streams``; what joins a job to its runs and decisions is composed in
``service/job_views.py``.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, Literal

from pydantic import Field

from sparkgate.schemas.common import Body, OptionalTimestamp, Paging, Timestamp
from sparkgate.schemas.errors import RecordedError
from sparkgate.schemas.streams import Step, StreamJob
from sparkgate.states import (
    ActionKind,
    DeploymentState,
    JobRunState,
    StreamJobState,
    StreamQueryState,
)

if TYPE_CHECKING:  # the records its models are built from, for the type checker only
    from sparkgate.store.records import (
        DeploymentRecord,
        JobDecisionRecord,
        JobRecord,
        JobRunRecord,
        JobVersionRecord,
        StreamJobRecord,
        StreamQueryRecord,
    )

# A decision's outcome, as the deployer records it.
Outcome = Literal["planned", "plan-only", "in_progress", "done", "failed", "skipped"]
# What a manifest declares (``JobRecord.mode``).
Mode = Literal["streaming", "batch"]


class Decision(Body):
    deployment_id: int
    job: str
    from_version: int | None
    to_version: int | None
    action: ActionKind
    reason: str
    outcome: Outcome
    note: str | None
    error: RecordedError | None
    started_at: OptionalTimestamp
    finished_at: OptionalTimestamp

    @classmethod
    def of(cls, decision: JobDecisionRecord) -> Decision:
        # The store keeps ``action`` and ``outcome`` as text: the fields check them.
        return cls.model_validate(decision)


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
    finished_at: OptionalTimestamp
    decisions: list[Decision]

    @classmethod
    def of(cls, deployment: DeploymentRecord, decisions: Sequence[Decision]) -> Deployment:
        return cls.from_record(deployment, decisions=decisions)


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
    finished_at: OptionalTimestamp

    @classmethod
    def of(cls, run: JobRunRecord) -> JobRun:
        return cls.from_record(
            run,
            version=run.job_version,
            steps=len(run.steps),
            steps_submitted=run.step,
            query_id=run.statement_id,
        )


class Job(Body):
    name: str
    mode: Mode
    # ``Job.of``: removed, batch, or its stream job's state (missing: deleted by hand).
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

    @classmethod
    def of(
        cls, job: JobRecord, stream: StreamJobRecord | None, last_run: JobRunRecord | None
    ) -> Job:
        """A job; ``state``: removed, its stream job's state (a streaming job; ``missing`` if
        the stream job was deleted by hand), or ``batch`` (``last_run`` says how its last run
        went)."""
        state: Literal["removed", "batch", "missing"] | StreamJobState
        if job.removed:
            state = "removed"
        elif job.batch:
            state = "batch"
        else:
            state = stream.state if stream is not None else "missing"
        # ``Job``, not ``cls``: ``JobDetail`` adds keys, composed in ``job_views``.
        return Job.from_record(
            job,
            state=state,
            description=job.manifest.get("description", ""),
            target_table=job.manifest.get("target-table"),
            last_error=None if stream is None else stream.error,
            last_run=None if last_run is None else JobRun.of(last_run),
        )


class JobList(Body):
    jobs: list[Job]


class JobStreamQuery(Body):
    name: str
    state: StreamQueryState
    restarts: int
    checkpoint: str | None
    last_error: RecordedError | None

    @classmethod
    def of(cls, query: StreamQueryRecord) -> JobStreamQuery:
        return cls.from_record(query, last_error=query.error)


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

    @classmethod
    def of(cls, version: JobVersionRecord) -> JobVersion:
        return cls.model_validate(version)


class JobHistory(Body):
    name: str
    versions: list[JobVersion]
    decisions: list[Decision]


class JobRunList(Body):
    runs: list[JobRun]
