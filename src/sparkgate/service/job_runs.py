"""Runs of batch jobs: ``sparkgate jobs run NAME`` (``POST /v1/jobs/{name}/runs``). Server side.

A run opens an interactive session (with the job's ``properties`` as its conf) and runs the
job's steps in it one after the other: the shared definitions it uses and its ``sources``,
its ``code`` if it has some, then ``CREATE OR REPLACE TABLE <target> AS SELECT ...``, which
sparkgate runs two-phase, so readers see the old table or the new one, whole. A step is
submitted only once the one before it succeeded: a failed source never lets the write run.
The ``job-runs`` duty (on whichever node holds its lease) submits the next step and settles
the run, and ends its session.

    run = runner.start("daily_totals")     # running; then succeeded, failed or cancelled
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Mapping
from typing import Protocol

from sparkgate.errors.jobs import JobNotBatch, JobRemoved
from sparkgate.recorded import Failed, JobRunLost, RecordedError, SessionEnded
from sparkgate.states import (
    ACTIVE_SESSION_STATES,
    JobRunState,
    SessionKind,
    SessionState,
    StatementKind,
    StatementState,
)
from sparkgate.store import Store
from sparkgate.store.records import JobRunRecord, SessionRecord, StatementRecord
from sparkgate.store.session_attributes import SessionAttributes

log = logging.getLogger("sparkgate.jobs")

# A run whose session was never recorded (its node died while opening it) is failed after this.
_OPEN_GRACE = 60.0
_WAITING = frozenset(
    {
        StatementState.QUEUED,
        StatementState.WAITING,
        StatementState.RUNNING,
        StatementState.CANCELLING,
    }
)


class SessionControl(Protocol):
    """What job runs ask of the service's sessions (``service.sessions.Sessions``); a protocol,
    so that jobs stay below the service that offers them to users."""

    def open(
        self,
        kind: SessionKind,
        *,
        name: str | None = None,
        conf: dict[str, str] | None = None,
        owner: str | None = None,
        attributes: SessionAttributes | None = None,
        first_statement: tuple[StatementKind, str] | None = None,
        tags: Mapping[str, str] | None = None,
    ) -> tuple[SessionRecord, StatementRecord | None]: ...

    def kill(self, session_id: int) -> SessionRecord: ...


class JobRunner:
    def __init__(
        self, store: Store, sessions: SessionControl, *, clock: Callable[[], float] = time.time
    ) -> None:
        self.store = store
        self.sessions = sessions
        self.clock = clock

    def start(self, name: str, *, user: str | None = None) -> JobRunRecord:
        """Run a batch job's current version; the run is ``running`` at once. Its session is
        ``user``'s (who started the run)."""
        job = self.store.jobs.get(name)
        if job.removed:
            raise JobRemoved(name)
        if not job.batch:
            raise JobNotBatch(name, job.mode)
        run = self.store.job_runs.add(name, job.version, job.steps, now=self.clock())
        first = job.steps[0]
        session, statement = self.sessions.open(
            SessionKind.INTERACTIVE,
            name=f"job:{name}",
            owner=user,
            conf=dict(job.manifest.get("properties") or {}),
            attributes=SessionAttributes(job=name, job_run=run.id, job_version=job.version),
            first_statement=(StatementKind(first["kind"]), first["code"]),
            tags=job.manifest.get("tags"),
        )
        assert statement is not None
        with self.store.db.begin() as conn:
            self.store.job_runs.update(run.id, session_id=session.id, conn=conn)
            self.store.job_runs.advance(run.id, submitted=0, statement_id=statement.id, conn=conn)
        return self.store.job_runs.get(run.id)

    def cancel(self, run_id: int) -> JobRunRecord:
        """Stop a run: its session is killed (a write under way is aborted, nothing shows)."""
        run = self.store.job_runs.get(run_id)
        if run.state is JobRunState.RUNNING and run.session_id is not None:
            self.sessions.kill(run.session_id)
        self.supervise(self.clock())
        return self.store.job_runs.get(run_id)

    # -- the job-runs duty ---------------------------------------------------------------

    def supervise(self, now: float) -> None:
        """Move every running run on: submit its next step, or settle it."""
        for run in self.store.job_runs.running():
            try:
                self._advance(run, now)
            except _LostRace:
                continue
            except Exception:
                log.exception("job run %s could not be moved on", run.id)

    def _advance(self, run: JobRunRecord, now: float) -> None:
        if run.session_id is None or run.statement_id is None:
            if now - run.created_at > _OPEN_GRACE:
                error = JobRunLost("Its session was never opened.").recorded()
                self._end(run, JobRunState.FAILED, error, now)
            return
        session = self.store.sessions.get(run.session_id)
        statement = self.store.statements.get(run.statement_id)
        ended = session.state not in ACTIVE_SESSION_STATES
        if statement.state in _WAITING:
            if ended:  # its engine died, or someone killed the session
                to = JobRunState.CANCELLED if session.state is SessionState.KILLED else None
                self._end(run, to or JobRunState.FAILED, _ended(session.error), now)
            return
        total = len(run.steps)
        if statement.state is StatementState.SUCCESS and run.step < total:
            if ended:
                self._end(run, JobRunState.FAILED, _ended(session.error), now)
                return
            step = run.steps[run.step]
            # Each step waits its turn in the group the run's first step was placed in.
            place = self.store.resource_groups.where(statement.id)
            with self.store.db.begin() as conn:
                added = self.store.statements.add(
                    session.id,
                    step["code"],
                    now=now,
                    kind=StatementKind(step["kind"]),
                    resource_group=None if place is None else place.resource_group,
                    tags=session.attributes.tags,
                    conn=conn,
                )
                if not self.store.job_runs.advance(
                    run.id, submitted=run.step, statement_id=added.id, conn=conn
                ):
                    raise _LostRace  # another node submitted it: roll this one back
            return
        if statement.state is StatementState.SUCCESS:
            self._end(run, JobRunState.SUCCEEDED, None, now)
        elif statement.state is StatementState.CANCELLED:
            self._end(run, JobRunState.CANCELLED, statement.error, now)
        else:
            failure = (statement.error or Failed("The step failed.").recorded()).with_params(
                step=run.step, steps=total, query_id=statement.id
            )
            self._end(run, JobRunState.FAILED, failure, now)

    def _end(
        self, run: JobRunRecord, to: JobRunState, error: RecordedError | None, now: float
    ) -> None:
        moved = self.store.transitions.job_run(
            run.id, to, now=now, expected=[JobRunState.RUNNING], error=error
        )
        if moved.applied and run.session_id is not None:
            session = self.store.sessions.find(run.session_id)
            if session is not None and session.state in ACTIVE_SESSION_STATES:
                self.sessions.kill(session.id)
        log.info("job run %s of %s: %s", run.id, run.job, moved.state)


def _ended(error: RecordedError | None) -> RecordedError:
    return error or SessionEnded("Its session ended.").recorded()


class _LostRace(Exception):
    """Another writer moved the run on first; nothing to do this round."""
