"""The sessions an engine hosts: opened when the store assigns them (a Spark session with the
session's conf, its user's table rules and UDFs, and a worker thread), closed when the store
ends them, and what they added to the engine released with them.

Apart from the claims because a session lives across many statements: the loop opens and
closes sessions as it reads the store, and claims only ever take a statement for a session
already open here.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from functools import partial
from typing import TYPE_CHECKING

from sparkgate.engine import artifacts
from sparkgate.engine.authz import decider as authz
from sparkgate.engine.claims import statement_ended
from sparkgate.engine.execution import Execution, SessionWorker
from sparkgate.engine.shared import Shared
from sparkgate.engine.udfs import register_udfs
from sparkgate.recorded import ErrorCode, RecordedError
from sparkgate.runtime import statement_thread
from sparkgate.runtime.failures import recorded_failure
from sparkgate.runtime.session import OpenSession
from sparkgate.states import EngineKind, SessionKind, SessionState
from sparkgate.store.records import SessionRecord

if TYPE_CHECKING:
    from pyspark.sql import SparkSession
    from sqlalchemy.engine import Connection

log = logging.getLogger("sparkgate.engine")


class SessionKeeper:
    def __init__(self, shared: Shared, execute: Callable[[Execution], None]) -> None:
        self._shared = shared
        self._execute = execute  # what a session's worker runs each statement with

    def open(self, session: SessionRecord) -> None:
        shared = self._shared
        assert shared.spark is not None and shared.record is not None
        if shared.record.kind is EngineKind.DEDICATED and not shared.served_session:
            # Placement may have made this warm engine a user's shared engine
            # (``claim_warm_as_shared``): its first session says which it serves as.
            shared.record = shared.store.engines.get(shared.engine_id)
        try:
            if shared.record.kind is EngineKind.DEDICATED:
                spark = shared.spark  # the session owns this engine: static conf already applied
                conf = {k: v for k, v in session.conf.items() if shared.record.conf.get(k) != v}
            else:
                spark = shared.spark.newSession()
                conf = session.conf
            for key, value in conf.items():
                spark.conf.set(key, value)
            # Whose table rules this session's plans meet (sparkgate.engine.authz).
            authz.bind(spark, session.owner)
            if shared.decider is not None and session.owner:
                groups = list(session.attributes.groups or ())
                if shared.decider.learn_groups(session.owner, groups):
                    shared.authz.invalidate()
            register_udfs(spark, shared.settings.udf_modules)
        except Exception as exc:
            log.exception("session %s could not start", session.id)
            end_session(
                shared,
                session.id,
                SessionState.ERROR,
                recorded_failure(exc).with_code(ErrorCode.SESSION_START_FAILED),
            )
            return
        opened = OpenSession(session, spark, reuse_context=self._context(spark))
        shared.sessions[session.id] = opened
        shared.workers[session.id] = SessionWorker(
            session.id,
            self._execute,
            partial(statement_ended, shared),
            partial(self._release_files, opened),
        )
        shared.served_session = True
        self.say_open(session.id, partial(self._note_context, session, opened.reuse_context))

    def _context(self, spark: SparkSession) -> str | None:
        """The new session's context (result reuse); None if it cannot be told."""
        try:
            return statement_thread.engine_context(spark)
        except Exception:
            log.exception("reading a session's context for result reuse failed")
            return None

    def _note_context(self, session: SessionRecord, context: str | None, conn: Connection) -> None:
        """Recorded with the session's opening, for the node to look up its first query's
        repeat: an interactive session's as its own; a one-off query's without settings of
        its own as what this engine's fresh sessions start with."""
        shared = self._shared
        if not shared.store.reuse.available():
            return
        now = shared.clock()
        if session.kind is not SessionKind.BATCH:
            shared.store.reuse.set_session_context(session.id, -1, context, now=now, conn=conn)
        elif not session.conf and context != shared.fresh_context:
            shared.store.reuse.set_engine_context(shared.engine_id, context, now=now, conn=conn)
            shared.fresh_context = context

    def say_open(self, session_id: int, also: Callable[[Connection], None] | None = None) -> None:
        """Record the open session ``idle`` (with ``also``, in the same transaction: its
        context): the loop calls it again while the store still says ``starting`` of a session
        it holds, as after this write met a store outage (it may have failed, or been written
        with its answer lost: either way the next look settles it)."""
        shared = self._shared
        with shared.store.db.begin() as conn:
            outcome = shared.store.transitions.session(
                session_id,
                SessionState.IDLE,
                now=shared.clock(),
                expected=[SessionState.STARTING],
                conn=conn,
            )
            if outcome.applied and also is not None:
                also(conn)
        if not outcome.applied:
            forget_session(shared, session_id)
        log.info("session %s open (%s)", session_id, outcome)

    def close(self, session_id: int) -> None:
        """The session ended in the store (killed, timed out): stop its work and forget it."""
        shared = self._shared
        open_session = forget_session(shared, session_id)
        with shared.lock:
            for execution in shared.running.values():
                if execution.session.record.id == session_id:
                    execution.cancelled.set()
        if shared.streams is not None:
            shared.streams.session_closed(session_id)  # its streaming queries end with it
        if open_session is not None:
            log.info("session %s closed", session_id)
            if open_session.record.kind is not SessionKind.BATCH:
                try:  # its context is of no more use (result reuse)
                    if shared.store.reuse.available():
                        shared.store.reuse.forget_session(session_id)
                except Exception:
                    log.exception("session %s: forgetting its context failed", session_id)

    def _release_files(self, session: OpenSession) -> None:
        """A session ended: what it added to the engine (files, packages, archives, jars) goes
        with it, for its classic Spark session and its Spark Connect one, if it has one (a
        client that released it has already ended it). A stopping engine drops them all."""
        shared = self._shared
        if shared.stop.is_set() or shared.spark is None:
            return
        if session.spark is not shared.spark:
            artifacts.release_classic(session.spark)
        client_session = session.record.attributes.connect_session
        if client_session and session.record.owner:
            artifacts.release_connect(shared.spark, session.record.owner, str(client_session))


def forget_session(shared: Shared, session_id: int) -> OpenSession | None:
    worker = shared.workers.pop(session_id, None)
    if worker is not None:
        worker.close()
    return shared.sessions.pop(session_id, None)


def end_session(shared: Shared, session_id: int, to: SessionState, error: RecordedError) -> None:
    now = shared.clock()
    with shared.store.db.begin() as conn:
        shared.store.transitions.session(session_id, to, now=now, error=error, conn=conn)
        shared.store.transitions.end_statements_of_session(session_id, error, now=now, conn=conn)
