"""Supervising an engine's streaming queries. Engines only.

One supervisor per engine watches every query its sessions start with SAVE STREAM:
- a query that fails is restarted from its checkpoint after the backoff its retry options give
  (each restart, with its delay, recorded in the store), or marked ``failed`` for good;
- a stop asked through the store (``stopping``) stops it at a micro-batch boundary;
- progress from Spark's listener is written to the store at most once per query every
  ``stream_progress_interval``, keeping the newest ``stream_progress_history`` samples;
- when a session ends, its queries stop with it (a stream job's queries wait, ``restarting``,
  for the job's next session); when the engine stops, all of them do.

A thread loops every 0.1 s; the listener wakes it at once when a query terminates. Every write
names the session that runs the query (``guard``), so a run superseded by a relaunch elsewhere
can never move the query's row.
"""

from __future__ import annotations

import json
import logging
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from sparkgate.errors import StreamQueryNotRunning
from sparkgate.recorded import EngineStopped, SessionEnded
from sparkgate.runtime.failures import describe_failure
from sparkgate.runtime.session import OpenSession
from sparkgate.settings import Settings
from sparkgate.states import INACTIVE_STREAM_QUERY_STATES, StreamQueryState
from sparkgate.store import Store
from sparkgate.store.records import StreamJobRecord, StreamQueryRecord
from sparkgate.streaming.backoff import after_failure, is_stable
from sparkgate.streaming.definitions import QuerySpec
from sparkgate.streaming.progress import summarize
from sparkgate.streaming.runner import describe_stream_failure, start_query, stop_gracefully

if TYPE_CHECKING:
    from pyspark.sql import DataFrame
    from pyspark.sql.streaming.query import StreamingQuery

log = logging.getLogger("sparkgate.streams")

_TICK = 0.1  # the loop's period; a terminated query wakes it at once
_SWEEP = 1.0  # ask every query whether it is still active this often (a missed event)
_FOLLOW = 0.25  # read stop requests and takeovers from the store this often
_KEEP_ALIVE = 30.0  # mark sessions with running queries active this often
_Q = StreamQueryState


@dataclass(eq=False)
class Supervised:
    """One streaming query this engine runs (or will restart)."""

    id: int
    spec: QuerySpec
    session: OpenSession
    job_id: int | None
    df: DataFrame
    checkpoint: str | None
    failures: int
    restarts: int
    state: StreamQueryState = _Q.STARTING
    query: StreamingQuery | None = None
    run_id: str | None = None
    run_started_at: float = 0.0
    batches: int = 0  # micro-batches with input in this run
    terminated: bool = False  # the listener saw this run end
    condition: str | None = None  # the error condition the listener reported
    restart_at: float | None = None
    restart_row: int | None = None
    stopping: bool = False
    pending: dict[str, Any] | None = None  # progress not yet written
    written_at: float = 0.0

    @property
    def session_id(self) -> int:
        return self.session.record.id

    @property
    def guard(self) -> dict[str, Any]:
        return {"session_id": self.session_id}


