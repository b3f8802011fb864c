"""Deployed jobs and their versions, deployments with their decisions, and batch job runs.
State changes (of deployments and runs) go through ``transitions``; everything else is here.

jobs = store.jobs
job = jobs.add_version("clicks", "streaming", 1, manifest, fingerprints, now=time.time())
deployment = store.deployments.add(plan, files=files, node_id="n1", lease_owner="n1/x", now=t)
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

import sqlalchemy as sa
from sqlalchemy.engine import Connection

from sparkgate.errors.jobs import DeploymentNotFound, JobNotFound, JobRunNotFound
from sparkgate.recorded import RecordedError
from sparkgate.states import DeploymentState, JobRunState
from sparkgate.store.database import Database
from sparkgate.store.pages import read_page
from sparkgate.store.records import (
    FIRST_PAGE,
    DeploymentFiles,
    DeploymentRecord,
    JobDecisionRecord,
    JobRecord,
    JobRunRecord,
    JobVersionRecord,
    Page,
    Window,
)
from sparkgate.store.schema import deployments, job_decisions, job_runs, job_versions, jobs

# Read every round of the node's duties (deployments, job runs): built once.
_RUNNING_DEPLOYMENTS = (
    sa.select(deployments)
    .where(deployments.c.state == DeploymentState.RUNNING.value)
    .order_by(deployments.c.id.desc())
)
_RUNNING_RUNS = (
    sa.select(job_runs).where(job_runs.c.state == JobRunState.RUNNING.value).order_by(job_runs.c.id)
)


@dataclass(frozen=True)
class Fingerprints:
    """What a deploy compares; see ``sparkgate.jobs.fingerprint``."""

    query: str
    config: str
    supervision: str


@dataclass(frozen=True)
class PlannedDecision:
    """One line of a deploy plan, as recorded (``jobs.plan.Action`` in store terms)."""

    job: str
    from_version: int | None
    to_version: int | None
    action: str
    reason: str


class Jobs:
    def __init__(self, db: Database) -> None:
        self._db = db

    def find(self, name: str) -> JobRecord | None:
        with self._db.read() as conn:
            row = conn.execute(sa.select(jobs).where(jobs.c.name == name)).mappings().first()
        return None if row is None else JobRecord.from_row(row)

    def get(self, name: str) -> JobRecord:
        """A job, removed ones included (their history stays readable)."""
        record = self.find(name)
        if record is None:
            raise JobNotFound(name)
        return record

    def all(self, *, removed: bool = True) -> list[JobRecord]:
        """Every job by name; ``removed=False`` leaves out pruned ones."""
        query = sa.select(jobs).order_by(jobs.c.name)
        if not removed:
            query = query.where(jobs.c.removed.is_(False))
        with self._db.read() as conn:
            return [JobRecord.from_row(r) for r in conn.execute(query).mappings()]

    def add_version(
        self,
        name: str,
        mode: str,
        version: int,
        manifest: dict[str, Any],
        fingerprints: Fingerprints,
        *,
        query_id: str,
        now: float,
        steps: list[dict[str, str]] | None = None,
    ) -> JobRecord:
        """Make ``version`` the job's current one (a new query id and time, not started yet,
        not removed), recording it in the job's history; creates the job if it is new.
        ``steps`` (what it runs) are set with ``set_steps`` once its metadata is known."""
        values = {
            "mode": mode,
            "version": version,
            "manifest": manifest,
            "steps": steps or [],
            "query_fingerprint": fingerprints.query,
            "config_fingerprint": fingerprints.config,
            "supervision_fingerprint": fingerprints.supervision,
            "query_id": query_id,
            "query_created_at": now,
            "started_before": False,
            "removed": False,
            "updated_at": now,
        }
        with self._db.begin() as conn:
            updated = conn.execute(jobs.update().where(jobs.c.name == name).values(**values))
            if updated.rowcount == 0:
                conn.execute(jobs.insert().values(name=name, created_at=now, **values))
            conn.execute(
                job_versions.insert().values(
                    name=name, version=version, manifest=manifest, query_id=query_id, created_at=now
                )
            )
        return self.get(name)

    def update_manifest(
        self, name: str, manifest: dict[str, Any], fingerprints: Fingerprints, *, now: float
    ) -> JobRecord:
        """Record a changed manifest that keeps the current version (and its state)."""
        self._update(
            name,
            manifest=manifest,
            query_fingerprint=fingerprints.query,
            config_fingerprint=fingerprints.config,
            supervision_fingerprint=fingerprints.supervision,
            updated_at=now,
        )
        return self.get(name)

    def set_steps(self, name: str, steps: list[dict[str, str]], *, now: float) -> None:
        self._update(name, steps=steps, updated_at=now)

    def mark_started(self, name: str, version: int) -> None:
        """The version has run: from now on, its checkpoint is state worth keeping."""
        with self._db.begin() as conn:
            conn.execute(
                jobs.update()
                .where(jobs.c.name == name, jobs.c.version == version)
                .values(started_before=True)
            )

    def mark_removed(self, name: str, *, now: float) -> None:
        self._update(name, removed=True, updated_at=now)

    def _update(self, name: str, **values: Any) -> None:
        with self._db.begin() as conn:
            if conn.execute(jobs.update().where(jobs.c.name == name).values(**values)).rowcount:
                return
        raise JobNotFound(name)

    def versions(self, name: str) -> list[JobVersionRecord]:
        """The job's versions, newest first."""
        query = (
            sa.select(job_versions)
            .where(job_versions.c.name == name)
            .order_by(job_versions.c.version.desc())
        )
        with self._db.read() as conn:
            return [JobVersionRecord.from_row(r) for r in conn.execute(query).mappings()]


