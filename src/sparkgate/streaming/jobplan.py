"""What a stream job needs next, decided from what the store says about it. Pure.

The supervisor duty reads each active job (its session, the session's statements while the
script runs, its queries), asks ``plan`` what to do, and does it with compare-and-set writes;
a decision made on a stale read loses its race and is simply planned again next round.

    plan(situation, policy, now=time.time())  ->  Launch() | MarkRunning() | Relaunch(...) | ...
"""

from __future__ import annotations

import random
from collections.abc import Callable
from dataclasses import dataclass, replace

from sparkgate.recorded import Failed, RecordedError, SessionEnded
from sparkgate.sql.errors import SqlError
from sparkgate.sql.script import split_script
from sparkgate.states import (
    ACTIVE_STREAM_QUERY_STATES,
    TERMINAL_SESSION_STATES,
    StatementState,
    StreamJobState,
    StreamQueryState,
)
from sparkgate.store.records import (
    SessionRecord,
    StatementRecord,
    StreamJobRecord,
    StreamQueryRecord,
)
from sparkgate.stream_spec import RetryPolicy
from sparkgate.streaming.backoff import after_failure, is_stable


@dataclass(frozen=True)
class Situation:
    job: StreamJobRecord
    session: SessionRecord | None  # the session running it now (or last)
    statements: list[StatementRecord]  # the session's, in order (read while starting)
    queries: list[StreamQueryRecord]


@dataclass(frozen=True)
class Launch:
    """Open a new streaming session that runs the script (the queries resume from their
    checkpoints)."""


@dataclass(frozen=True)
class MarkRunning:
    """Every statement of the script succeeded."""


@dataclass(frozen=True)
class Relaunch:
    """The session or its engine was lost: launch again after ``delay``."""

    delay: float
    failures: int
    error: RecordedError


@dataclass(frozen=True)
class Stop:
    """Stop the queries at a batch boundary; the job ends ``stopped`` (STOPPING) or ``failed``
    (FAILING, with ``error``) once they have."""

    to: StreamJobState
    error: RecordedError | None


@dataclass(frozen=True)
class Finish:
    """Nothing runs any more: the job becomes ``to``; a session still open is ended."""

    to: StreamJobState
    error: RecordedError | None


@dataclass(frozen=True)
class ResetFailures:
    """The job has run healthily for the stable period: relaunch backoff starts over."""


Action = Launch | MarkRunning | Relaunch | Stop | Finish | ResetFailures


def plan(
    situation: Situation,
    policy: RetryPolicy,
    *,
    now: float,
    rand: Callable[[], float] = random.random,
) -> Action | None:
    """The next step for the job, or None when it only has to wait."""
    job = situation.job
    state = job.state
    if state is StreamJobState.PENDING:
        return Launch()
    if state is StreamJobState.RESTARTING:
        due = job.next_restart_at is None or job.next_restart_at <= now
        return Launch() if due else None
    session = situation.session
    session_gone = session is None or session.state in TERMINAL_SESSION_STATES
    # Rows left by an earlier run (another session) are not this run's news.
    current = [q for q in situation.queries if q.session_id == job.session_id]
    active = [q for q in current if q.state in ACTIVE_STREAM_QUERY_STATES]
    if state in (StreamJobState.STOPPING, StreamJobState.FAILING):
        if session_gone or not active:
            to = (
                StreamJobState.FAILED if state is StreamJobState.FAILING else StreamJobState.STOPPED
            )
            return Finish(to, job.error if to is StreamJobState.FAILED else None)
        return None
    if state not in (StreamJobState.STARTING, StreamJobState.RUNNING):
        return None
    failed = next((q for q in current if q.state is StreamQueryState.FAILED), None)
    if failed is not None:
        error = (failed.error or Failed("The stream query failed.").recorded()).with_params(
            query=failed.name
        )
        if active and not session_gone:
            return Stop(StreamJobState.FAILING, error)
        return Finish(StreamJobState.FAILED, error)
    if session_gone:
        return _lost(situation, policy, now, rand)
    if state is StreamJobState.STARTING:
        bad = next((s for s in situation.statements if s.state is StatementState.FAILED), None)
        if bad is not None:
            error = script_error(job.sql, bad) if job.steps is None else step_error(job, bad)
            if active:
                return Stop(StreamJobState.FAILING, error)
            return Finish(StreamJobState.FAILED, error)
        done = situation.statements and all(
            s.state is StatementState.SUCCESS for s in situation.statements
        )
        expected = len(job.steps) if job.steps is not None else len(split_script(job.sql))
        return MarkRunning() if done and len(situation.statements) == expected else None
    running_for = now - (job.running_since or now)
    progressed = any(
        q.progress_at is not None and q.progress_at >= (job.running_since or now) for q in current
    )
    if job.failures and is_stable(policy, running_for=running_for, made_progress=progressed):
        return ResetFailures()
    return None


def _lost(
    situation: Situation, policy: RetryPolicy, now: float, rand: Callable[[], float]
) -> Action:
    job, session = situation.job, situation.session
    ended = session.error if session is not None else None
    ended = ended or SessionEnded("The job's session ended.").recorded()
    message = f"Stream job '{job.name}' lost its session: {ended.message}"
    since = job.running_since
    progressed = since is not None and any(
        q.progress_at is not None and q.progress_at >= since for q in situation.queries
    )
    decision = after_failure(
        policy,
        job.failures,
        ran_for=now - since if since is not None else 0.0,
        made_progress=progressed,
        rand=rand,
    )
    if decision.delay is None:
        message += f" Not relaunched: {decision.reason}."
        return Finish(StreamJobState.FAILED, replace(ended, message=message))
    return Relaunch(decision.delay, decision.failures, replace(ended, message=message))


def step_error(job: StreamJobRecord, statement: StatementRecord) -> RecordedError:
    """A failed step's error, in a script of steps: ``statement`` is the step's number and
    ``statement_kind`` its kind; line and position stay the step's own."""
    error = statement.error or Failed("The statement failed.").recorded()
    return error.with_params(statement=statement.seq + 1, statement_kind=statement.kind.value)


def script_error(sql: str, statement: StatementRecord) -> RecordedError:
    """A failed statement's error, placed in the job's script (line and position of the
    script, ``statement`` its 1-based number)."""
    number = statement.seq + 1
    error = (statement.error or Failed("The statement failed.").recorded()).with_params(
        statement=number
    )
    try:
        parts = split_script(sql)
    except SqlError:
        return error
    if number > len(parts):
        return error
    part = parts[number - 1]
    line = error.param("line")
    if isinstance(line, int):
        position = error.param("position") or 1
        return error.with_params(
            line=part.line + line - 1,
            position=position + (part.position - 1 if line == 1 else 0),
        )
    return error.with_params(line=part.line, position=part.position)
