"""Heartbeat: a thread of its own that tells the store this engine lives, hears back what the
store says of it (stopping, or given up on), records the progress of running statements and
ends Spark Connect operations nobody will hear the end of.

Apart from the loop, on its own thread, so that a long query, a busy loop or a store write
waiting out an outage never makes the engine look dead; and the one place that gives up when
the store has been out of reach for longer than the engine's patience.
"""

from __future__ import annotations

import logging
import os
import socket

from sparkgate.engine.connect_operations import ConnectOperations
from sparkgate.engine.shared import Shared
from sparkgate.engine.stopping import Stopping
from sparkgate.store.outage import is_unreachable
from sparkgate.store.records import TaskCount

log = logging.getLogger("sparkgate.engine")

# An engine with no session heartbeats as seldom as six beats per heartbeat timeout allow (and
# its loop looks at the store less often: engine.process): a warm or spare engine waiting for
# its first session spent more of a core than a raw idle driver does (bench/floor.py, row 7).
_IDLE_BEATS_PER_TIMEOUT = 6


class Heartbeat:
    def __init__(self, shared: Shared, stopping: Stopping, connect: ConnectOperations) -> None:
        self._shared = shared
        self._stopping = stopping
        self._connect = connect

    def loop(self) -> None:
        shared = self._shared
        last_ok = shared.clock()
        interval = shared.settings.engine_heartbeat_interval
        while not shared.stop_now.is_set() and not shared.exiting.is_set():
            now = shared.clock()
            try:
                state = shared.store.engines.heartbeat(
                    shared.engine_id, now=now, host=socket.gethostname()
                )
                last_ok = now
                shared.store_back()
            except Exception as exc:
                if not is_unreachable(exc):
                    log.exception("heartbeat failed")
                shared.store_out(exc)
                # Reapers judge heartbeats only a whole timeout after they reach the store
                # again, so riding out an outage costs nothing. An engine cut off for longer
                # than its patience gives back its cluster resources.
                if now - last_ok > shared.settings.engine_store_patience:
                    log.error("store unreachable for %.0fs; exiting", now - last_ok)
                    os._exit(3)
                state = None
            self._stopping.obey(state)
            self._record_progress()
            try:
                self._connect.end_gone_operations()
            except Exception:  # never at the cost of the heartbeat
                log.exception("ending gone Connect operations failed")
            try:
                self._connect.record_costs()
            except Exception:
                log.exception("recording what Connect operations cost failed")
            shared.stop_now.wait(self._beat_interval(interval))

    def _beat_interval(self, interval: float) -> float:
        """The heartbeat's interval: as set while the engine has sessions (it also records
        their progress), longer while it has none."""
        shared = self._shared
        if shared.sessions or shared.running:
            return interval
        return max(interval, shared.settings.engine_heartbeat_timeout / _IDLE_BEATS_PER_TIMEOUT)

    def _record_progress(self) -> None:
        shared = self._shared
        if shared.spark is None:
            return
        # A statement younger than a beat is skipped: most end before the next one, and a
        # walk costs several Py4J calls and a store write (a busy engine's beats would walk
        # nearly every short statement once, for a progress nobody reads).
        now = shared.clock()
        young = now - shared.settings.engine_heartbeat_interval
        executions = [
            execution
            for execution in shared.running_executions()
            if (execution.statement.started_at or now) <= young
        ]
        if not executions:
            return
        tracker = shared.spark.sparkContext.statusTracker()
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
                    shared.store.statements.set_progress(
                        execution.statement.id,
                        done / total,
                        now=shared.clock(),
                        tasks=TaskCount(done, total),
                    )
            except Exception:
                log.debug("progress of %s unavailable", execution.tag, exc_info=True)