class Deployments:
    def __init__(self, db: Database) -> None:
        self._db = db

    def add(
        self,
        decisions: Sequence[PlannedDecision],
        *,
        files: DeploymentFiles,
        now: float,
        plan_only: bool = False,
        prune: bool = False,
        node_id: str | None = None,
        lease_owner: str | None = None,
        owner: str | None = None,
    ) -> DeploymentRecord:
        """Record a deploy with its plan: ``running``, every decision ``planned`` (its node
        carries them out); or, a plan only (``--plan``), ``succeeded`` at once, every decision
        ``plan-only`` (nothing is done)."""
        state = DeploymentState.SUCCEEDED if plan_only else DeploymentState.RUNNING
        with self._db.begin() as conn:
            row = (
                conn.execute(
                    deployments.insert()
                    .values(
                        state=state.value,
                        plan_only=plan_only,
                        prune=prune,
                        owner=owner,
                        node_id=node_id,
                        lease_owner=lease_owner,
                        files=files.to_json(),
                        version=1,
                        created_at=now,
                        finished_at=now if plan_only else None,
                        updated_at=now,
                    )
                    .returning(*deployments.c)
                )
                .mappings()
                .one()
            )
            if decisions:
                conn.execute(
                    job_decisions.insert(),
                    [
                        {
                            "deployment_id": row["id"],
                            "seq": seq,
                            "job": d.job,
                            "from_version": d.from_version,
                            "to_version": d.to_version,
                            "action": d.action,
                            "reason": d.reason,
                            "outcome": "plan-only" if plan_only else "planned",
                        }
                        for seq, d in enumerate(decisions)
                    ],
                )
        return DeploymentRecord.from_row(row)

    def find(self, deployment_id: int) -> DeploymentRecord | None:
        with self._db.read() as conn:
            row = (
                conn.execute(sa.select(deployments).where(deployments.c.id == deployment_id))
                .mappings()
                .first()
            )
        return None if row is None else DeploymentRecord.from_row(row)

    def get(self, deployment_id: int) -> DeploymentRecord:
        record = self.find(deployment_id)
        if record is None:
            raise DeploymentNotFound(deployment_id)
        return record

    def find_by_owner(self, lease_owner: str) -> DeploymentRecord | None:
        query = sa.select(deployments).where(deployments.c.lease_owner == lease_owner)
        with self._db.read() as conn:
            row = conn.execute(query).mappings().first()
        return None if row is None else DeploymentRecord.from_row(row)

    def list_page(
        self,
        *,
        states: Iterable[DeploymentState] | None = None,
        owner: str | None = None,
        window: Window = FIRST_PAGE,
    ) -> Page[DeploymentRecord]:
        """Deployments, newest first. ``window``: which page; its ``after`` pages by keyset,
        those older than that id (the page's ``next_after`` is the one to pass next);
        ``count=False`` leaves ``total`` None."""
        where: list[sa.ColumnElement[bool]] = []
        if owner is not None:
            where.append(deployments.c.owner == owner)
        if states is not None:
            where.append(deployments.c.state.in_([s.value for s in states]))
        return read_page(
            self._db,
            sa.select(deployments).where(*where),
            sa.select(sa.func.count()).select_from(deployments).where(*where),
            make=DeploymentRecord.from_row,
            by=deployments.c.id,
            descending=True,
            window=window,
        )

    def running(self) -> list[DeploymentRecord]:
        """Running deployments, newest first (read every round of the deployments duty)."""
        with self._db.read() as conn:
            rows = conn.execute(_RUNNING_DEPLOYMENTS).mappings()
            return [DeploymentRecord.from_row(r) for r in rows]

    def decisions(self, deployment_id: int) -> list[JobDecisionRecord]:
        """A deployment's decisions, in plan order."""
        query = (
            sa.select(job_decisions)
            .where(job_decisions.c.deployment_id == deployment_id)
            .order_by(job_decisions.c.seq)
        )
        with self._db.read() as conn:
            return [JobDecisionRecord.from_row(r) for r in conn.execute(query).mappings()]

    def decisions_of_job(self, job: str, *, limit: int = 50) -> list[JobDecisionRecord]:
        """The decisions deploys made about a job (plans included), newest first."""
        query = (
            sa.select(job_decisions)
            .where(job_decisions.c.job == job)
            .order_by(job_decisions.c.id.desc())
            .limit(limit)
        )
        with self._db.read() as conn:
            return [JobDecisionRecord.from_row(r) for r in conn.execute(query).mappings()]

    def set_outcome(
        self,
        decision_id: int,
        outcome: str,
        *,
        now: float,
        note: str | None = None,
        error: RecordedError | None = None,
    ) -> None:
        """``in_progress`` (starts it), then ``done`` or ``failed`` (ends it)."""
        values: dict[str, Any] = {"outcome": outcome}
        if outcome == "in_progress":
            values["started_at"] = now
        else:
            values["finished_at"] = now
        if note is not None:
            values["note"] = note
        if error is not None:
            values["error"] = error.to_json()
        with self._db.begin() as conn:
            conn.execute(
                job_decisions.update().where(job_decisions.c.id == decision_id).values(**values)
            )

    def skip_unfinished(
        self, deployment_id: int, *, now: float, note: str, conn: Connection | None = None
    ) -> None:
        """Decisions the deployment did not get to (or did not finish) end ``skipped``."""
        with self._db.within(conn) as c:
            c.execute(
                job_decisions.update()
                .where(
                    job_decisions.c.deployment_id == deployment_id,
                    job_decisions.c.outcome.in_(["planned", "in_progress"]),
                )
                .values(outcome="skipped", note=note, finished_at=now)
            )


