"""Stopping streaming queries: at a micro-batch boundary when STOP STREAM or the store asks, when
a session or the engine ends (a stream job's queries then only pause, ``restarting``, until the
job's next session), and at once when the store says a query is no longer this engine's.

Apart from the supervisor's loop because stops come from every side (statements, the engine,
the loop following the store, a restart that lost its claim) and each may wait for a batch to
end: they run on threads of their own, and all end in the same few writes.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable

from sparkgate.recorded import RecordedError
from sparkgate.states import INACTIVE_STREAM_QUERY_STATES, StreamQueryState
from sparkgate.streaming.runner import stop_gracefully
from sparkgate.streaming.supervised import Supervised, Supervision

log = logging.getLogger("sparkgate.streams")

_Q = StreamQueryState


class Stopping:
    def __init__(self, shared: Supervision) -> None:
        self._shared = shared

    def follow_store(self) -> None:
        shared = self._shared
        with shared.lock:
            watched = [s for s in shared.queries.values() if not s.stopping]
        if not watched:
            return
        rows = shared.store.stream_queries.states(s.id for s in watched)
        for supervised in watched:
            row = rows.get(supervised.id)
            if row is None or row[1] != supervised.session_id:
                self.lost_claim(supervised, None)  # deleted, or run by another session now
            elif row[0] is _Q.STOPPING:
                self.stop_in_background(supervised)
            elif row[0] in INACTIVE_STREAM_QUERY_STATES:
                self.lost_claim(supervised, row[0])

    def lost_claim(self, supervised: Supervised, state: StreamQueryState | None) -> None:
        """The row no longer says what this engine does: follow it (a stop asked), or stop
        running what is no longer ours."""
        shared = self._shared
        if state is _Q.STOPPING:
            self.stop_in_background(supervised)
            return
        log.info("query %s is %s in the store; letting it go", supervised.spec.name, state)
        with shared.lock:
            supervised.stopping = True
        query = supervised.query
        shared.forget(supervised)
        if query is not None:
            self._background(
                lambda: stop_gracefully(query, shared.settings.stream_stop_timeout, shared.hurry)
            )

    def stop_in_background(self, supervised: Supervised) -> None:
        with self._shared.lock:
            if supervised.stopping:
                return
            supervised.stopping = True
        self._background(lambda: self.stop_now(supervised, None))

    def _background(self, work: Callable[[], object]) -> None:
        shared = self._shared

        def run() -> None:
            try:
                work()
            except Exception:
                log.exception("stopping a streaming query failed")

        thread = threading.Thread(target=run, name="stop-stream", daemon=True)
        with shared.lock:
            shared.stops = [t for t in shared.stops if t.is_alive()] + [thread]
        thread.start()

    def stop_many(self, ending: list[Supervised], reason: RecordedError | None) -> None:
        threads = [
            threading.Thread(target=self.stop_now, args=(s, reason), daemon=True) for s in ending
        ]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(self._shared.settings.stream_stop_timeout + 5)

    def stop_now(self, supervised: Supervised, reason: RecordedError | None) -> None:
        """Stop at a batch boundary and record it. ``reason``: the session (or engine) ends
        but a stream job's query only pauses, ``restarting``, until the job's next session."""
        shared = self._shared
        with shared.lock:
            supervised.stopping = True
        query = supervised.query
        try:
            if query is not None and query.isActive:
                between = stop_gracefully(query, shared.settings.stream_stop_timeout, shared.hurry)
                if not between:
                    log.warning("query %s stopped mid-batch (timeout)", supervised.spec.name)
        except Exception:
            log.exception("stopping query %s failed", supervised.spec.name)
        if supervised.job_id is not None and reason is not None:
            paused = shared.store.transitions.stream_query(
                supervised.id,
                _Q.RESTARTING,
                now=shared.clock(),
                expected=[_Q.STARTING, _Q.RUNNING],
                guard=supervised.guard,
                error=reason,
                next_restart_at=None,
            )
            if paused.applied or paused.state is _Q.RESTARTING:
                if paused.state is _Q.RESTARTING and not paused.applied:
                    shared.store.stream_queries.update(supervised.id, next_restart_at=None)
                shared.forget(supervised)
                return
        shared.finish(supervised, _Q.STOPPED, None)
