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

Here: what statements, the engine and Spark's listener ask of it, its loop, and progress. The
loop's failures and restarts are in ``restarts``, stops in ``stopping``; what they share (the
queries, the lock) in ``supervised``.
"""

from __future__ import annotations

import json
import logging
import threading
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from sparkgate.errors.streams import StreamQueryNotRunning
from sparkgate.recorded import EngineStopped, SessionEnded
from sparkgate.runtime.failures import recorded_failure
from sparkgate.runtime.session import OpenSession
from sparkgate.settings import Settings
from sparkgate.states import StreamQueryState
from sparkgate.store import Store
from sparkgate.store.records import StreamJobRecord, StreamQueryRecord
from sparkgate.stream_spec import QuerySpec
from sparkgate.streaming.backoff import is_stable
from sparkgate.streaming.progress import summarize
from sparkgate.streaming.restarts import Restarts
from sparkgate.streaming.stopping import Stopping
from sparkgate.streaming.supervised import Supervised, Supervision

if TYPE_CHECKING:
    from pyspark.sql import DataFrame

log = logging.getLogger("sparkgate.streams")

_TICK = 0.1  # the loop's period; a terminated query wakes it at once
_SWEEP = 1.0  # ask every query whether it is still active this often (a missed event)
_FOLLOW = 0.25  # read stop requests and takeovers from the store this often
_KEEP_ALIVE = 30.0  # mark sessions with running queries active this often
_Q = StreamQueryState


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
        self._shared = shared = Supervision(
            settings, store, engine_id, clock, hurry or threading.Event()
        )
        self._stopping = Stopping(shared)
        self._restarts = Restarts(shared, self._stopping)
        self._listeners: dict[int, tuple[Any, Any]] = {}  # session id -> (spark, listener)
        self._wake = threading.Event()
        self._closing = threading.Event()
        self._thread: threading.Thread | None = None
        self._last_sweep = 0.0
        self._last_follow = 0.0
        self._last_keep_alive = 0.0

    @property
    def settings(self) -> Settings:
        return self._shared.settings

    @property
    def store(self) -> Store:
        return self._shared.store

    @property
    def engine_id(self) -> int:
        return self._shared.engine_id

    @property
    def clock(self) -> Callable[[], float]:
        return self._shared.clock

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
                spec=spec,
                checkpoint=checkpoint,
                statement_id=statement_id,
                engine_id=self.engine_id,
            )
        else:
            record = queries.add_for_session(
                session.record.id,
                spec.name,
                now=now,
                spec=spec,
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
            statement_id=statement_id,
        )
        self._ensure_listener(session)
        with self._shared.lock:
            self._shared.queries[record.id] = supervised
        # The statement's thread carries its Spark job group and tags; the query's own thread
        # would inherit them, and a cancel of the (finished) statement must not reach it.
        context = session.spark.sparkContext
        context.clearJobTags()
        context.setLocalProperty("spark.jobGroup.id", None)  # type: ignore[arg-type]
        try:
            self._restarts.launch(supervised, now)
        except Exception as exc:
            error = recorded_failure(exc, spec.sql)
            if record.started_at is None:  # never ran: the definition is wrong, say so now
                self._shared.forget(supervised)
                self.store.transitions.stream_query(
                    record.id,
                    _Q.FAILED,
                    now=self.clock(),
                    expected=[_Q.STARTING],
                    guard=supervised.guard,
                    error=error,
                )
                raise
            self._restarts.failed(supervised, error, self.clock())
        self._ensure_thread()
        return queries.get(record.id)

    def stop(self, session: OpenSession, name: str) -> StreamQueryRecord:
        """STOP STREAM: stop the session's query ``name`` at a batch boundary; wait for it."""
        with self._shared.lock:
            supervised = next(
                (
                    s
                    for s in self._shared.queries.values()
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
        self._stopping.stop_now(supervised, None)
        return self.store.stream_queries.get(supervised.id)

    # -- what the engine tells -----------------------------------------------------------

    def session_closed(self, session_id: int) -> None:
        """The session ended: stop its queries (in the background; the engine loop goes on)."""
        with self._shared.lock:
            ending = [s for s in self._shared.queries.values() if s.session_id == session_id]
            for supervised in ending:
                supervised.stopping = True
        if not ending and session_id not in self._listeners:
            return
        reason = SessionEnded(f"Session {session_id} ended.").recorded()

        def stop_all() -> None:
            self._stopping.stop_many(ending, reason)
            self._drop_listener(session_id)

        thread = threading.Thread(target=stop_all, name=f"stop-streams-{session_id}", daemon=True)
        with self._shared.lock:
            self._shared.stops.append(thread)
        thread.start()

    def shutdown(self) -> None:
        """The engine is stopping: stop every query at a batch boundary, and the loop."""
        with self._shared.lock:
            ending = list(self._shared.queries.values())
            for supervised in ending:
                supervised.stopping = True
            stops = list(self._shared.stops)
        reason = EngineStopped(
            f"Engine {self.engine_id} stopped; a stream job's queries resume in its next session."
        ).recorded()
        self._stopping.stop_many(ending, reason)
        for thread in stops:
            thread.join(self.settings.stream_stop_timeout)
        self._closing.set()
        self._wake.set()
        if self._thread is not None:
            self._thread.join(5)

    def running(self) -> list[Supervised]:
        with self._shared.lock:
            return list(self._shared.queries.values())

    # -- what the listener hears ---------------------------------------------------------

    def on_progress(self, run_id: str, progress_json: str) -> None:
        summary = summarize(json.loads(progress_json))
        with self._shared.lock:
            supervised = self._shared.by_run.get(run_id)
            if supervised is None:
                return
            supervised.pending = summary
            if summary["input_rows"] > 0:
                supervised.batches += 1

    def on_terminated(self, run_id: str, condition: str | None) -> None:
        with self._shared.lock:
            supervised = self._shared.by_run.get(run_id)
            if supervised is None:
                return
            supervised.terminated = True
            supervised.condition = condition
        self._wake.set()

    # -- the loop ------------------------------------------------------------------------

    def _ensure_thread(self) -> None:
        with self._shared.lock:
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
        with self._shared.lock:
            due = [
                s.restart_at
                for s in self._shared.queries.values()
                if s.state is _Q.RESTARTING and s.restart_at is not None
            ]
        return max(0.0, min([_TICK, *(at - now for at in due)]))

    def tick(self, now: float) -> None:
        """One round: failures, stop requests, due restarts, progress."""
        sweep = now - self._last_sweep >= _SWEEP
        if sweep:
            self._last_sweep = now
        self._restarts.check_terminations(now, sweep)
        if now - self._last_follow >= _FOLLOW:
            self._last_follow = now
            self._stopping.follow_store()
        self._restarts.restart_due(now)
        self._flush_progress(now)
        if now - self._last_keep_alive >= _KEEP_ALIVE:
            self._last_keep_alive = now
            self._keep_sessions_alive(now)

    def _keep_sessions_alive(self, now: float) -> None:
        """An interactive session whose queries run is in use, even when no statement comes
        and no data flows: keep the idle reaper away from it."""
        with self._shared.lock:
            sessions = {s.session_id for s in self._shared.queries.values() if s.job_id is None}
        for session_id in sessions:
            self.store.sessions.touch(session_id, now=now)

    # -- progress ------------------------------------------------------------------------

    def _flush_progress(self, now: float) -> None:
        interval = self.settings.stream_progress_interval
        with self._shared.lock:
            due = []
            for supervised in self._shared.queries.values():
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
            self._shared.record_cost(supervised, now)
            self._changed_sink(supervised, progress, now)

    def _changed_sink(self, supervised: Supervised, progress: dict[str, Any], now: float) -> None:
        """A batch that wrote rows to a catalog table gives it a new version: a result kept for
        reuse that read it is never served again (its files' check sees the batch sooner)."""
        table = supervised.spec.table
        if supervised.spec.format != "table" or not table or not progress.get("input_rows"):
            return
        if not self.store.reuse.available():
            return
        parts = table.replace("`", "").lower().split(".")
        if len(parts) < 3:
            current = supervised.session.spark.catalog.currentDatabase() if len(parts) == 1 else ""
            parts = ["spark_catalog", *([current.lower()] if current else []), *parts]
        try:
            self.store.reuse.bump([".".join(parts)], now=now)
        except Exception:
            log.exception("stream %s: noting its table changed failed", supervised.id)

    # -- listeners -----------------------------------------------------------------------

    def _ensure_listener(self, session: OpenSession) -> None:
        """Spark's listeners hear the queries of the SparkSession they were added to."""
        with self._shared.lock:
            if session.record.id in self._listeners:
                return
            from sparkgate.streaming.listener import add_listener

            handle = add_listener(session.spark, self)
            self._listeners[session.record.id] = (session.spark, handle)

    def _drop_listener(self, session_id: int) -> None:
        with self._shared.lock:
            entry = self._listeners.pop(session_id, None)
        if entry is not None:
            from sparkgate.streaming.listener import remove_listener

            spark, handle = entry
            try:
                remove_listener(spark, handle)
            except Exception:
                log.debug("removing the listener of session %s failed", session_id, exc_info=True)
