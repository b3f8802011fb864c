"""What the engine's steps share: who the engine is (settings, store, id, clock), its Spark, the
sessions it has open and the statements it runs, the events that stop and wake its loop, and
the note of a store outage.

One object handed to each step (``stopping``, ``startup``, ``sessions``, ``claims``,
``cancels``, ``running``, ``reporting``, ``heartbeat``, ``connect_operations``), so that what a
step reads and writes of the engine is written where it is given, not reached for through one
large ``self``. Three threads use it (the loop, the heartbeat, each session's worker):
``running`` and the outage note are read and written under ``lock``.
"""

from __future__ import annotations

import enum
import logging
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from sparkgate.engine.execution import Execution, SessionWorker
from sparkgate.runtime.session import OpenSession
from sparkgate.settings import Settings
from sparkgate.store import Store
from sparkgate.store.records import EngineRecord, StatementRecord

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

    from sparkgate.engine.authz.decider import Decider
    from sparkgate.streaming.supervisor import StreamSupervisor

log = logging.getLogger("sparkgate.engine")


@dataclass(frozen=True)
class UnsettledClaim:
    session_id: int
    waiting: StatementRecord  # the statement as it was claimed
    at: float  # the claim's time, which it wrote as the statement's start


class Look(enum.Flag):
    """What the loop's next pass must read of the store, by what woke it."""

    NOTHING = 0
    WORK = enum.auto()  # its sessions and their next waiting statements
    CANCELS = enum.auto()  # the states of the statements it runs
    ALL = WORK | CANCELS


@dataclass(eq=False)
class Shared:
    settings: Settings
    store: Store
    engine_id: int
    clock: Callable[[], float]
    record: EngineRecord | None = None
    spark: SparkSession | None = None
    own_spark: SparkSession | None = None  # the engine's own work (authz: unchecked)
    decider: Decider | None = None
    authz: Any = None  # the SQL extension's Authz object in the JVM
    streams: StreamSupervisor | None = None
    connect_secret: str | None = None  # its Spark Connect service's, if it runs one
    sessions: dict[int, OpenSession] = field(default_factory=dict)
    workers: dict[int, SessionWorker] = field(default_factory=dict)
    running: dict[int, Execution] = field(default_factory=dict)
    served_session: bool = False
    # What a fresh session of this engine starts with (result reuse), as last recorded.
    fresh_context: str | None = None
    lock: threading.Lock = field(default_factory=threading.Lock)
    # Graceful: finish running statements, take no more.
    stop: threading.Event = field(default_factory=threading.Event)
    stop_now: threading.Event = field(default_factory=threading.Event)
    # Set by hints from the store's writers, finished statements and stop requests: the
    # loop looks at the store when woken, and on the safety poll otherwise.
    wake: threading.Event = field(default_factory=threading.Event)
    # What the woken pass must read (see ``wake_for``).
    needed: Look = Look.NOTHING
    exiting: threading.Event = field(default_factory=threading.Event)
    exit_reason: str = "stopped"
    store_out_since: float | None = None  # while the store cannot be reached
    # Claims whose commit went unanswered (the store dropped away during it): the loop's
    # only, settled by claims.settle once the store answers (statement id -> the claim).
    unsettled_claims: dict[int, UnsettledClaim] = field(default_factory=dict)

    def wake_for(self, look: Look = Look.ALL) -> None:
        """Wake the loop, whose next pass reads ``look`` of the store. A statement's end
        needs no read (``Look.NOTHING``), and wakes the loop only when a statement of its
        session waits behind it (``claims.statement_ended``): that one is known from the
        last read, and one submitted since hinted. So a statement costs the engine one read
        of its work and one wake-up of its loop."""
        with self.lock:
            self.needed |= look
        self.wake.set()

    def take_needed(self) -> Look:
        with self.lock:
            needed, self.needed = self.needed, Look.NOTHING
        return needed

    def running_executions(self) -> list[Execution]:
        with self.lock:
            return list(self.running.values())

    def store_out(self, exc: Exception) -> None:
        """Note an outage of the store (logged once, however many threads meet it)."""
        with self.lock:
            first = self.store_out_since is None
            if first:
                self.store_out_since = self.clock()
        if first:
            log.warning("the store cannot be reached (%s); running statements go on", exc)
        self.stop_now.wait(0.5 if threading.current_thread() is threading.main_thread() else 0)

    def store_back(self) -> None:
        with self.lock:
            since, self.store_out_since = self.store_out_since, None
        if since is not None:
            log.warning("the store is reachable again after %.1fs", self.clock() - since)
