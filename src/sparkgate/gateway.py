"""What sparkgate does for a request, whichever API it came through (native /v1, Livy).

Routes validate and translate; this module creates sessions, queues statements, cancels and
kills, always through the store and its transitions. It never talks to Spark.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from typing import Any

from sparkgate.errors import Conflict
from sparkgate.launcher.placement import Placement
from sparkgate.settings import Settings
from sparkgate.states import (
    ACTIVE_SESSION_STATES,
    TERMINAL_STATEMENT_STATES,
    EngineKind,
    SessionKind,
    SessionState,
    StatementKind,
    StatementState,
)
from sparkgate.store import Store
from sparkgate.store.records import EngineRecord, SessionRecord, StatementRecord

log = logging.getLogger("sparkgate.gateway")


class QueryFinished(Conflict):
    code = "QUERY_FINISHED"

    def __init__(self, query_id: int, state: str) -> None:
        super().__init__(
            f"Query {query_id} is already {state}; there is nothing to cancel.",
            query_id=query_id,
            state=state,
        )


class Gateway:
    def __init__(
        self,
        settings: Settings,
        store: Store,
        placement: Placement,
        *,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self.settings = settings
        self.store = store
        self.placement = placement
        self.clock = clock

    # -- sessions ------------------------------------------------------------------------

    def create_session(
        self,
        kind: SessionKind,
        *,
        name: str | None = None,
        conf: dict[str, str] | None = None,
        owner: str | None = None,
        proxy_user: str | None = None,
        attributes: dict[str, Any] | None = None,
        first_statement: tuple[StatementKind, str] | None = None,
    ) -> tuple[SessionRecord, StatementRecord | None]:
        """Record a session (and, for a batch, its statement) and place it on an engine."""
        session = self.store.sessions.add(
            kind,
            now=self.clock(),
            name=name,
            conf=conf,
            owner=owner,
            proxy_user=proxy_user,
            attributes=attributes,
        )
        statement = None
        if first_statement is not None:
            statement_kind, code = first_statement
            statement = self.store.statements.add(
                session.id, code, now=self.clock(), kind=statement_kind
            )
        self.place(session)
        return self.store.sessions.get(session.id), statement

    def place(self, session: SessionRecord) -> None:
        """Put a not_started session on an engine; if none can start, the session errors."""
        try:
            self.placement.place(session)
        except Exception as exc:
            log.exception("placing session %s failed", session.id)
            error = {
                "code": "ENGINE_LAUNCH_FAILED",
                "message": f"No engine could be started for session {session.id}: {exc}",
            }
            now = self.clock()
            with self.store.db.begin() as conn:
                self.store.transitions.session(
                    session.id, SessionState.ERROR, now=now, error=error, conn=conn
                )
                self.store.transitions.statements_of_session(
                    session.id,
                    StatementState.FAILED,
                    now=now,
                    expected=[StatementState.WAITING],
                    error=error,
                    conn=conn,
                )

    def kill_session(self, session_id: int) -> SessionRecord:
        """End a session: ``killed``; waiting statements cancelled, a running one cancelling.
        Killing an ended session changes nothing (so a retried DELETE is harmless)."""
        now = self.clock()
        session = self.store.sessions.get(session_id)
        with self.store.db.begin() as conn:
            killed = self.store.transitions.session(
                session_id,
                SessionState.KILLED,
                now=now,
                expected=ACTIVE_SESSION_STATES,
                conn=conn,
                error={"code": "SESSION_KILLED", "message": f"Session {session_id} was killed."},
            )
            if killed.applied:
                self._cancel_statements_of(session_id, now, conn)
        if killed.applied and session.engine_id is not None:
            engine = self.store.engines.find(session.engine_id)
            if engine is not None and engine.kind is EngineKind.DEDICATED:
                self.placement.stop_engine(engine.id)
        return self.store.sessions.get(session_id)

    def _cancel_statements_of(self, session_id: int, now: float, conn: Any) -> None:
        error = {"code": "CANCELLED", "message": f"Session {session_id} was killed."}
        self.store.transitions.statements_of_session(
            session_id,
            StatementState.CANCELLED,
            now=now,
            expected=[StatementState.WAITING],
            error=error,
            conn=conn,
        )
        self.store.transitions.statements_of_session(
            session_id,
            StatementState.CANCELLING,
            now=now,
            expected=[StatementState.RUNNING],
            conn=conn,
        )

    def stop_engine(self, engine_id: int) -> EngineRecord:
        """Ask an engine to stop gracefully (it notices within a heartbeat)."""
        self.store.engines.get(engine_id)  # 404 for an unknown engine
        self.placement.stop_engine(engine_id)
        return self.store.engines.get(engine_id)

    # -- statements ----------------------------------------------------------------------

    def submit(
        self,
        code: str,
        *,
        session_id: int | None = None,
        kind: StatementKind = StatementKind.SQL,
    ) -> StatementRecord:
        """Queue a statement in a session, or (no session) run it as a one-statement batch."""
        if session_id is None:
            _, statement = self.create_session(SessionKind.BATCH, first_statement=(kind, code))
            assert statement is not None
            return self.store.statements.get(statement.id)
        return self.store.statements.add(session_id, code, now=self.clock(), kind=kind)

    def cancel(self, statement_id: int) -> StatementRecord:
        """Cancel a statement: a waiting one at once, a running one through its engine."""
        for _ in range(3):  # the engine may move it between our read and our write
            statement = self.store.statements.get(statement_id)
            if statement.state in TERMINAL_STATEMENT_STATES:
                raise QueryFinished(statement_id, statement.state.value)
            if statement.state is StatementState.CANCELLING:
                return statement
            now = self.clock()
            if statement.state is StatementState.WAITING:
                moved = self.store.transitions.statement(
                    statement_id,
                    StatementState.CANCELLED,
                    now=now,
                    expected=[StatementState.WAITING],
                    error={"code": "CANCELLED", "message": f"Query {statement_id} was cancelled."},
                )
                if moved.applied:
                    self._end_batch_without_work(statement.session_id)
            else:
                moved = self.store.transitions.statement(
                    statement_id,
                    StatementState.CANCELLING,
                    now=now,
                    expected=[StatementState.RUNNING],
                )
            if moved.applied:
                return self.store.statements.get(statement_id)
        return self.store.statements.get(statement_id)

    def _end_batch_without_work(self, session_id: int) -> None:
        session = self.store.sessions.get(session_id)
        if session.kind is SessionKind.BATCH:
            self.kill_session(session_id)
