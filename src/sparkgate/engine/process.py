"""The engine process: one Spark driver serving the sessions the store assigns to it.

Loop: stop requested? -> read this engine's sessions and their next waiting statements ->
open new sessions -> claim and start statements -> pass on cancels -> repeat. A separate
thread heartbeats (so a long query never makes the engine look dead) and records progress.
Every state change is written to the store as it happens; nothing asks the engine for state.

Each step is a module of its own, and ``Engine`` is their wiring (start-up, the loop, hints
routed to the step they concern, shut-down):

- ``stopping``: stop? (signals, stop requests, the store's verdict, nothing left to serve)
- ``startup``: Spark started, access control installed, warmed up; or the start's failure
- ``sessions``: sessions opened and closed as the store assigns and ends them
- ``claims``: a session's next statement claimed; ``cancels``: cancels passed on to Spark
- ``running``: one statement run on its session's thread; ``reporting``: its outcome
  recorded and its session released, through store outages
- ``heartbeat``: the heartbeat thread, with progress
- ``connect_operations``: what the engine does for its Spark Connect service's queries
- ``shared`` and ``execution``: the state the steps share, and one statement's run
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from typing import TYPE_CHECKING

from sparkgate.engine.cancels import CANCEL_REPEAT, cancel_jobs, pass_on_cancels
from sparkgate.engine.claims import claim, mark_waiting_behind, reap_executions, settle
from sparkgate.engine.connect_operations import ConnectOperations
from sparkgate.engine.execution import Execution, SessionWorker
from sparkgate.engine.heartbeat import Heartbeat
from sparkgate.engine.reporting import Reporter
from sparkgate.engine.running import StatementRunner
from sparkgate.engine.sessions import SessionKeeper, end_session
from sparkgate.engine.shared import Look, Shared
from sparkgate.engine.startup import fail_start, install_access_control, start_spark, warm_up
from sparkgate.engine.stopping import Stopping
from sparkgate.recorded import EngineStopped, RecordedError
from sparkgate.runtime.failures import recorded_failure
from sparkgate.runtime.session import OpenSession
from sparkgate.settings import Settings
from sparkgate.states import EngineState, SessionState
from sparkgate.store import Store
from sparkgate.store.hints import (
    CONNECT_CANCELLED,
    ENGINE_CHANGED,
    NEW_STATEMENT,
    Listener,
    engine_channel,
)
from sparkgate.store.outage import is_unreachable
from sparkgate.store.records import EngineRecord
from sparkgate.streaming.supervisor import StreamSupervisor

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

log = logging.getLogger("sparkgate.engine")

# An engine with no session looks at the store this many times less often than the safety
# poll says when hints are on (a hint still wakes it at once), and heartbeats less often too
# (engine.heartbeat): a warm or spare engine waiting for its first session spent more of a
# core than a raw idle driver does (bench/floor.py, row 7).
_IDLE_POLL_FACTOR = 5


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
        self.shared = Shared(settings, store, engine_id, clock)
        self._stopping = Stopping(self.shared)
        self._connect = ConnectOperations(self.shared)
        self._runner = StatementRunner(self.shared, Reporter(self.shared))
        self._keeper = SessionKeeper(self.shared, self._runner.execute)
        self._heartbeat = Heartbeat(self.shared, self._stopping, self._connect)
        self._hints: Listener | None = None
        self._last_busy = clock()
        self._ticks = 0
        self._backlog = False  # the last read saw a statement waiting behind a running one
        self._last_table_recovery = 0.0

    # What the steps share, as the engine's own (its entry point and tests set and read them).

    @property
    def spark(self) -> SparkSession | None:
        return self.shared.spark

    @spark.setter
    def spark(self, spark: SparkSession | None) -> None:
        self.shared.spark = spark

    @property
    def record(self) -> EngineRecord | None:
        return self.shared.record

    @record.setter
    def record(self, record: EngineRecord | None) -> None:
        self.shared.record = record

    @property
    def streams(self) -> StreamSupervisor | None:
        return self.shared.streams

    @property
    def _sessions(self) -> dict[int, OpenSession]:
        return self.shared.sessions

    @property
    def _workers(self) -> dict[int, SessionWorker]:
        return self.shared.workers

    @property
    def _running(self) -> dict[int, Execution]:
        return self.shared.running

    # -- lifecycle -----------------------------------------------------------------------

    def run(self) -> int:
        shared = self.shared
        shared.record = record = self.store.engines.get(self.engine_id)
        self._stopping.install_signal_handlers()
        log.info("engine %s (%s) starting Spark", self.engine_id, record.kind.value)
        try:
            shared.spark = spark = start_spark(shared, record)
        except BaseException as exc:
            log.exception("engine %s could not start Spark", self.engine_id)
            fail_start(shared, exc)
            return 1
        install_access_control(shared)
        warm_up(shared)
        self._connect.record_service()
        now = self.clock()
        started = self.store.transitions.engine(
            self.engine_id,
            EngineState.RUNNING,
            now=now,
            expected=[EngineState.STARTING],
            heartbeat_at=now,
            app_id=spark.sparkContext.applicationId,
            ui_url=spark.sparkContext.uiWebUrl,
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
        log.info("engine %s running (%s)", self.engine_id, spark.sparkContext.applicationId)
        shared.streams = StreamSupervisor(
            self.settings, self.store, self.engine_id, clock=self.clock, hurry=shared.stop_now
        )
        heartbeat = threading.Thread(target=self._heartbeat.loop, name="heartbeat", daemon=True)
        heartbeat.start()
        self._hints = self.store.db.hints.listen(engine_channel(self.engine_id), self._on_hint)
        try:
            needed = Look.ALL
            while not self._should_exit():
                try:
                    self._tick(needed)
                    needed = self._pause()
                    self._stopping.follow_engine_state()
                    shared.store_back()
                except Exception as exc:
                    if not is_unreachable(exc):
                        raise
                    shared.store_out(exc)  # statements go on running; their ends wait
        except BaseException as exc:
            log.exception("engine %s loop failed", self.engine_id)
            shared.exit_reason = f"crashed: {exc}"
            shared.stop_now.set()
            self._shutdown(failed=recorded_failure(exc))
            return 1
        self._shutdown()
        return 0

    def request_stop(self, *, now: bool = False) -> None:
        self._stopping.request(now=now)

    def _on_hint(self, payload: str) -> None:
        if payload.startswith(CONNECT_CANCELLED):
            statement = payload.removeprefix(CONNECT_CANCELLED)
            threading.Thread(
                target=self._connect.cancel_jobs, args=(statement,), name="connect-cancel"
            ).start()
            return
        if payload == ENGINE_CHANGED:
            self._stopping.engine_changed()  # asked to stop, or declared lost: read our own row
        self.shared.wake_for(Look.WORK if payload.startswith(NEW_STATEMENT) else Look.ALL)

    def _should_exit(self) -> bool:
        return self._stopping.should_exit(self._last_busy)

    def _pause(self) -> Look:
        """Sleep until woken (a hint, a statement finished, a stop), or the safety poll; what
        the next pass must read. Only a cancel not yet obeyed makes the loop come back
        sooner, to repeat it."""
        shared = self.shared
        timeout = self.settings.hint_safety_poll
        with shared.lock:
            if any(e.cancelled.is_set() and not e.done for e in shared.running.values()):
                timeout = min(timeout, CANCEL_REPEAT)
            elif self.settings.hints and not shared.sessions and not shared.running:
                timeout *= _IDLE_POLL_FACTOR
        if not shared.wake.wait(timeout):
            shared.wake_for(Look.ALL)  # the safety poll: a hint may have been lost
        shared.wake.clear()  # before the tick: a hint arriving during it wakes the next wait
        return shared.take_needed()

    def _shutdown(self, failed: RecordedError | None = None) -> None:
        shared = self.shared
        if self._hints is not None:
            self._hints.close()
        executions = shared.running_executions()
        for execution in executions:
            execution.cancelled.set()
        deadline = self.clock() + 15
        for execution in executions:
            while not execution.done:
                self._cancel_jobs(execution)
                execution.finished.wait(CANCEL_REPEAT)
                if self.clock() > deadline:
                    break
        for worker in list(shared.workers.values()):
            worker.close()
        if shared.streams is not None:
            # Stop streaming queries at a batch boundary while Spark still runs.
            shared.streams.shutdown()
        stopped = EngineStopped(f"Engine {self.engine_id} stopped ({shared.exit_reason}).")
        error = failed or stopped.recorded()
        for session in self.store.sessions.of_engine(self.engine_id):
            end_session(shared, session.id, SessionState.DEAD, error)
        now = self.clock()
        final = EngineState.FAILED if failed else EngineState.STOPPED
        shared.exiting.set()  # the heartbeat must not take our own final state for a verdict
        self.store.transitions.engine(self.engine_id, final, now=now, error=failed)
        log.info("engine %s %s (%s)", self.engine_id, final.value, shared.exit_reason)
        self._stop_spark()

    def _stop_spark(self) -> None:
        if self.shared.spark is not None:
            try:
                self.shared.spark.stop()
            except Exception:
                log.exception("stopping Spark failed")

    # -- the loop ------------------------------------------------------------------------

    def _tick(self, needed: Look = Look.ALL) -> bool:
        """One pass over this engine's work, reading what ``needed`` says (what woke it:
        everything on the safety poll); True if anything happened."""
        shared = self.shared
        self._ticks += 1
        reap_executions(shared)  # first: a session whose statement just ended takes its next
        busy = settle(shared, tick=self._ticks)  # claims the store took but did not answer
        if self._backlog:
            needed |= Look.WORK  # a statement waits behind one that may have ended
        try:
            if needed & Look.WORK:
                busy |= self._take_work()
            busy |= pass_on_cancels(shared, tick=self._ticks, read=bool(needed & Look.CANCELS))
        except Exception:
            shared.wake_for(needed)  # not read: read once the store answers
            raise
        self._recover_tables()
        if busy or shared.running:
            self._last_busy = self.clock()
        return busy

    def _take_work(self) -> bool:
        """Read the engine's sessions and their next statements: open new sessions, close
        ended ones, claim a statement for each idle session. What stays waiting behind a
        running statement is remembered, so that its end brings a read."""
        shared = self.shared
        busy = False
        work = self.store.sessions.work_of_engine(self.engine_id)
        active_ids = {item.session.id for item in work}
        for session_id in list(shared.sessions):
            if session_id not in active_ids:
                self._keeper.close(session_id)
                busy = True
        backlog = False
        for session, waiting, more_waiting in work:
            if session.state is SessionState.STARTING:
                if session.id not in shared.sessions:
                    self._keeper.open(session)
                else:
                    self._keeper.say_open(session.id)  # its first say met a store outage
                busy = True
            if waiting is None:
                continue
            if (
                not shared.stop.is_set()
                and session.id in shared.sessions
                and not mark_waiting_behind(shared, session.id)
            ):
                claimed = claim(
                    shared, session.id, waiting, tick=self._ticks, more_waiting=more_waiting
                )
                busy |= claimed
                backlog |= more_waiting or not claimed
            else:
                backlog = True
        self._backlog = backlog
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
            assert self.shared.own_spark is not None
            recover(self.shared.own_spark, self.store, self.settings, now=now)
        except Exception:
            log.exception("table recovery failed")

    def _cancel_jobs(self, execution: Execution) -> None:
        cancel_jobs(self.shared.spark, execution)
