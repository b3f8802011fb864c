"""Runs the background duties on a server node, each under its lease.

Every node runs a DutyRunner; for each duty only the node holding its lease does the work.
When that node dies its lease lapses after ``lease_ttl`` and another node takes over.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass

from sparkgate.store import Store
from sparkgate.store.outage import is_unreachable

log = logging.getLogger("sparkgate.duties")


@dataclass(frozen=True)
class Duty:
    name: str
    run: Callable[[float], object]  # takes now
    every: float = 0.0  # run at most this often (seconds); 0: every round


class DutyRunner:
    def __init__(
        self,
        store: Store,
        node_id: str,
        duties: list[Duty],
        *,
        interval: float,
        lease_ttl: float,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self.store = store
        self.node_id = node_id
        self.duties = duties
        self.interval = interval
        self.lease_ttl = lease_ttl
        self.clock = clock
        self._last_run: dict[str, float] = {}
        # Since when this node has reached the store without a break (a node just started
        # cannot know what came before): liveness judgements wait on it (duties/reaper.py).
        self.store_reachable_since = clock()
        self._store_lost = False
        # The leases this node took at its last write, and when: a node holding every lease
        # renews them every third of their lifetime, not every round (an idle node's largest
        # cost was this write, every 2 s). One missing any lease asks every round, to take
        # over soon after its holder dies.
        self._held: set[str] = set()
        self._renewed_at = float("-inf")
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, name="duties", daemon=True)

    def start(self) -> None:
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        if self._thread.ident is not None:  # started (a node whose doors failed never is)
            self._thread.join(timeout=10)
        for duty in self.duties:
            try:
                self.store.leases.release(duty.name, self.node_id)
            except Exception:
                log.exception("releasing lease %s failed", duty.name)

    def run_once(self) -> list[str]:
        """One round: the names of the duties this node held and ran."""
        ran: list[str] = []
        names = [duty.name for duty in self.duties]
        now = self.clock()
        if (
            self._store_lost
            or self._held != set(names)
            or now - self._renewed_at >= self.lease_ttl / 3
        ):
            try:
                self._held = self.store.leases.acquire_many(
                    names, self.node_id, now=now, ttl=self.lease_ttl
                )
                self._renewed_at = now
            except Exception as exc:
                self._held = set()
                self._store_failed(exc)
                return ran
        held = self._held
        if self._store_lost:
            self._store_lost = False
            self.store_reachable_since = self.clock()
            log.warning("the store is reachable again; liveness judgements resume in a timeout")
        for duty in self.duties:
            now = self.clock()
            try:
                if duty.name not in held:
                    continue
                if now - self._last_run.get(duty.name, float("-inf")) < duty.every:
                    continue  # held, but not due yet
                self._last_run[duty.name] = now
                duty.run(now)
                ran.append(duty.name)
            except Exception as exc:
                if is_unreachable(exc):
                    self._store_failed(exc)
                    return ran
                log.exception("duty %s failed", duty.name)
        return ran

    def _store_failed(self, exc: Exception) -> None:
        if is_unreachable(exc):
            if not self._store_lost:
                log.warning("the store cannot be reached (%s); duties wait for it", exc)
            self._store_lost = True
        else:
            log.exception("renewing the duties' leases failed")

    def _loop(self) -> None:
        while not self._stop.is_set():
            self.run_once()
            self._stop.wait(self.interval)
