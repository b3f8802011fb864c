"""Report: a statement's outcome recorded (success with its result, cancelled, or failed) and
its session released, in one transaction, through store outages: while the store cannot be
reached the outcome waits for it; if the store refuses it, the statement still ends.

Apart from running the statement because the two fail differently: a statement that ran
has done its work, and what can still go wrong is only the store. This is where the engine
rides out an outage without losing a finished statement's result or running it twice.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from functools import partial
from typing import TYPE_CHECKING

from sparkgate.engine import reuse_keep
from sparkgate.engine.execution import Execution
from sparkgate.engine.sessions import forget_session
from sparkgate.engine.shared import Shared
from sparkgate.recorded import Cancelled, OutcomeNotRecorded
from sparkgate.results import delete as delete_result
from sparkgate.runtime.contract import ExecResult
from sparkgate.runtime.failures import recorded_failure
from sparkgate.states import SessionKind, SessionState, StatementState
from sparkgate.store.outage import is_unreachable
from sparkgate.store.records import StatementRecord

if TYPE_CHECKING:
    from sqlalchemy.engine import Connection

log = logging.getLogger("sparkgate.engine")


class Reporter:
    def __init__(self, shared: Shared) -> None:
        self._shared = shared

    def report(self, execution: Execution, outcome: ExecResult | BaseException) -> None:
        statement = execution.statement
        refused = self._finish(execution, outcome)
        if refused is not None:
            # The store refused what the statement produced: it must still end, or a
            # healthy engine would keep it running forever.
            log.error(
                "recording the outcome of statement %s failed", statement.id, exc_info=refused
            )
            if isinstance(outcome, ExecResult) and outcome.result and outcome.result.path:
                delete_result(outcome.result.path)
            self._retrying(partial(self._record_unrecordable, statement, refused))
            self._retrying(partial(self._release_session, execution))

    def _finish(
        self, execution: Execution, outcome: ExecResult | BaseException
    ) -> Exception | None:
        """Record the statement's end and release its session, in one transaction; while the
        store is out of reach (not refusing) the outcome, result included, waits for it. A
        write that committed just before the line dropped is not applied twice: both
        transitions expect the states they leave. The refusal, if the store refused."""
        shared = self._shared
        delay = 0.1
        while True:
            try:
                with shared.store.db.begin() as conn:
                    self._record_outcome(execution, outcome, conn)
                    self._release_session(execution, conn)
                return None
            except Exception as exc:
                if not is_unreachable(exc):
                    return exc
                shared.store_out(exc)
                if shared.stop_now.wait(delay):
                    return None
                delay = min(delay * 2, 5.0)

    def _record_outcome(
        self, execution: Execution, outcome: ExecResult | BaseException, conn: Connection
    ) -> None:
        store = self._shared.store
        statement = execution.statement
        now = self._shared.clock()
        if isinstance(outcome, ExecResult):
            done = store.transitions.statement(
                statement.id,
                StatementState.SUCCESS,
                now=now,
                expected=[StatementState.RUNNING, StatementState.CANCELLING],
                conn=conn,
                result=outcome.result,
                output=outcome.output or None,
                progress=1.0,
            )
            # Not applied: the statement ended otherwise (cancelled, failed by a reaper) and
            # nobody will read the files, unless it is this very outcome, written by an
            # earlier try whose commit landed just before the connection dropped.
            kept = done.state is StatementState.SUCCESS
            if not done.applied and not kept and outcome.result and outcome.result.path:
                delete_result(outcome.result.path)
        elif execution.cancelled.is_set():
            done = store.transitions.statement(
                statement.id,
                StatementState.CANCELLED,
                now=now,
                expected=[StatementState.RUNNING, StatementState.CANCELLING],
                conn=conn,
                error=Cancelled(f"Query {statement.id} was cancelled.").recorded(),
            )
        else:
            done = store.transitions.statement(
                statement.id,
                StatementState.FAILED,
                now=now,
                expected=[StatementState.RUNNING, StatementState.CANCELLING],
                conn=conn,
                error=recorded_failure(outcome, statement.code),
            )
        if done.applied and execution.touched:
            store.statement_tables.add(statement.id, execution.touched, now=now, conn=conn)
        if done.applied and execution.uses:
            store.audit.add_uses(execution.uses, now=now, conn=conn)
        if done.applied and execution.cost is not None:
            store.statement_costs.add(statement.id, execution.cost, now=now, conn=conn)
        if done.applied:
            # Tables it wrote get new versions, its session's context is noted, and a query's
            # result may be kept for reuse (engine.reuse_keep).
            reuse_keep.after_statement(self._shared, execution, outcome, now=now, conn=conn)
        log.info("statement %s -> %s", statement.id, done.state)

    def _record_unrecordable(self, statement: StatementRecord, exc: Exception) -> None:
        self._shared.store.transitions.statement(
            statement.id,
            StatementState.FAILED,
            now=self._shared.clock(),
            expected=[StatementState.RUNNING, StatementState.CANCELLING],
            error=OutcomeNotRecorded(
                f"Statement {statement.id} finished, but the store refused its "
                f"outcome ({type(exc).__name__}: {str(exc)[:500]}); see engine "
                f"{self._shared.engine_id}'s log."
            ).recorded(),
        )

    def _release_session(self, execution: Execution, conn: Connection | None = None) -> None:
        """The statement is over: its session takes the next one (or, a batch, ends)."""
        shared = self._shared
        now = shared.clock()
        session = execution.session.record
        if session.kind is SessionKind.BATCH:
            forget_session(shared, session.id)
            shared.store.transitions.session(
                session.id, SessionState.DEAD, now=now, expected=[SessionState.BUSY], conn=conn
            )
        else:
            shared.store.transitions.session(
                session.id,
                SessionState.IDLE,
                now=now,
                expected=[SessionState.BUSY],
                conn=conn,
                last_activity_at=now,
            )

    def _retrying(self, write: Callable[[], object]) -> None:
        """Retry a store write until it succeeds or the engine is stopping now. If the store
        stays out of reach, the heartbeat thread ends the process and a reaper takes over."""
        delay = 0.1
        while True:
            try:
                write()
                return
            except Exception:
                log.exception("store write failed; retrying in %.1fs", delay)
                if self._shared.stop_now.wait(delay):
                    return
                delay = min(delay * 2, 5.0)
