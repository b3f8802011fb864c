"""What the stream supervisor's parts share: one supervised query (``Supervised``), and the
state of the supervision (``Supervision``): who the engine is, the queries it runs by id and by
run id, the lock over them, the threads that stop them, and the write that ends a query.

Apart from ``supervisor`` so that its parts (``restarts``, ``stopping``) are given what they
read and write of it explicitly rather than reaching for it through one large ``self``. Several
threads use it (the supervisor's loop, Spark's listener, statements, stop threads): the
queries, their runs and each ``Supervised``'s fields are read and written under ``lock``.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from sparkgate.recorded import RecordedError
from sparkgate.runtime.session import OpenSession
from sparkgate.settings import Settings
from sparkgate.states import StreamQueryState
from sparkgate.store import Store
from sparkgate.streaming.definitions import QuerySpec

if TYPE_CHECKING:
    from pyspark.sql import DataFrame
    from pyspark.sql.streaming.query import StreamingQuery

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
            supervised.query = None