class JobRuns:
    def __init__(self, db: Database) -> None:
        self._db = db

    def add(
        self, job: str, job_version: int, steps: list[dict[str, str]], *, now: float
    ) -> JobRunRecord:
        """A new ``running`` run; its session is set once it is opened."""
        stmt = (
            job_runs.insert()
            .values(
                job=job,
                job_version=job_version,
                state=JobRunState.RUNNING.value,
                steps=steps,
                step=0,
                version=1,
                created_at=now,
                updated_at=now,
            )
            .returning(*job_runs.c)
        )
        with self._db.begin() as conn:
            return JobRunRecord.from_row(conn.execute(stmt).mappings().one())

    def find(self, run_id: int) -> JobRunRecord | None:
        with self._db.read() as conn:
            row = conn.execute(sa.select(job_runs).where(job_runs.c.id == run_id)).mappings()
            first = row.first()
        return None if first is None else JobRunRecord.from_row(first)

    def get(self, run_id: int) -> JobRunRecord:
        record = self.find(run_id)
        if record is None:
            raise JobRunNotFound(run_id)
        return record

    def of_job(self, job: str, *, limit: int = 20) -> list[JobRunRecord]:
        """A job's runs, newest first."""
        query = (
            sa.select(job_runs)
            .where(job_runs.c.job == job)
            .order_by(job_runs.c.id.desc())
            .limit(limit)
        )
        with self._db.read() as conn:
            return [JobRunRecord.from_row(r) for r in conn.execute(query).mappings()]

    def running(self) -> list[JobRunRecord]:
        """Running job runs, oldest first (read every round of the job-runs duty)."""
        with self._db.read() as conn:
            return [JobRunRecord.from_row(r) for r in conn.execute(_RUNNING_RUNS).mappings()]

    def advance(
        self, run_id: int, *, submitted: int, statement_id: int, conn: Connection | None = None
    ) -> bool:
        """Record that step ``submitted`` was submitted as ``statement_id``, if no one else has
        (compare-and-set on the step count); False if another writer got there first."""
        stmt = (
            job_runs.update()
            .where(job_runs.c.id == run_id, job_runs.c.step == submitted)
            .values(step=submitted + 1, statement_id=statement_id)
        )
        with self._db.within(conn) as c:
            return bool(c.execute(stmt).rowcount == 1)

    def update(self, run_id: int, conn: Connection | None = None, **values: Any) -> None:
        """Set bookkeeping columns (session); never ``state``."""
        if "state" in values:
            raise ValueError("job run states change through store.transitions")
        with self._db.within(conn) as c:
            c.execute(job_runs.update().where(job_runs.c.id == run_id).values(**values))
