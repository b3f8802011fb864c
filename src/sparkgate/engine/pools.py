"""Which Spark FAIR pool a statement's jobs run in: its resource group's, whose weight is the
group's ``schedulingWeight`` (so concurrent statements of different groups in one shared
driver share it by the groups' weights, fairly within a group), else its session's own.

The groups' configuration is read from the store at most every ``TTL`` seconds, and only while
statements run; with groups configured, a statement's group is one read of its place.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable

from sparkgate.store import Store
from sparkgate.store.resource_groups import GroupSpec, spec_of

log = logging.getLogger("sparkgate.engine")

TTL = 10.0


class Pools:
    def __init__(self, store: Store, clock: Callable[[], float] = time.monotonic) -> None:
        self._store = store
        self._clock = clock
        self._lock = threading.Lock()
        self._specs: dict[str, GroupSpec] = {}
        self._read_at: float | None = None

    def of(self, statement_id: int, session_id: int) -> tuple[str, int]:
        """The pool's name and, for a resource group's, its weight (0: a session's pool).
        The store out of reach: the session's pool (the statement runs all the same)."""
        try:
            if self._groups():
                place = self._store.resource_groups.where(statement_id)
                if place is not None:
                    spec = spec_of(self._specs, place.resource_group)
                    weight = spec.scheduling_weight if spec else 1
                    return f"group:{place.resource_group}", weight
        except Exception:
            log.warning("statement %s: its resource group's pool unknown", statement_id)
        return f"session-{session_id}", 0

    def _groups(self) -> bool:
        now = self._clock()
        with self._lock:
            if self._read_at is not None and now - self._read_at < TTL:
                return bool(self._specs)
            self._read_at = now
        specs = self._store.resource_groups.configured()
        with self._lock:
            self._specs = specs
        return bool(specs)
