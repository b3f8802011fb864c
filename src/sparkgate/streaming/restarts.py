"""Failures and restarts of streaming queries: a run that ended is told apart from one that was
stopped; a failed one is restarted from its checkpoint after the backoff its retry options give
(each restart, with its delay, recorded in the store), or marked ``failed`` for good; and each
(re)start is recorded ``running`` with its new run id.

Apart from the supervisor's loop because this is where the retry policy meets the store: every
move is a compare-and-set guarded by the session that runs the query, and one that does not
apply hands the query to ``stopping`` (the row says someone else runs it now, or a stop).
"""

from __future__ import annotations

import dataclasses
import logging

from sparkgate.recorded import RecordedError
from sparkgate.runtime.failures import recorded_failure
from sparkgate.states import StreamQueryState
from sparkgate.streaming.backoff import after_failure
from sparkgate.streaming.runner import describe_stream_failure, start_query
from sparkgate.streaming.stopping import Stopping
from sparkgate.streaming.supervised import Supervised, Supervision

log = logging.getLogger("sparkgate.streams")

_Q = StreamQueryState


class Restarts:
    def __init__(self, shared: Supervision, stopping: Stopping) -> None:
        self._shared = shared
        self._stopping = stopping

    def check_terminations(self, now: float, sweep: bool) -> None:
        shared = self._shared
        with shared.lock:
            candidates = [
                s
                for s in shared.queries.values()
                if s.state is _Q.RUNNING and not s.stopping and s.query is not None
            ]
        for supervised in candidates:
            query = supervised.query
            assert query is not None
            if not (supervised.terminated or sweep) or query.isActive:
                continue
            failure = query.exception()
            if failure is None:  # ended without an error: someone stopped it
                shared.finish(supervised, _Q.STOPPED, None)
                continue
            text = str(getattr(failure, "_desc", None) or failure)
            error = describe_stream_failure(text, supervised.condition)
            self.failed(supervised, error, now)

    def failed(self, supervised: Supervised, error: RecordedError, now: float) -> None:
        """A run failed (or could not start): schedule the restart, or give up."""
        shared = self._shared
        policy = supervised.spec.retry
        ran_for = now - supervised.run_started_at if supervised.run_started_at else 0.0
        decision = after_failure(
            policy, supervised.failures, ran_for=ran_for, made_progress=supervised.batches > 0
        )
        with shared.lock:
            supervised.query = None
            if supervised.run_id:
                shared.by_run.pop(supervised.run_id, None)
        if decision.delay is None:
            log.warning("query %s failed for good: %s", supervised.spec.name, decision.reason)
            shared.finish(
                supervised,
                _Q.FAILED,
                error.with_params(not_restarted=decision.reason),
                failures=decision.failures,
            )
            return
        delay = decision.delay
        with shared.store.db.begin() as conn:
            moved = shared.store.transitions.stream_query(
                supervised.id,
                _Q.RESTARTING,
                now=now,
                expected=[_Q.RUNNING, _Q.STARTING],
                conn=conn,
                guard=supervised.guard,
                failures=decision.failures,
                next_restart_at=now + delay,
                error=error,
            )
            row = None
            if moved.applied:
                row = shared.store.stream_queries.add_restart(
                    job_id=supervised.job_id,
                    query_id=supervised.id,
                    attempt=decision.failures,
                    failed_at=now,
                    delay=delay,
                    error=error,
                    conn=conn,
                )
        if not moved.applied:
            self._stopping.lost_claim(supervised, moved.state)
            return
        with shared.lock:
            supervised.state = _Q.RESTARTING
            supervised.failures = decision.failures
            supervised.restart_at = now + delay
            supervised.restart_row = row
        log.warning(
            "query %s failed (%s); restart %s in %.3fs",
            supervised.spec.name,
            error.code,
            decision.failures,
            delay,
        )

    def restart_due(self, now: float) -> None:
        shared = self._shared
        with shared.lock:
            due = [
                s
                for s in shared.queries.values()
                if s.state is _Q.RESTARTING
                and not s.stopping
                and s.restart_at is not None
                and s.restart_at <= now
            ]
        for supervised in due:
            moved = shared.store.transitions.stream_query(
                supervised.id,
                _Q.STARTING,
                now=now,
                expected=[_Q.RESTARTING],
                guard=supervised.guard,
                restarts=supervised.restarts + 1,
                next_restart_at=None,
            )
            if not moved.applied:
                self._stopping.lost_claim(supervised, moved.state)
                continue
            with shared.lock:
                supervised.restarts += 1
                supervised.state = _Q.STARTING
            try:
                self.launch(supervised, now)
            except Exception as exc:
                self.failed(supervised, recorded_failure(exc, supervised.spec.sql), shared.clock())
                continue
            if supervised.restart_row is not None:
                shared.store.stream_queries.mark_restarted(
                    supervised.restart_row, now=shared.clock()
                )
            self._record_reads(supervised)
            log.info("query %s restarted (%s)", supervised.spec.name, supervised.restarts)

    def _record_reads(self, supervised: Supervised) -> None:
        """A restart reads again what the stream's start read (its plan is the same, checked
        then): the access history says so, through the door ``stream``."""
        if supervised.statement_id is None:
            return
        shared = self._shared
        try:
            again = [
                dataclasses.replace(use, door="stream")
                for use in shared.store.audit.uses_of(supervised.statement_id)
            ]
            shared.store.audit.add_uses(again, now=shared.clock())
        except Exception:
            log.exception("recording what query %s read on restart failed", supervised.spec.name)

    def launch(self, supervised: Supervised, now: float) -> None:
        shared = self._shared
        query = start_query(supervised.df, supervised.spec, supervised.checkpoint)
        run_id = str(query.runId)
        started = shared.clock()
        with shared.lock:
            supervised.query = query
            supervised.run_id = run_id
            supervised.run_started_at = started
            supervised.batches = 0
            supervised.terminated = False
            supervised.condition = None
            supervised.state = _Q.RUNNING
            shared.by_run[run_id] = supervised
        moved = shared.store.transitions.stream_query(
            supervised.id,
            _Q.RUNNING,
            now=started,
            expected=[_Q.STARTING],
            guard=supervised.guard,
            spark_id=str(query.id),
            run_id=run_id,
            run_started_at=started,
            engine_id=shared.engine_id,
        )
        if not moved.applied:
            self._stopping.lost_claim(supervised, moved.state)
