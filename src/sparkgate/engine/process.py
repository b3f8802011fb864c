"""The engine process: one Spark driver serving the sessions the store assigns to it.

Loop: stop requested? -> read this engine's sessions and their next waiting statements ->
open new sessions -> claim and start statements -> pass on cancels -> repeat. A separate
thread heartbeats (so a long query never makes the engine look dead) and records progress.
Every state change is written to the store as it happens; nothing asks the engine for state.

Signals: the first SIGTERM stops taking work and exits once running statements finish; a
second one cancels them and exits now.
"""

from __future__ import annotations

import dataclasses
import logging
import os
import queue
import secrets
import signal
import socket
import tempfile
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING, Any

from sparkgate import logs
from sparkgate.engine import artifacts
from sparkgate.engine.authz import decider as authz
from sparkgate.engine.backoff import HISTORY, no_executors_error
from sparkgate.engine.executors import EXECUTORS
from sparkgate.engine.udfs import register_udfs
from sparkgate.results import delete as delete_result
from sparkgate.runtime import hooks, identity
from sparkgate.runtime.contract import ExecResult, ExecutionContext
from sparkgate.runtime.failures import describe_failure
from sparkgate.runtime.session import OpenSession
from sparkgate.settings import Settings
from sparkgate.states import (
    TERMINAL_ENGINE_STATES,
    EngineKind,
    EngineState,
    SessionKind,
    SessionState,
    StatementKind,
    StatementState,
)
from sparkgate.store import Store
from sparkgate.store.hints import CONNECT_CANCELLED, ENGINE_CHANGED, Listener, engine_channel
from sparkgate.store.outage import is_unreachable
from sparkgate.store.records import EngineRecord, SessionRecord, StatementRecord
from sparkgate.streaming.supervisor import StreamSupervisor

if TYPE_CHECKING:
    from pyspark.sql import SparkSession
    from sqlalchemy.engine import Connection

log = logging.getLogger("sparkgate.engine")

# A Connect operation whose query still runs is ended once its operation has been missing
# from Spark's Connect service this long (the node that relayed its end records it first).
_CONNECT_GONE_GRACE = 10.0
# How often the engine compares them (one store read).
_CONNECT_CHECK_EVERY = 5.0
# How long the engine keeps cancelling a cancelled Connect operation's Spark jobs.
_CONNECT_CANCEL_FOR = 10.0

# An engine with no session looks at the store this many times less often than the safety
# poll says when hints are on (a hint still wakes it at once), and heartbeats as seldom as
# six beats per heartbeat timeout allow: a warm or spare engine waiting for its first
# session spent more of a core than a raw idle driver does (bench/floor.py, row 7).
_IDLE_POLL_FACTOR = 5
_IDLE_BEATS_PER_TIMEOUT = 6

# How long to keep repeating a cancel: a query between two Spark jobs (planning, or a
# broadcast then the main job) is not hit by a single cancel. See SPARK-NOTES.md.
_CANCEL_REPEAT = 0.2


class _ClaimRefused(Exception):
    pass


@dataclass
class Execution:
    statement: StatementRecord
    session: OpenSession
    tag: str
    cancelled: threading.Event = field(default_factory=threading.Event)
    finished: threading.Event = field(default_factory=threading.Event)
    last_cancel: float = 0.0
    claimed_in: int = 0  # the engine's tick that claimed it
    # The tables it read and wrote ({"read": [...], "written": [...]}), recorded with its end.
    touched: dict[str, list[str]] | None = None

    @property
    def done(self) -> bool:
        return self.finished.is_set()


class SessionWorker:
    """The one thread that runs a session's statements, in order. Statements of different
    sessions run at once on their own workers. A thread that lives as long as its session
    also keeps PySpark's pinned JVM thread (and its Py4J connection) from one statement to
    the next, where a thread per statement would set both up again each time."""

    def __init__(
        self,
        session_id: int,
        run: Callable[[Execution], None],
        after: Callable[[], None],
        ended: Callable[[], None],
    ) -> None:
        self._queue: queue.SimpleQueue[Execution | None] = queue.SimpleQueue()
        self._run = run
        self._after = after
        self._ended = ended  # after the session's last statement, on its thread
        self._thread = threading.Thread(
            target=self._loop, name=f"session-{session_id}", daemon=True
        )
        self._thread.start()

    def submit(self, execution: Execution) -> None:
        self._queue.put(execution)

    def close(self) -> None:
        self._queue.put(None)  # ends after the statement it runs, if any

    def _loop(self) -> None:
        while (execution := self._queue.get()) is not None:
            try:
                self._run(execution)
            finally:
                execution.finished.set()
                self._after()  # the engine may take the session's next statement now
        self._ended()