class StreamSupervisor:
    def __init__(
        self,
        settings: Settings,
        store: Store,
        engine_id: int,
        *,
        clock: Callable[[], float] = time.time,
        hurry: threading.Event | None = None,
    ) -> None:
        """``hurry``: once set (the engine must exit now), stops no longer wait for batches."""
        self.settings = settings
        self._hurry = hurry or threading.Event()
        self.store = store
        self.engine_id = engine_id
        self.clock = clock
        self._queries: dict[int, Supervised] = {}
        self._by_run: dict[str, Supervised] = {}
        self._listeners: dict[int, tuple[Any, Any]] = {}  # session id -> (spark, listener)
        self._stops: list[threading.Thread] = []
        self._lock = threading.RLock()
        self._wake = threading.Event()
        self._closing = threading.Event()
        self._thread: threading.Thread | None = None
        self._last_sweep = 0.0
        self._last_follow = 0.0
        self._last_keep_alive = 0.0

    # -- what statements ask -------------------------------------------------------------

    def checkpoint_root(self, session: OpenSession, job: StreamJobRecord | None) -> str:
        """``<checkpoints>/<job name>`` (or the job's own root); ``<checkpoints>/_sessions/<id>``
        for a query started in an interactive session."""
        base = self.settings.resolved_checkpoints_dir
        if job is not None:
            return job.checkpoint_root or str(base / job.name)
        return str(base / "_sessions" / str(session.record.id))

    def start(
        self,
        session: OpenSession,
        statement_id: int,
        spec: QuerySpec,
        df: DataFrame,
        job: StreamJobRecord | None = None,
    ) -> StreamQueryRecord:
        """Record and start a query (a stream job's resumes from its checkpoint). A first start
        that fails raises (the statement fails); a resumed one is retried with backoff."""
        now = self.clock()
        checkpoint = spec.checkpoint(self.checkpoint_root(session, job))
        queries = self.store.stream_queries
        if job is not None:
            record = queries.claim_for_job(
                job.id,
                spec.name,
                session_id=session.record.id,
                now=now,
                spec=spec.to_json(),
                checkpoint=checkpoint,
                statement_id=statement_id,
                engine_id=self.engine_id,
            )
        else:
            record = queries.add_for_session(
                session.record.id,
                spec.name,
                now=now,
                spec=spec.to_json(),
                checkpoint=checkpoint,
                statement_id=statement_id,
                engine_id=self.engine_id,
            )
        supervised = Supervised(
            record.id,
            spec,
            session,
            job.id if job else None,
            df,
            checkpoint,
            failures=record.failures,
            restarts=record.restarts,
        )
        self._ensure_listener(session)
        with self._lock:
            self._queries[record.id] = supervised
        # The statement's thread carries its Spark job group and tags; the query's own thread
        # would inherit them, and a cancel of the (finished) statement must not reach it.
        context = session.spark.sparkContext
        context.clearJobTags()
        context.setLocalProperty("spark.jobGroup.id", None)  # type: ignore[arg-type]
        try:
            self._launch(supervised, now)
        except Exception as exc:
            error = describe_failure(exc, spec.sql)
            if record.started_at is None:  # never ran: the definition is wrong, say so now
                self._forget(supervised)
                self.store.transitions.stream_query(
                    record.id,
                    _Q.FAILED,
                    now=self.clock(),
                    expected=[_Q.STARTING],
                    guard=supervised.guard,
                    error=error,
                )
                raise
            self._failed(supervised, error, self.clock())
        self._ensure_thread()
        return queries.get(record.id)

    def stop(self, session: OpenSession, name: str) -> StreamQueryRecord:
        """STOP STREAM: stop the session's query ``name`` at a batch boundary; wait for it."""
        with self._lock:
            supervised = next(
                (
                    s
                    for s in self._queries.values()
                    if s.session_id == session.record.id and s.spec.name == name
                ),
                None,
            )
        if supervised is None:
            raise StreamQueryNotRunning(name, session.record.id)
        self.store.transitions.stream_query(
            supervised.id,
            _Q.STOPPING,
            now=self.clock(),
            expected=[_Q.STARTING, _Q.RUNNING, _Q.RESTARTING],
            guard=supervised.guard,
        )
        self._stop_now(supervised, None)
        return self.store.stream_queries.get(supervised.id)

    # -- what the engine tells -----------------------------------------------------------

    def session_closed(self, session_id: int) -> None:
        """The session ended: stop its queries (in the background; the engine loop goes on)."""
        with self._lock:
            ending = [s for s in self._queries.values() if s.session_id == session_id]
            for supervised in ending:
                supervised.stopping = True
        if not ending and session_id not in self._listeners:
            return
        reason = SessionEnded(f"Session {session_id} ended.").to_dict()

        def stop_all() -> None:
            self._stop_many(ending, reason)
            self._drop_listener(session_id)

        thread = threading.Thread(target=stop_all, name=f"stop-streams-{session_id}", daemon=True)
        with self._lock:
            self._stops.append(thread)
        thread.start()

    def shutdown(self) -> None:
        """The engine is stopping: stop every query at a batch boundary, and the loop."""
        with self._lock:
            ending = list(self._queries.values())
            for supervised in ending:
                supervised.stopping = True
            stops = list(self._stops)
        reason = EngineStopped(
            f"Engine {self.engine_id} stopped; a stream job's queries resume in its next session."
        ).to_dict()
        self._stop_many(ending, reason)
        for thread in stops:
            thread.join(self.settings.stream_stop_timeout)
        self._closing.set()
        self._wake.set()
        if self._thread is not None:
            self._thread.join(5)

    def running(self) -> list[Supervised]:
        with self._lock:
            return list(self._queries.values())

    # -- what the listener hears ---------------------------------------------------------

    def on_progress(self, run_id: str, progress_json: str) -> None:
        summary = summarize(json.loads(progress_json))
        with self._lock:
            supervised = self._by_run.get(run_id)
            if supervised is None:
                return
            supervised.pending = summary
            if summary["input_rows"] > 0:
                supervised.batches += 1

    def on_terminated(self, run_id: str, condition: str | None) -> None:
        with self._lock:
            supervised = self._by_run.get(run_id)
            if supervised is None:
                return
            supervised.terminated = True
            supervised.condition = condition
        self._wake.set()

    # -- the loop ------------------------------------------------------------------------

    def _ensure_thread(self) -> None:
        with self._lock:
            if self._thread is None or not self._thread.is_alive():
                self._thread = threading.Thread(
                    target=self._loop, name="stream-supervisor", daemon=True
                )
                self._thread.start()

    def _loop(self) -> None:
        while not self._closing.is_set():
            self._wake.wait(self._until_next())
            self._wake.clear()
            if self._closing.is_set():
                return
            try:
                self.tick(self.clock())
            except Exception:
                log.exception("stream supervision failed; going on")

    def _until_next(self) -> float:
        """A tick, or less when a restart falls due sooner (restarts keep their delay)."""
        now = self.clock()
        with self._lock:
            due = [
                s.restart_at
                for s in self._queries.values()
                if s.state is _Q.RESTARTING and s.restart_at is not None
            ]
        return max(0.0, min([_TICK, *(at - now for at in due)]))

    def tick(self, now: float) -> None:
        """One round: failures, stop requests, due restarts, progress."""
        sweep = now - self._last_sweep >= _SWEEP
        if sweep:
            self._last_sweep = now
        self._check_terminations(now, sweep)
        if now - self._last_follow >= _FOLLOW:
            self._last_follow = now
            self._follow_store()
        self._restart_due(now)
        self._flush_progress(now)
        if now - self._last_keep_alive >= _KEEP_ALIVE:
            self._last_keep_alive = now
            self._keep_sessions_alive(now)

    def _keep_sessions_alive(self, now: float) -> None:
        """An interactive session whose queries run is in use, even when no statement comes
        and no data flows: keep the idle reaper away from it."""
        with self._lock:
            sessions = {s.session_id for s in self._queries.values() if s.job_id is None}
        for session_id in sessions:
            self.store.sessions.touch(session_id, now=now)

    def _check_terminations(self, now: float, sweep: bool) -> None:
        with self._lock:
            candidates = [
                s
                for s in self._queries.values()
                if s.state is _Q.RUNNING and not s.stopping and s.query is not None
            ]
        for supervised in candidates:
            query = supervised.query
            assert query is not None
            if not (supervised.terminated or sweep) or query.isActive:
                continue
            failure = query.exception()
            if failure is None:  # ended without an error: someone stopped it
                self._finish(supervised, _Q.STOPPED, None)
                continue
            text = str(getattr(failure, "_desc", None) or failure)
            error = describe_stream_failure(text, supervised.condition)
            self._failed(supervised, error, now)

    def _failed(self, supervised: Supervised, error: dict[str, Any], now: float) -> None:
        """A run failed (or could not start): schedule the restart, or give up."""
        policy = supervised.spec.retry
        ran_for = now - supervised.run_started_at if supervised.run_started_at else 0.0
        decision = after_failure(
            policy, supervised.failures, ran_for=ran_for, made_progress=supervised.batches > 0
        )
        with self._lock:
            supervised.query = None
            if supervised.run_id:
                self._by_run.pop(supervised.run_id, None)
        if decision.delay is None:
            log.warning("query %s failed for good: %s", supervised.spec.name, decision.reason)
            self._finish(
                supervised,
                _Q.FAILED,
                {**error, "not_restarted": decision.reason},
                failures=decision.failures,
            )
            return
        delay = decision.delay
        with self.store.db.begin() as conn:
            moved = self.store.transitions.stream_query(
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
                row = self.store.stream_queries.add_restart(
                    job_id=supervised.job_id,
                    query_id=supervised.id,
                    attempt=decision.failures,
                    failed_at=now,
                    delay=delay,
                    error=error,
                    conn=conn,
                )
        if not moved.applied:
            self._lost_claim(supervised, moved.state)
            return
        with self._lock:
            supervised.state = _Q.RESTARTING
            supervised.failures = decision.failures
            supervised.restart_at = now + delay
            supervised.restart_row = row
        log.warning(
            "query %s failed (%s); restart %s in %.3fs",
            supervised.spec.name,
            error.get("code"),
            decision.failures,
            delay,
        )

    def _restart_due(self, now: float) -> None:
        with self._lock:
            due = [
                s
                for s in self._queries.values()
                if s.state is _Q.RESTARTING
                and not s.stopping
                and s.restart_at is not None
                and s.restart_at <= now
            ]
        for supervised in due:
            moved = self.store.transitions.stream_query(
                supervised.id,
                _Q.STARTING,
                now=now,
                expected=[_Q.RESTARTING],
                guard=supervised.guard,
                restarts=supervised.restarts + 1,
                next_restart_at=None,
            )
            if not moved.applied:
                self._lost_claim(supervised, moved.state)
                continue
            with self._lock:
                supervised.restarts += 1
                supervised.state = _Q.STARTING
            try:
                self._launch(supervised, now)
            except Exception as exc:
                self._failed(supervised, describe_failure(exc, supervised.spec.sql), self.clock())
                continue
            if supervised.restart_row is not None:
                self.store.stream_queries.mark_restarted(supervised.restart_row, now=self.clock())
            log.info("query %s restarted (%s)", supervised.spec.name, supervised.restarts)

    def _launch(self, supervised: Supervised, now: float) -> None:
        query = start_query(supervised.df, supervised.spec, supervised.checkpoint)
        run_id = str(query.runId)
        started = self.clock()
        with self._lock:
            supervised.query = query
            supervised.run_id = run_id
            supervised.run_started_at = started
            supervised.batches = 0
            supervised.terminated = False
            supervised.condition = None
            supervised.state = _Q.RUNNING
            self._by_run[run_id] = supervised
        moved = self.store.transitions.stream_query(
            supervised.id,
            _Q.RUNNING,
            now=started,
            expected=[_Q.STARTING],
            guard=supervised.guard,
            spark_id=str(query.id),
            run_id=run_id,
            run_started_at=started,
            engine_id=self.engine_id,
        )
        if not moved.applied:
            self._lost_claim(supervised, moved.state)

    def _follow_store(self) -> None:
        with self._lock:
            watched = [s for s in self._queries.values() if not s.stopping]
        if not watched:
            return
        rows = self.store.stream_queries.states(s.id for s in watched)
        for supervised in watched:
            row = rows.get(supervised.id)
            if row is None or row[1] != supervised.session_id:
                self._lost_claim(supervised, None)  # deleted, or run by another session now
            elif row[0] is _Q.STOPPING:
                self._stop_in_background(supervised)
            elif row[0] in INACTIVE_STREAM_QUERY_STATES:
                self._lost_claim(supervised, row[0])

    def _lost_claim(self, supervised: Supervised, state: StreamQueryState | None) -> None:
        """The row no longer says what this engine does: follow it (a stop asked), or stop
        running what is no longer ours."""
        if state is _Q.STOPPING:
            self._stop_in_background(supervised)
            return
        log.info("query %s is %s in the store; letting it go", supervised.spec.name, state)
        with self._lock:
            supervised.stopping = True
        query = supervised.query
        self._forget(supervised)
        if query is not None:
            self._background(
                lambda: stop_gracefully(query, self.settings.stream_stop_timeout, self._hurry)
            )

    def _stop_in_background(self, supervised: Supervised) -> None:
        with self._lock:
            if supervised.stopping:
                return
            supervised.stopping = True
        self._background(lambda: self._stop_now(supervised, None))

    def _background(self, work: Callable[[], object]) -> None:
        def run() -> None:
            try:
                work()
            except Exception:
                log.exception("stopping a streaming query failed")

        thread = threading.Thread(target=run, name="stop-stream", daemon=True)
        with self._lock:
            self._stops = [t for t in self._stops if t.is_alive()] + [thread]
        thread.start()

    def _stop_many(self, ending: list[Supervised], reason: dict[str, Any] | None) -> None:
        threads = [
            threading.Thread(target=self._stop_now, args=(s, reason), daemon=True) for s in ending
        ]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(self.settings.stream_stop_timeout + 5)

    def _stop_now(self, supervised: Supervised, reason: dict[str, Any] | None) -> None:
        """Stop at a batch boundary and record it. ``reason``: the session (or engine) ends
        but a stream job's query only pauses, ``restarting``, until the job's next session."""
        with self._lock:
            supervised.stopping = True
        query = supervised.query
        try:
            if query is not None and query.isActive:
                between = stop_gracefully(query, self.settings.stream_stop_timeout, self._hurry)
                if not between:
                    log.warning("query %s stopped mid-batch (timeout)", supervised.spec.name)
        except Exception:
            log.exception("stopping query %s failed", supervised.spec.name)
        if supervised.job_id is not None and reason is not None:
            paused = self.store.transitions.stream_query(
                supervised.id,
                _Q.RESTARTING,
                now=self.clock(),
                expected=[_Q.STARTING, _Q.RUNNING],
                guard=supervised.guard,
                error=reason,
                next_restart_at=None,
            )
            if paused.applied or paused.state is _Q.RESTARTING:
                if paused.state is _Q.RESTARTING and not paused.applied:
                    self.store.stream_queries.update(supervised.id, next_restart_at=None)
                self._forget(supervised)
                return
        self._finish(supervised, _Q.STOPPED, None)

    def _finish(
        self,
        supervised: Supervised,
        to: StreamQueryState,
        error: dict[str, Any] | None,
        **values: Any,
    ) -> None:
        self._forget(supervised)
        extra: dict[str, Any] = {"error": error} if error is not None else {}
        self.store.transitions.stream_query(
            supervised.id,
            to,
            now=self.clock(),
            expected=[_Q.STARTING, _Q.RUNNING, _Q.RESTARTING, _Q.STOPPING],
            guard=supervised.guard,
            next_restart_at=None,
            **extra,
            **values,
        )

    def _forget(self, supervised: Supervised) -> None:
        with self._lock:
            self._queries.pop(supervised.id, None)
            if supervised.run_id:
                self._by_run.pop(supervised.run_id, None)
            supervised.query = None

    # -- progress ------------------------------------------------------------------------

    def _flush_progress(self, now: float) -> None:
        interval = self.settings.stream_progress_interval
        with self._lock:
            due = []
            for supervised in self._queries.values():
                if supervised.pending is not None and now - supervised.written_at >= interval:
                    due.append((supervised, supervised.pending))
                    supervised.pending = None
                    supervised.written_at = now
        for supervised, progress in due:
            extra: dict[str, Any] = {}
            stable = is_stable(
                supervised.spec.retry,
                running_for=now - supervised.run_started_at,
                made_progress=supervised.batches > 0,
            )
            if supervised.failures and stable:
                supervised.failures = 0
                extra["failures"] = 0
            self.store.stream_queries.record_progress(
                supervised.id,
                progress,
                now=now,
                keep=self.settings.stream_progress_history,
                session_id=supervised.session_id,
                **extra,
            )

    # -- listeners -----------------------------------------------------------------------

    def _ensure_listener(self, session: OpenSession) -> None:
        """Spark's listeners hear the queries of the SparkSession they were added to."""
        with self._lock:
            if session.record.id in self._listeners:
                return
            from sparkgate.streaming.listener import add_listener

            handle = add_listener(session.spark, self)
            self._listeners[session.record.id] = (session.spark, handle)

    def _drop_listener(self, session_id: int) -> None:
        with self._lock:
            entry = self._listeners.pop(session_id, None)
        if entry is not None:
            from sparkgate.streaming.listener import remove_listener

            spark, handle = entry
            try:
                remove_listener(spark, handle)
            except Exception:
                log.debug("removing the listener of session %s failed", session_id, exc_info=True)
