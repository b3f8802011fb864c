"""What the stream supervisor's parts share: one supervised query (``Supervised``), and the
state of the supervision (``Supervision``): who the engine is, the queries it runs by id and by
run id, the lock over them, the threads that stop them, and the write that ends a query.

Apart from ``supervisor`` so that its parts (``restarts``, ``stopping``) are given what they
read and write of it explicitly rather than reaching for it through one large ``self``. Several
threads use it (the supervisor's loop, Spark's listener, statements, stop threads): the
queries, their runs and each ``Supervised``'s fields are read and written under ``lock``.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from sparkgate.recorded import RecordedError
from sparkgate.runtime import stream_costs
from sparkgate.runtime.session import OpenSession
from sparkgate.settings import Settings
from sparkgate.states import StreamQueryState
from sparkgate.store import Store
from sparkgate.stream_spec import QuerySpec

if TYPE_CHECKING:
    from pyspark.sql import DataFrame
    from pyspark.sql.streaming.query import StreamingQuery

_Q = StreamQueryState
log = logging.getLogger("sparkgate.streams")


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
    statement_id: int | None = None  # the statement that started it: what its cost counts for
    spark_id: str | None = None  # Spark's id of the query (its checkpoint's), once read

    @property
    def session_id(self) -> int:
        return self.session.record.id

    @property
    def guard(self) -> dict[str, int]:
        """The store's guard on this query's row: only the session running it moves it."""
        return {"session_id": self.session_id}


@dataclass(eq=False)
class Supervision:
    settings: Settings
    store: Store
    engine_id: int
    clock: Callable[[], float]
    # Once set (the engine must exit now), stops no longer wait for batches.
    hurry: threading.Event
    queries: dict[int, Supervised] = field(default_factory=dict)
    by_run: dict[str, Supervised] = field(default_factory=dict)
    stops: list[threading.Thread] = field(default_factory=list)
    lock: threading.RLock = field(default_factory=threading.RLock)

    def finish(
        self,
        supervised: Supervised,
        to: StreamQueryState,
        error: RecordedError | None,
        **values: Any,
    ) -> None:
        self.forget(supervised)
        if error is not None:  # None keeps the error the row has
            values["error"] = error
        self.store.transitions.stream_query(
            supervised.id,
            to,
            now=self.clock(),
            expected=[_Q.STARTING, _Q.RUNNING, _Q.RESTARTING, _Q.STOPPING],
            guard=supervised.guard,
            next_restart_at=None,
            **values,
        )

    def forget(self, supervised: Supervised) -> None:
        with self.lock:
            self.queries.pop(supervised.id, None)
            if supervised.run_id:
                self.by_run.pop(supervised.run_id, None)
        self.record_cost(supervised, self.clock(), settle=True)  # what its last batches cost
        supervised.query = None

    def record_cost(self, supervised: Supervised, now: float, *, settle: bool = False) -> None:
        """What the query's batches cost since the last take (each time its progress is
        written, and when it is let go), counted for the statement that started it: a
        stream's cost accumulates batch by batch."""
        if supervised.statement_id is None or supervised.query is None:
            return
        try:
            if supervised.spark_id is None:
                supervised.spark_id = str(supervised.query.id)
            cost = stream_costs.take(supervised.session.spark, supervised.spark_id, settle=settle)
            if cost is not None:
                self.store.statement_costs.add_stream(
                    supervised.statement_id, supervised.id, cost, now=now
                )
        except Exception:  # never at the cost of the query's progress or its stop
            log.exception("recording what stream query %s cost failed", supervised.id)