class Engine:
    def __init__(
        self,
        settings: Settings,
        store: Store,
        engine_id: int,
        *,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self.settings = settings
        self.store = store
        self.engine_id = engine_id
        self.clock = clock
        self.spark: SparkSession | None = None
        self._own_spark: SparkSession | None = None  # the engine's own work (authz: unchecked)
        self._decider: authz.Decider | None = None
        self._authz: Any = None  # the SQL extension's Authz object in the JVM
        self.streams: StreamSupervisor | None = None
        self.record: EngineRecord | None = None
        self._sessions: dict[int, OpenSession] = {}
        self._workers: dict[int, SessionWorker] = {}
        self._running: dict[int, Execution] = {}
        self._lock = threading.Lock()
        self._stop = threading.Event()  # graceful: finish running statements, take no more
        self._stop_now = threading.Event()
        # Set by hints from the store's writers, finished statements and stop requests: the
        # loop looks at the store when woken, and on the safety poll otherwise.
        self._wake = threading.Event()
        self._engine_changed = threading.Event()
        self._exiting = threading.Event()
        self._hints: Listener | None = None
        self._exit_reason = "stopped"
        self._last_busy = clock()
        self._ticks = 0
        self._served_session = False
        self._last_table_recovery = 0.0
        self._store_out_since: float | None = None  # while the store cannot be reached
        self._connect_secret: str | None = None  # its Spark Connect service's, if it runs one
        self._connect_checked = 0.0
        self._connect_missing: dict[str, float] = {}  # operation id -> first seen missing

    # -- lifecycle -----------------------------------------------------------------------

    def run(self) -> int:
        self.record = self.store.engines.get(self.engine_id)
        self._install_signal_handlers()
        log.info("engine %s (%s) starting Spark", self.engine_id, self.record.kind.value)
        try:
            self.spark = self._start_spark(self.record)
        except BaseException as exc:
            log.exception("engine %s could not start Spark", self.engine_id)
            self._fail_start(exc)
            return 1
        self._install_access_control()
        self._warm_up()
        self._record_connect_service()
        now = self.clock()
        started = self.store.transitions.engine(
            self.engine_id,
            EngineState.RUNNING,
            now=now,
            expected=[EngineState.STARTING],
            heartbeat_at=now,
            app_id=self.spark.sparkContext.applicationId,
            ui_url=self.spark.sparkContext.uiWebUrl,
        )
        if not started.applied:
            log.warning("engine %s is %s before it ran; exiting", self.engine_id, started.state)
            # Asked to stop while it started: it has stopped, and says so.
            self.store.transitions.engine(
                self.engine_id,
                EngineState.STOPPED,
                now=self.clock(),
                expected=[EngineState.STOPPING],
            )
            self._stop_spark()
            return 0
        log.info("engine %s running (%s)", self.engine_id, self.spark.sparkContext.applicationId)
        self.streams = StreamSupervisor(
            self.settings, self.store, self.engine_id, clock=self.clock, hurry=self._stop_now
        )
        heartbeat = threading.Thread(target=self._heartbeat_loop, name="heartbeat", daemon=True)
        heartbeat.start()
        self._hints = self.store.db.hints.listen(engine_channel(self.engine_id), self._on_hint)
        try:
            while not self._should_exit():
                try:
                    self._tick()
                    self._pause()
                    self._follow_engine_state()
                    self._store_back()
                except Exception as exc:
                    if not is_unreachable(exc):
                        raise
                    self._store_out(exc)  # statements go on running; their ends wait
        except BaseException as exc:
            log.exception("engine %s loop failed", self.engine_id)
            self._exit_reason = f"crashed: {exc}"
            self._stop_now.set()
            self._shutdown(failed=describe_failure(exc))
            return 1
        self._shutdown()
        return 0

    def _warm_up(self) -> None:
        """Run a first query (through the catalog, a shuffle and a result file, like a
        statement's) before saying ``running``. A driver's first statement pays for loading
        classes, generating code and connecting the catalog: seconds on two cores, measured
        (bench/floor.py). An engine kept warm exists so that nobody waits for that."""
        from sparkgate.runtime.collect import write_result

        assert self.spark is not None
        started = time.perf_counter()
        try:
            with tempfile.TemporaryDirectory(prefix="sparkgate-warm-up-") as directory:
                self.spark.sql("SHOW DATABASES").collect()
                df = self.spark.sql("SELECT id % 2 AS k, count(*) AS n FROM range(100) GROUP BY 1")
                write_result(df, Path(directory) / "result")
        except Exception:
            log.warning("warm-up query failed; going on cold", exc_info=True)
        log.info("engine %s warmed up in %.1fs", self.engine_id, time.perf_counter() - started)

    def _install_access_control(self) -> None:
        """The extension in this driver asks the table rules and grants from here on; with
        no access file every table stays open, as without the extension."""
        assert self.spark is not None
        from sparkgate.auth.access import Access

        access = Access(self.settings.access_file, self.settings.admins)
        self._decider = authz.Decider(access, self.store, clock=self.clock)
        self._authz = authz.install(self.spark, self._decider)
        # The engine's own catalog work (table recovery) in a session of its own: a dedicated
        # engine's root session becomes its user's.
        self._own_spark = self.spark.newSession()
        identity.bind(self._own_spark, identity.SYSTEM_USER)

    def _start_spark(self, record: EngineRecord) -> SparkSession:
        from sparkgate.engine.spark import build_spark, wait_for_executors

        if self.settings.connect_port:
            # Only sparkgate's nodes learn it (from the engine's record in the store).
            self._connect_secret = secrets.token_urlsafe(32)
        spark = build_spark(
            self.settings,
            f"sparkgate-engine-{record.id}",
            record.conf,
            engine_id=record.id,
            kind=record.kind,
            connect_secret=self._connect_secret,
        )
        try:
            wait_for_executors(spark, self.settings.engine_executor_timeout)
        except BaseException:
            spark.stop()  # its application ends at the master
            raise
        return spark

    def _record_connect_service(self) -> None:
        """Where this engine's Spark Connect service listens, and its secret, for the nodes
        (before the engine says running, so that a node placing a session on it finds it)."""
        if self._connect_secret is None:
            return
        from sparkgate.engine.spark import LOOPBACK, connect_port

        assert self.spark is not None
        try:
            url = f"{LOOPBACK}:{connect_port(self.spark)}"
            self.store.connect.set_endpoint(self.engine_id, url, self._connect_secret)
        except Exception:
            # The engine serves the other doors; the Connect door says this one has no service.
            log.exception("engine %s: Spark's Connect service is not available", self.engine_id)
            self._connect_secret = None

    def _fail_start(self, exc: BaseException) -> None:
        now = self.clock()
        from sparkgate.engine.spark import NoExecutors

        code = NoExecutors.code if isinstance(exc, NoExecutors) else "ENGINE_START_FAILED"
        error = {**describe_failure(exc), "code": code}
        if isinstance(exc, NoExecutors) and self.record is not None:
            error = self._with_backoff(error, self.record, now)
        self.store.transitions.engine(self.engine_id, EngineState.FAILED, now=now, error=error)
        for session in self.store.sessions.of_engine(self.engine_id):
            self._end_session(session.id, SessionState.ERROR, error)

    def _with_backoff(
        self, error: dict[str, Any], record: EngineRecord, now: float
    ) -> dict[str, Any]:
        """The NO_EXECUTORS error with its attempt and the next attempt's time (placement
        waits until then before launching another engine like this one)."""
        try:
            earlier = self.store.engines.recent(
                record.kind, record.share_key, limit=HISTORY, before=record.id
            )
        except Exception:
            log.exception("engine %s: reading earlier engines failed", self.engine_id)
            return error
        return no_executors_error(
            error,
            record,
            earlier,
            now=now,
            minimum=self.settings.engine_backoff_min,
            maximum=self.settings.engine_backoff_max,
        )

    def _install_signal_handlers(self) -> None:
        if threading.current_thread() is not threading.main_thread():
            return

        def on_term(_signum: int, _frame: Any) -> None:
            if self._stop.is_set():
                self._stop_now.set()
            self._stop.set()
            self._wake.set()

        signal.signal(signal.SIGTERM, on_term)
        signal.signal(signal.SIGINT, on_term)

    def request_stop(self, *, now: bool = False) -> None:
        self._stop.set()
        if now:
            self._stop_now.set()
        self._wake.set()

    def _on_hint(self, payload: str) -> None:
        if payload.startswith(CONNECT_CANCELLED):
            statement = payload.removeprefix(CONNECT_CANCELLED)
            threading.Thread(
                target=self._cancel_connect_jobs, args=(statement,), name="connect-cancel"
            ).start()
            return
        if payload == ENGINE_CHANGED:
            self._engine_changed.set()  # asked to stop, or declared lost: read our own row
        self._wake.set()

    def _cancel_connect_jobs(self, statement: str) -> None:
        """A Spark Connect operation of this engine was cancelled. Spark's interrupt ends the
        operation at once but misses a Spark job its thread submits afterwards (it was still
        planning): that job would run on unseen, holding the cores. Cancel the operation's
        jobs by their tag, as the statement loop does for its own, for a while."""
        try:
            operation = self.store.connect.operation_of(int(statement))
            if operation is None or self.spark is None:
                return
            from sparkgate.engine.spark import connect_job_tag

            tag = connect_job_tag(
                self.spark, operation.owner, operation.client_session, operation.operation_id
            )
            deadline = time.monotonic() + _CONNECT_CANCEL_FOR
            while time.monotonic() < deadline and not self._exiting.is_set():
                self.spark.sparkContext.cancelJobsWithTag(tag)
                self._stop_now.wait(_CANCEL_REPEAT)
        except Exception:
            log.exception("cancelling the jobs of Connect query %s failed", statement)

    def _follow_engine_state(self) -> None:
        """Act at once on a hinted change of this engine's row (the heartbeat would see it
        within its interval anyway)."""
        if not self._engine_changed.is_set():
            return
        self._engine_changed.clear()
        self._obey(self.store.engines.get(self.engine_id).state)

    def _obey(self, state: EngineState | None) -> None:
        """What the store says of this engine: STOPPING, finish and exit; another final state
        (lost, failed), it was given up on: exit at once. Our own final state says nothing."""
        if self._exiting.is_set():
            return
        if state is EngineState.STOPPING:
            self._stop.set()
            self._wake.set()
        elif state in TERMINAL_ENGINE_STATES:
            assert state is not None
            log.error("engine declared %s by the store; exiting now", state.value)
            self._exit_reason = f"declared {state.value}"
            self._stop_now.set()
            self._wake.set()

    def _should_exit(self) -> bool:
        if self._stop_now.is_set():
            return True
        with self._lock:
            running = bool(self._running)
        if self._stop.is_set():
            return not running
        assert self.record is not None
        dedicated = self.record.kind is EngineKind.DEDICATED
        if dedicated and self._served_session and not self._sessions and not running:
            self._exit_reason = "its session ended"  # a dedicated engine lives for one session
            return True
        idle_for = self.clock() - self._last_busy
        if not self._sessions and not running and idle_for > self.settings.engine_idle_timeout:
            self._exit_reason = f"idle for {idle_for:.0f}s"
            return True
        return False

    def _pause(self) -> None:
        """Sleep until woken (a hint, a statement finished, a stop), or the safety poll. Only
        a cancel not yet obeyed makes the loop come back sooner, to repeat it."""
        timeout = self.settings.hint_safety_poll
        with self._lock:
            if any(e.cancelled.is_set() and not e.done for e in self._running.values()):
                timeout = min(timeout, _CANCEL_REPEAT)
            elif self.settings.hints and not self._sessions and not self._running:
                timeout *= _IDLE_POLL_FACTOR
        self._wake.wait(timeout)
        self._wake.clear()  # before the tick: a hint arriving during it wakes the next wait

    def _shutdown(self, failed: dict[str, Any] | None = None) -> None:
        if self._hints is not None:
            self._hints.close()
        with self._lock:
            executions = list(self._running.values())
        for execution in executions:
            execution.cancelled.set()
        deadline = self.clock() + 15
        for execution in executions:
            while not execution.done:
                self._cancel_jobs(execution)
                execution.finished.wait(_CANCEL_REPEAT)
                if self.clock() > deadline:
                    break
        for worker in list(self._workers.values()):
            worker.close()
        if self.streams is not None:
            # Stop streaming queries at a batch boundary while Spark still runs.
            self.streams.shutdown()
        error = failed or {
            "code": "ENGINE_STOPPED",
            "message": f"Engine {self.engine_id} stopped ({self._exit_reason}).",
        }
        for session in self.store.sessions.of_engine(self.engine_id):
            self._end_session(session.id, SessionState.DEAD, error)
        now = self.clock()
        final = EngineState.FAILED if failed else EngineState.STOPPED
        self._exiting.set()  # the heartbeat must not take our own final state for a verdict
        self.store.transitions.engine(self.engine_id, final, now=now, error=failed)
        log.info("engine %s %s (%s)", self.engine_id, final.value, self._exit_reason)
        self._stop_spark()

    def _stop_spark(self) -> None:
        if self.spark is not None:
            try:
                self.spark.stop()
            except Exception:
                log.exception("stopping Spark failed")

    def _end_session(self, session_id: int, to: SessionState, error: dict[str, Any]) -> None:
        now = self.clock()
        with self.store.db.begin() as conn:
            self.store.transitions.session(session_id, to, now=now, error=error, conn=conn)
            self.store.transitions.end_statements_of_session(session_id, error, now=now, conn=conn)

    # -- the loop ------------------------------------------------------------------------

    def _tick(self) -> bool:
        """One pass over this engine's work; True if anything happened."""
        busy = False
        self._ticks += 1
        self._reap_executions()  # first: a session whose statement just ended takes its next
        work = self.store.sessions.work_of_engine(self.engine_id)
        active_ids = {session.id for session, _ in work}
        for session_id in list(self._sessions):
            if session_id not in active_ids:
                self._close_session(session_id)
                busy = True
        for session, waiting in work:
            if session.state is SessionState.STARTING and session.id not in self._sessions:
                self._open_session(session)
                busy = True
            if (
                waiting is not None
                and not self._stop.is_set()
                and session.id in self._sessions
                and not self._session_running(session.id)
            ):
                busy |= self._claim(session.id, waiting)
        busy |= self._pass_on_cancels()
        self._recover_tables()
        if busy or self._running:
            self._last_busy = self.clock()
        return busy

    def _recover_tables(self) -> None:
        """Now and then, finish table writes a crash left needing the catalog (any engine
        may; see ``tables.recovery``)."""
        now = self.clock()
        if now - self._last_table_recovery < self.settings.table_recovery_interval:
            return
        self._last_table_recovery = now
        from sparkgate.tables.recovery import recover

        try:
            assert self._own_spark is not None
            recover(self._own_spark, self.store, self.settings, now=now)
        except Exception:
            log.exception("table recovery failed")

    def _session_running(self, session_id: int) -> bool:
        with self._lock:
            return any(e.session.record.id == session_id for e in self._running.values())

    def _open_session(self, session: SessionRecord) -> None:
        assert self.spark is not None and self.record is not None
        if self.record.kind is EngineKind.DEDICATED and not self._served_session:
            # Placement may have made this warm engine a user's shared engine
            # (``claim_warm_as_shared``): its first session says which it serves as.
            self.record = self.store.engines.get(self.engine_id)
        try:
            if self.record.kind is EngineKind.DEDICATED:
                spark = self.spark  # the session owns this engine: static conf already applied
                conf = {k: v for k, v in session.conf.items() if self.record.conf.get(k) != v}
            else:
                spark = self.spark.newSession()
                conf = session.conf
            for key, value in conf.items():
                spark.conf.set(key, value)
            # Whose table rules this session's plans meet (sparkgate.engine.authz).
            authz.bind(spark, session.owner)
            if self._decider is not None and session.owner:
                groups = session.attributes.get("groups") or []
                if self._decider.learn_groups(session.owner, groups):
                    self._authz.invalidate()
            register_udfs(spark, self.settings.udf_modules)
        except Exception as exc:
            log.exception("session %s could not start", session.id)
            self._end_session(
                session.id,
                SessionState.ERROR,
                {**describe_failure(exc), "code": "SESSION_START_FAILED"},
            )
            return
        opened = OpenSession(session, spark)
        self._sessions[session.id] = opened
        self._workers[session.id] = SessionWorker(
            session.id, self._execute, self._wake.set, partial(self._release_files, opened)
        )
        self._served_session = True
        outcome = self.store.transitions.session(
            session.id, SessionState.IDLE, now=self.clock(), expected=[SessionState.STARTING]
        )
        if not outcome.applied:
            self._forget_session(session.id)
        log.info("session %s open (%s)", session.id, outcome)

    def _forget_session(self, session_id: int) -> OpenSession | None:
        worker = self._workers.pop(session_id, None)
        if worker is not None:
            worker.close()
        return self._sessions.pop(session_id, None)

    def _close_session(self, session_id: int) -> None:
        """The session ended in the store (killed, timed out): stop its work and forget it."""
        open_session = self._forget_session(session_id)
        with self._lock:
            for execution in self._running.values():
                if execution.session.record.id == session_id:
                    execution.cancelled.set()
        if self.streams is not None:
            self.streams.session_closed(session_id)  # its streaming queries end with it
        if open_session is not None:
            log.info("session %s closed", session_id)

    def _release_files(self, session: OpenSession) -> None:
        """A session ended: what it added to the engine (files, packages, archives, jars) goes
        with it, for its classic Spark session and its Spark Connect one, if it has one (a
        client that released it has already ended it). A stopping engine drops them all."""
        if self._stop.is_set() or self.spark is None:
            return
        if session.spark is not self.spark:
            artifacts.release_classic(session.spark)
        client_session = session.record.attributes.get("connect_session")
        if client_session and session.record.owner:
            artifacts.release_connect(self.spark, session.record.owner, str(client_session))

    def _claim(self, session_id: int, waiting: StatementRecord) -> bool:
        now = self.clock()
        statement_id = waiting.id
        session = self._sessions[session_id]
        try:
            with self.store.db.begin() as conn:
                claimed = self.store.transitions.statement(
                    statement_id,
                    StatementState.RUNNING,
                    now=now,
                    expected=[StatementState.WAITING],
                    conn=conn,
                )
                if not claimed.applied:
                    return False  # cancelled before it started
                busy = self.store.transitions.session(
                    session_id,
                    SessionState.BUSY,
                    now=now,
                    expected=[SessionState.IDLE],
                    conn=conn,
                    last_activity_at=now,
                )
                if not busy.applied:
                    raise _ClaimRefused  # the session ended meanwhile: undo the claim
        except _ClaimRefused:
            return False
        # What the claim wrote, without reading it back.
        statement = dataclasses.replace(
            waiting,
            state=StatementState.RUNNING,
            started_at=waiting.started_at or now,
            updated_at=now,
            version=waiting.version + 1,
        )
        execution = Execution(
            statement, session, tag=f"sparkgate-statement-{statement_id}", claimed_in=self._ticks
        )
        with self._lock:
            self._running[statement_id] = execution
        self._workers[session_id].submit(execution)
        return True

    def _pass_on_cancels(self) -> bool:
        with self._lock:
            executions = list(self._running.values())
        if not executions:
            return False
        # Statements claimed in this tick were just read running; a cancel written since
        # hints us, which wakes the next tick, and that one reads their states.
        earlier = [e.statement.id for e in executions if e.claimed_in < self._ticks]
        states = self.store.statements.states(earlier) if earlier else {}
        acted = False
        now = self.clock()
        for execution in executions:
            state = states.get(execution.statement.id)
            if state in (StatementState.CANCELLING, StatementState.CANCELLED):
                execution.cancelled.set()
            if execution.cancelled.is_set() and not execution.done:
                if now - execution.last_cancel >= _CANCEL_REPEAT:
                    self._cancel_jobs(execution)
                    execution.last_cancel = now
                acted = True
        return acted

    def _cancel_jobs(self, execution: Execution) -> None:
        if self.spark is None:
            return
        try:
            self.spark.sparkContext.cancelJobsWithTag(execution.tag)
        except Exception:
            log.exception("cancelling %s failed", execution.tag)

    def _reap_executions(self) -> None:
        with self._lock:
            for statement_id in [s for s, e in self._running.items() if e.done]:
                del self._running[statement_id]

    # -- one statement -------------------------------------------------------------------

    def _run_as_owner(self, owner: str | None) -> None:
        """Spark's current user is the session's user (``anonymous`` without
        authentication, the name the session's plans are checked as: identity.bind), as
        Spark Thrift Server makes it the connected user; else it is the engine's OS user,
        and a table the statement creates records that as its owner. (SQL's current_user()
        is the SQL extension's, authz NameUser, either way.) The value is a JVM
        thread-local, and PySpark pins each Python thread to a JVM thread: set it on the
        statement's thread, every time, as the thread may have run another's statement."""
        assert self.spark is not None
        jvm = self.spark.sparkContext._jvm
        assert jvm is not None
        user = owner or identity.ANONYMOUS
        jvm.org.apache.spark.sql.catalyst.CurrentUserContext.CURRENT_USER().set(user)

    def _execute(self, execution: Execution) -> None:
        statement = execution.statement
        # This thread works for one statement: every record it logs (Spark's Python side
        # included) names the statement, its session and the session's owner.
        with logs.bound(
            query_id=statement.id,
            session_id=statement.session_id,
            user=execution.session.record.owner,
        ):
            self._run_statement(execution)

    def _run_statement(self, execution: Execution) -> None:
        statement = execution.statement
        assert self.spark is not None
        sc = self.spark.sparkContext
        sc.setInterruptOnCancel(True)
        sc.addJobTag(execution.tag)
        sc.setJobGroup(execution.tag, f"sparkgate statement {statement.id}", True)
        sc.setLocalProperty("spark.scheduler.pool", f"session-{statement.session_id}")
        self._run_as_owner(execution.session.record.owner)
        # Every job this statement starts (SQL, DataFrames, its code's RDDs) sees the files
        # its session added, and only those; what its code adds is the session's own.
        artifacts.bind(execution.session.spark)
        ctx = ExecutionContext(
            execution.session,
            statement,
            self.settings,
            self.store,
            self.engine_id,
            execution.cancelled,
            self.streams,
        )
        try:
            executor = EXECUTORS.get(statement.kind)
            if executor is None:
                raise ValueError(f"this engine cannot run {statement.kind.value} statements")
            result = executor(ctx)
            hooks.finish(ctx, result)  # e.g. commit a two-phase table: may still fail
            outcome: ExecResult | BaseException = result
        except BaseException as exc:
            outcome = exc
            hooks.fail(ctx, exc)  # e.g. abort a two-phase table
        finally:
            sc.clearJobTags()
        if self._authz is not None:
            self._record_touched(execution, outcome)
        refused = self._finish(execution, outcome)
        if refused is not None:
            # The store refused what the statement produced: it must still end, or a
            # healthy engine would keep it running forever.
            log.error(
                "recording the outcome of statement %s failed", statement.id, exc_info=refused
            )
            if isinstance(outcome, ExecResult) and outcome.result and outcome.result.get("path"):
                delete_result(outcome.result["path"])
            self._retrying(partial(self._record_unrecordable, statement, refused))
            self._retrying(partial(self._release_session, execution))

    def _record_touched(self, execution: Execution, outcome: ExecResult | BaseException) -> None:
        """Who touched what: the tables and views a statement read and wrote, from the checks
        of its plans (with table rules or without: the extension records either way), are
        indexed with its end whatever the outcome (``store.statement_tables``, for the
        catalog's recent queries); a statement that succeeded also says them in its record,
        and with table rules each write is audited against the table. Taken whatever the
        outcome, so that the thread's next statement starts clean. The catalog's own reads
        (a preview, as the user) are not recorded: they would crowd out the queries."""
        try:
            touched = authz.take_touched(self._authz)
            if execution.statement.kind is StatementKind.CATALOG or not any(touched.values()):
                return
            if self.store.statement_tables.available():
                execution.touched = touched
            if not isinstance(outcome, ExecResult):
                return
            outcome.output["tables"] = touched
            if not touched.get("written") or not (self._decider and self._decider.active()):
                return
            now = self.clock()
            for name in touched.get("written", []):
                self.store.audit.add(
                    "table.write",
                    "ok",
                    now=now,
                    user=execution.session.record.owner,
                    target=f"table:{name}",
                    detail={"query_id": execution.statement.id},
                )
        except Exception:
            log.exception("recording what statement %s touched failed", execution.statement.id)

    def _finish(
        self, execution: Execution, outcome: ExecResult | BaseException
    ) -> Exception | None:
        """Record the statement's end and release its session, in one transaction; while the
        store is out of reach (not refusing) the outcome, result included, waits for it. A
        write that committed just before the line dropped is not applied twice: both
        transitions expect the states they leave. The refusal, if the store refused."""
        delay = 0.1
        while True:
            try:
                with self.store.db.begin() as conn:
                    self._record_outcome(execution, outcome, conn)
                    self._release_session(execution, conn)
                return None
            except Exception as exc:
                if not is_unreachable(exc):
                    return exc
                self._store_out(exc)
                if self._stop_now.wait(delay):
                    return None
                delay = min(delay * 2, 5.0)

    def _record_outcome(
        self, execution: Execution, outcome: ExecResult | BaseException, conn: Connection
    ) -> None:
        statement = execution.statement
        now = self.clock()
        if isinstance(outcome, ExecResult):
            done = self.store.transitions.statement(
                statement.id,
                StatementState.SUCCESS,
                now=now,
                expected=[StatementState.RUNNING, StatementState.CANCELLING],
                conn=conn,
                result=outcome.result,
                output=outcome.output or None,
                progress=1.0,
            )
            if not done.applied and outcome.result and outcome.result.get("path"):
                delete_result(outcome.result["path"])  # nobody will ever read it
        elif execution.cancelled.is_set():
            done = self.store.transitions.statement(
                statement.id,
                StatementState.CANCELLED,
                now=now,
                expected=[StatementState.RUNNING, StatementState.CANCELLING],
                conn=conn,
                error={"code": "CANCELLED", "message": f"Query {statement.id} was cancelled."},
            )
        else:
            error = describe_failure(outcome, statement.code)
            done = self.store.transitions.statement(
                statement.id,
                StatementState.FAILED,
                now=now,
                expected=[StatementState.RUNNING, StatementState.CANCELLING],
                conn=conn,
                error=error,
            )
        if done.applied and execution.touched:
            self.store.statement_tables.add(statement.id, execution.touched, now=now, conn=conn)
        log.info("statement %s -> %s", statement.id, done.state)

    def _record_unrecordable(self, statement: StatementRecord, exc: Exception) -> None:
        self.store.transitions.statement(
            statement.id,
            StatementState.FAILED,
            now=self.clock(),
            expected=[StatementState.RUNNING, StatementState.CANCELLING],
            error={
                "code": "OUTCOME_NOT_RECORDED",
                "message": f"Statement {statement.id} finished, but the store refused its "
                f"outcome ({type(exc).__name__}: {str(exc)[:500]}); see engine "
                f"{self.engine_id}'s log.",
            },
        )

    def _release_session(self, execution: Execution, conn: Connection | None = None) -> None:
        """The statement is over: its session takes the next one (or, a batch, ends)."""
        now = self.clock()
        session = execution.session.record
        if session.kind is SessionKind.BATCH:
            self._forget_session(session.id)
            self.store.transitions.session(
                session.id, SessionState.DEAD, now=now, expected=[SessionState.BUSY], conn=conn
            )
        else:
            self.store.transitions.session(
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
                if self._stop_now.wait(delay):
                    return
                delay = min(delay * 2, 5.0)

    # -- heartbeat -----------------------------------------------------------------------

    def _heartbeat_loop(self) -> None:
        last_ok = self.clock()
        interval = self.settings.engine_heartbeat_interval
        while not self._stop_now.is_set() and not self._exiting.is_set():
            now = self.clock()
            try:
                state = self.store.engines.heartbeat(
                    self.engine_id, now=now, host=socket.gethostname()
                )
                last_ok = now
                self._store_back()
            except Exception as exc:
                if not is_unreachable(exc):
                    log.exception("heartbeat failed")
                self._store_out(exc)
                # Reapers judge heartbeats only a whole timeout after they reach the store
                # again, so riding out an outage costs nothing. An engine cut off for longer
                # than its patience gives back its cluster resources.
                if now - last_ok > self.settings.engine_store_patience:
                    log.error("store unreachable for %.0fs; exiting", now - last_ok)
                    os._exit(3)
                state = None
            self._obey(state)
            self._record_progress()
            try:
                self._end_gone_operations()
            except Exception:  # never at the cost of the heartbeat
                log.exception("ending gone Connect operations failed")
            self._stop_now.wait(self._beat_interval(interval))

    def _beat_interval(self, interval: float) -> float:
        """The heartbeat's interval: as set while the engine has sessions (it also records
        their progress), longer while it has none."""
        if self._sessions or self._running:
            return interval
        return max(interval, self.settings.engine_heartbeat_timeout / _IDLE_BEATS_PER_TIMEOUT)

    def _store_out(self, exc: Exception) -> None:
        """Note an outage of the store (logged once, however many threads meet it)."""
        with self._lock:
            first = self._store_out_since is None
            if first:
                self._store_out_since = self.clock()
        if first:
            log.warning("the store cannot be reached (%s); running statements go on", exc)
        self._stop_now.wait(0.5 if threading.current_thread() is threading.main_thread() else 0)

    def _store_back(self) -> None:
        with self._lock:
            since, self._store_out_since = self._store_out_since, None
        if since is not None:
            log.warning("the store is reachable again after %.1fs", self.clock() - since)

    def _end_gone_operations(self) -> None:
        """End the queries of Spark Connect operations this engine's Connect service no longer
        holds. A node records an operation's end as it relays it; when no node sees the end
        (its client left and never reattached, or its node died and the client did not come
        back), Spark drops the operation after its detach timeout and only this engine can
        tell: the query must not stay running."""
        now = self.clock()
        if self._connect_secret is None or self.spark is None:
            return
        if now - self._connect_checked < _CONNECT_CHECK_EVERY:
            return
        self._connect_checked = now
        from sparkgate.engine.spark import connect_operations

        try:
            unfinished = self.store.connect.unfinished_of_engine(self.engine_id)
            held = connect_operations(self.spark) if unfinished else set()
        except Exception as exc:
            if not is_unreachable(exc):
                log.exception("checking Connect operations failed")
            return
        missing = {op: query for op, query in unfinished.items() if op not in held}
        first_seen = {op: self._connect_missing.get(op, now) for op in missing}
        self._connect_missing = first_seen
        error = {
            "code": "CONNECT_OPERATION_GONE",
            "message": "The operation ended in the engine with no client to receive its "
            "outcome (its client left and did not reattach, or its node stopped); its "
            "result is gone. Run it again.",
        }
        for op, since in list(first_seen.items()):
            if now - since < _CONNECT_GONE_GRACE:
                continue
            statement_id = missing[op]
            for to, expected in (
                (StatementState.FAILED, StatementState.RUNNING),
                (StatementState.CANCELLED, StatementState.CANCELLING),
            ):
                moved = self.store.transitions.statement(
                    statement_id, to, now=now, expected=[expected], error=error
                )
                if moved.applied:
                    log.warning("query %s: Connect operation %s is gone", statement_id, op)
                    break
            self._connect_missing.pop(op, None)

    def _record_progress(self) -> None:
        if self.spark is None:
            return
        with self._lock:
            executions = list(self._running.values())
        if not executions:
            return
        tracker = self.spark.sparkContext.statusTracker()
        for execution in executions:
            try:
                total = done = 0
                for job_id in tracker.getJobIdsForGroup(execution.tag):
                    job = tracker.getJobInfo(job_id)
                    for stage_id in job.stageIds if job else []:
                        stage = tracker.getStageInfo(stage_id)
                        if stage:
                            total += stage.numTasks
                            done += stage.numCompletedTasks
                if total:
                    self.store.statements.set_progress(
                        execution.statement.id, done / total, now=self.clock()
                    )
            except Exception:
                log.debug("progress of %s unavailable", execution.tag, exc_info=True)
