"""Durable stream jobs: what sparkgate does for them, whichever API asks, and the supervisor
duty that keeps them running. Server side: no Spark here.

A stream job is a named script (CREATE STREAM, views, SAVE STREAM) that sparkgate runs in a
streaming session and keeps running: when the session or its engine is lost, whichever server
node holds the ``streams`` lease relaunches the script in a new session, on a live engine, and
every query resumes from its checkpoint (``<checkpoint root>/<query name>``).

    streams.create("clicks", "CREATE STREAM r USING rate; SAVE STREAM r TO console")
    streams.stop("clicks")    # at a micro-batch boundary
    streams.start("clicks")   # again, from the checkpoints
"""

from __future__ import annotations

import logging
import random
import re
import shutil
import time
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any, Protocol

from sparkgate.auth.principal import share_key
from sparkgate.errors import InvalidRequest, NoResourceGroup, QueueFull, QuotaExceeded
from sparkgate.errors.streams import StreamJobBusy
from sparkgate.recorded import ErrorCode, RecordedError, SessionEnded
from sparkgate.settings import Settings
from sparkgate.states import (
    ACTIVE_SESSION_STATES,
    INACTIVE_STREAM_JOB_STATES,
    LIVE_ENGINE_STATES,
    SessionKind,
    StreamJobState,
    StreamQueryState,
)
from sparkgate.store import Store
from sparkgate.store.records import SessionRecord, StreamJobRecord, Window
from sparkgate.store.session_attributes import SessionAttributes
from sparkgate.streaming.definitions import retry_defaults
from sparkgate.streaming.jobplan import (
    Action,
    Finish,
    Launch,
    MarkRunning,
    Relaunch,
    ResetFailures,
    Situation,
    Stop,
    plan,
)
from sparkgate.streaming.script import (
    Step,
    StreamScript,
    check_script,
    launch_steps,
    script_of,
)

log = logging.getLogger("sparkgate.streams")

_J = StreamJobState
_Q = StreamQueryState
_JOB_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]{0,127}")
_RUNNING_QUERY = [_Q.STARTING, _Q.RUNNING, _Q.RESTARTING]
_ACTIVE_QUERY = [_Q.STARTING, _Q.RUNNING, _Q.RESTARTING, _Q.STOPPING]
# A starting job's session runs its few statements: read them all, uncounted.
_EVERY_STATEMENT = Window(limit=10_000, count=False)
# A job whose next launch can be redefined: nothing is being launched or stopped right now.
_REDEFINABLE = frozenset({_J.PENDING, _J.RUNNING, _J.RESTARTING, _J.STOPPED, _J.FAILED})


class LostRace(Exception):
    """A compare-and-set lost to another writer: roll back, plan again next round."""


class SessionControl(Protocol):
    """What supervision asks of the service's sessions (``service.sessions.Sessions``); a
    protocol, so that streaming stays below the service that offers stream jobs to users."""

    def place(self, session: SessionRecord, *, fresh: bool = False) -> SessionRecord | None: ...

    def kill(self, session_id: int) -> SessionRecord: ...

    def group_for_owner(
        self,
        owner: str | None,
        kind: SessionKind,
        attributes: SessionAttributes,
        tags: Mapping[str, str] | None = None,
    ) -> str | None: ...


class Streams:
    def __init__(
        self,
        settings: Settings,
        store: Store,
        sessions: SessionControl,
        *,
        clock: Callable[[], float] = time.time,
        rand: Callable[[], float] = random.random,
    ) -> None:
        self.settings = settings
        self.store = store
        self.sessions = sessions
        self.clock = clock
        self.rand = rand

    # -- requests ------------------------------------------------------------------------

    def check(self, sql: str, conf: dict[str, str] | None = None) -> StreamScript:
        """Parse and check a script as a job would run it; raises SqlError (422)."""
        inference = (conf or {}).get("spark.sql.streaming.schemaInference", "false")
        return check_script(
            sql, retry_defaults(self.settings), schema_inference=inference.lower() == "true"
        )

    def create(
        self,
        name: str,
        script: str | list[Step],
        *,
        conf: dict[str, str] | None = None,
        checkpoint_root: str | None = None,
        owner: str | None = None,
    ) -> StreamJobRecord:
        """Check and record a job; the supervisor duty launches it within a second or so.
        ``script``: SQL, or steps (SQL and PySpark) run in order. Its sessions are ``owner``'s."""
        _check_name(name)
        _check_root(checkpoint_root)
        sql, steps = _script(script)
        self.check(sql, conf)
        return self.store.stream_jobs.add(
            name,
            sql,
            now=self.clock(),
            conf=conf,
            checkpoint_root=checkpoint_root,
            steps=steps,
            owner=owner,
        )

    def redefine(
        self,
        name: str,
        *,
        sql: str | list[Step] | None = None,
        conf: dict[str, str] | None = None,
        checkpoint_root: str | None = None,
    ) -> StreamJobRecord:
        """Change a stopped or failed job (its next start runs the new definition)."""
        return self._redefine(name, sql, conf, checkpoint_root, INACTIVE_STREAM_JOB_STATES)

    def redefine_running(
        self, name: str, *, sql: str | list[Step] | None = None, conf: dict[str, str] | None = None
    ) -> StreamJobRecord:
        """Change what a job runs from its next launch on, without touching what runs now: a
        running job keeps its queries, and a relaunch (its engine lost) or a start after a stop
        runs the new script. Also for a stopped or failed job, or one waiting to be launched;
        refused (StreamJobActive) while it is starting or stopping: try again when it is not."""
        return self._redefine(name, sql, conf, None, _REDEFINABLE)

    def _redefine(
        self,
        name: str,
        script: str | list[Step] | None,
        conf: dict[str, str] | None,
        checkpoint_root: str | None,
        states: frozenset[StreamJobState],
    ) -> StreamJobRecord:
        _check_root(checkpoint_root)
        current = self.store.stream_jobs.get(name)
        sql = steps = None
        if script is not None:
            sql, steps = _script(script)
        if sql is not None or conf is not None:
            self.check(sql if sql is not None else current.sql, conf or current.conf)
        return self.store.stream_jobs.redefine(
            name,
            now=self.clock(),
            sql=sql,
            steps=steps,
            conf=conf,
            checkpoint_root=checkpoint_root,
            states=states,
        )

    def start(self, name: str) -> StreamJobRecord:
        """Start a stopped or failed job again, with fresh failure counts; a job that runs
        already is left as it is."""
        for _ in range(3):
            job = self.store.stream_jobs.get(name)
            if job.state in (_J.STOPPING, _J.FAILING):
                raise StreamJobBusy(name, job.state.value)
            if job.state not in (_J.STOPPED, _J.FAILED):
                return job
            with self.store.db.begin() as conn:
                moved = self.store.transitions.stream_job(
                    job.id,
                    _J.PENDING,
                    now=self.clock(),
                    expected=[job.state],
                    conn=conn,
                    failures=0,
                    error=None,
                    next_restart_at=None,
                    finished_at=None,
                )
                if moved.applied:
                    self.store.stream_queries.reset_failures_of_job(job.id, conn=conn)
            if moved.applied:
                break
        return self.store.stream_jobs.get(name)

    def stop(self, name: str) -> StreamJobRecord:
        """Stop a job: its queries stop at a micro-batch boundary, leaving consistent
        checkpoints, then the job is ``stopped``. Stopping a stopped job changes nothing."""
        for _ in range(3):
            job = self.store.stream_jobs.get(name)
            now = self.clock()
            if job.state in (_J.PENDING, _J.RESTARTING):
                # Nothing runs: no engine has to be asked.
                if self._finish(job, _J.STOPPED, None, now, kill=False):
                    break
            elif job.state in (_J.STARTING, _J.RUNNING):
                if self._begin_stop(job, _J.STOPPING, None, now):
                    break
            else:
                break
        return self.store.stream_jobs.get(name)

    def delete(self, name: str, *, keep_checkpoints: bool = False) -> StreamJobRecord:
        """Forget a stopped or failed job; its checkpoints go too when they are in the
        server's checkpoint directory (unless ``keep_checkpoints``)."""
        job = self.store.stream_jobs.delete(name)
        if not keep_checkpoints and job.checkpoint_root is None:
            shutil.rmtree(self.settings.resolved_checkpoints_dir / job.name, ignore_errors=True)
        elif not keep_checkpoints and job.checkpoint_root is not None:
            root = Path(job.checkpoint_root)
            base = self.settings.resolved_checkpoints_dir
            # Only a directory of its own inside the server's checkpoints: never the whole
            # checkpoint directory, never someone else's path.
            if (
                root.is_absolute()
                and root.resolve() != base
                and root.resolve().is_relative_to(base)
            ):
                shutil.rmtree(root, ignore_errors=True)
        return job

    # -- the supervisor duty -------------------------------------------------------------

    def supervise(self, now: float) -> None:
        """One round of the ``streams`` duty: move every active job on, and settle queries
        whose interactive session ended with its engine."""
        policy = retry_defaults(self.settings)
        for job in self.store.stream_jobs.active():
            try:
                situation = self._situation(job)
                action = plan(situation, policy, now=now, rand=self.rand)
                if action is not None:
                    self._apply(situation, action, now)
            except LostRace:
                continue
            except QueueFull as exc:  # launched again next round, when its queue has room
                log.warning("stream job %s waits to launch: %s", job.name, exc.message)
            except Exception:
                log.exception("supervising stream job %s failed", job.name)
        self._settle_orphans(now)

    def _situation(self, job: StreamJobRecord) -> Situation:
        session = None if job.session_id is None else self.store.sessions.find(job.session_id)
        statements = []
        if job.state is _J.STARTING and session is not None:
            statements = self.store.statements.list_page(
                session_id=session.id, window=_EVERY_STATEMENT
            ).items
        return Situation(job, session, statements, self.store.stream_queries.of_job(job.id))

    def _apply(self, situation: Situation, action: Action, now: float) -> None:
        job = situation.job
        log.info("stream job %s (%s): %s", job.name, job.state.value, action)
        if isinstance(action, Launch):
            self._launch(job, now)
        elif isinstance(action, MarkRunning):
            self.store.transitions.stream_job(
                job.id,
                _J.RUNNING,
                now=now,
                expected=[_J.STARTING],
                expected_version=job.version,
                running_since=now,
            )
        elif isinstance(action, Relaunch):
            self._relaunch_later(job, action, now)
        elif isinstance(action, Stop):
            self._begin_stop(job, action.to, action.error, now)
        elif isinstance(action, Finish):
            self._finish(job, action.to, action.error, now, kill=True)
        elif isinstance(action, ResetFailures):
            self.store.stream_jobs.update(job.id, failures=0)

    def _launch(self, job: StreamJobRecord, now: float) -> None:
        steps = launch_steps(job.sql, job.steps)
        relaunch = job.state is _J.RESTARTING
        attributes = SessionAttributes(
            stream_job=job.name, stream_job_id=job.id, revision=job.revision
        )
        try:
            # Its steps wait their turns in a resource group, and its last holds one while
            # the job's session lives (store.resource_groups).
            group = self.sessions.group_for_owner(job.owner, SessionKind.STREAMING, attributes)
        except (NoResourceGroup, QuotaExceeded) as exc:
            self._finish(job, _J.FAILED, exc.recorded(), now, kill=False)
            return
        with self.store.db.begin() as conn:
            session = self.store.sessions.add(
                SessionKind.STREAMING,
                now=now,
                name=f"stream:{job.name}",
                conf=job.conf,
                owner=job.owner,
                # A job's engine hosts only its owner's jobs, as interactive engines do.
                share_key=(
                    None if job.owner is None else share_key(self.settings.share_level, job.owner)
                ),
                attributes=attributes,
                conn=conn,
            )
            for step in steps:
                self.store.statements.add(
                    session.id,
                    step.code,
                    now=now,
                    kind=step.kind,
                    resource_group=group,
                    conn=conn,
                )
            moved = self.store.transitions.stream_job(
                job.id,
                _J.STARTING,
                now=now,
                expected=[job.state],
                expected_version=job.version,
                conn=conn,
                session_id=session.id,
                restarts=job.restarts + (1 if relaunch else 0),
                next_restart_at=None,
                running_since=None,
                finished_at=None,
            )
            if not moved.applied:
                raise LostRace  # rolls the session back: it never existed
            if relaunch:
                latest = self.store.stream_queries.restarts(job_id=job.id, limit=1)
                if latest and latest[0].restarted_at is None:
                    self.store.stream_queries.mark_restarted(latest[0].id, now=now, conn=conn)
        self.sessions.place(self.store.sessions.get(session.id))

    def _relaunch_later(self, job: StreamJobRecord, action: Relaunch, now: float) -> None:
        with self.store.db.begin() as conn:
            moved = self.store.transitions.stream_job(
                job.id,
                _J.RESTARTING,
                now=now,
                expected=[job.state],
                expected_version=job.version,
                conn=conn,
                failures=action.failures,
                next_restart_at=now + action.delay,
                error=action.error,
                running_since=None,
            )
            if not moved.applied:
                raise LostRace
            self.store.transitions.stream_queries_of_job(
                job.id,
                _Q.RESTARTING,
                now=now,
                expected=[_Q.STARTING, _Q.RUNNING],
                conn=conn,
                error=action.error,
                next_restart_at=None,
            )
            self.store.stream_queries.add_restart(
                job_id=job.id,
                query_id=None,
                attempt=action.failures,
                failed_at=now,
                delay=action.delay,
                error=action.error,
                conn=conn,
            )
        log.warning(
            "stream job %s lost its session; relaunch %s in %.3fs",
            job.name,
            action.failures,
            action.delay,
        )

    def _begin_stop(
        self, job: StreamJobRecord, to: StreamJobState, error: RecordedError | None, now: float
    ) -> bool:
        extra: dict[str, Any] = {"error": error} if error is not None else {}
        with self.store.db.begin() as conn:
            moved = self.store.transitions.stream_job(
                job.id, to, now=now, expected=[job.state], conn=conn, **extra
            )
            if moved.applied:
                self.store.transitions.stream_queries_of_job(
                    job.id, _Q.STOPPING, now=now, expected=_RUNNING_QUERY, conn=conn
                )
        return moved.applied

    def _finish(
        self,
        job: StreamJobRecord,
        to: StreamJobState,
        error: RecordedError | None,
        now: float,
        *,
        kill: bool,
    ) -> bool:
        with self.store.db.begin() as conn:
            moved = self.store.transitions.stream_job(
                job.id,
                to,
                now=now,
                expected=[job.state],
                conn=conn,
                error=error,
                next_restart_at=None,
                running_since=None,
            )
            if moved.applied:
                self.store.transitions.stream_queries_of_job(
                    job.id, _Q.STOPPED, now=now, expected=_ACTIVE_QUERY, conn=conn
                )
        if moved.applied and kill and job.session_id is not None:
            session = self.store.sessions.find(job.session_id)
            if session is not None and session.state in ACTIVE_SESSION_STATES:
                self.sessions.kill(session.id)
        return moved.applied

    def _settle_orphans(self, now: float) -> None:
        """Interactive-session queries left active by a session that ended: the engine stops
        them when it can; when it is gone (or too slow), the store is told here."""
        grace = self.settings.stream_stop_timeout + self.settings.engine_heartbeat_timeout
        for query, session_error, ended_at in self.store.stream_queries.orphaned():
            engine = None if query.engine_id is None else self.store.engines.find(query.engine_id)
            engine_live = engine is not None and engine.state in LIVE_ENGINE_STATES
            if engine_live and ended_at is not None and now - ended_at < grace:
                continue
            error = session_error or SessionEnded("Its session ended.").recorded()
            lost = error.code == ErrorCode.ENGINE_LOST or not engine_live
            self.store.transitions.stream_query(
                query.id,
                _Q.FAILED if lost else _Q.STOPPED,
                now=now,
                expected=_ACTIVE_QUERY,
                error=error,
                next_restart_at=None,
            )


def _script(script: str | list[Step]) -> tuple[str, list[dict[str, str]] | None]:
    """(sql, steps to store) of a script given as SQL or as steps; raises SqlError."""
    return (script, None) if isinstance(script, str) else script_of(script)


def _check_name(name: str) -> None:
    if not _JOB_NAME.fullmatch(name):
        raise InvalidRequest(
            f"'{name}' cannot name a stream job (it names its checkpoint directory): use "
            "letters, digits, '_', '-' and '.', starting with a letter or digit, at most 128.",
            field="name",
        )


def _check_root(root: str | None) -> None:
    if root is not None and not (root.startswith("/") or re.match(r"[A-Za-z][\w+.-]*://", root)):
        raise InvalidRequest(
            f"checkpoint_root '{root}' must be an absolute path or a URI (hdfs://..., s3a://...).",
            field="checkpoint_root",
        )
