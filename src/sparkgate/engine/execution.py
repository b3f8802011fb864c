"""One statement's run as the engine tracks it, and the thread that runs a session's statements.

Every step of the engine loop handles these: a claim creates an ``Execution`` and gives it to
its session's ``SessionWorker``, a cancel sets its flag, the runner runs it on the worker's
thread, the heartbeat reads its progress. Kept apart so that each step can name them without
importing another step.
"""

from __future__ import annotations

import queue
import threading
from collections.abc import Callable
from dataclasses import dataclass, field

from sparkgate.runtime.session import OpenSession
from sparkgate.statement_cost import StatementCost
from sparkgate.store.audit import TableUseEvent
from sparkgate.store.records import StatementRecord


@dataclass
class Execution:
    statement: StatementRecord
    session: OpenSession
    tag: str
    cancelled: threading.Event = field(default_factory=threading.Event)
    finished: threading.Event = field(default_factory=threading.Event)
    last_cancel: float = 0.0
    claimed_in: int = 0  # the engine's tick that claimed it
    # Whether its end must wake the engine's loop: a statement of its session waits behind
    # it. Set by the loop under ``Shared.lock`` (see ``claims.mark_waiting_behind``).
    wake_after: bool = False
    # The tables it read and wrote ({"read": [...], "written": [...]}), recorded with its end.
    touched: dict[str, list[str]] | None = None
    # Its access history (each use of a privilege on a table or view), recorded with its end.
    uses: list[TableUseEvent] = field(default_factory=list)
    # What its Spark tasks cost, recorded with its end; None if it ran none.
    cost: StatementCost | None = None
    # For result reuse (from its checked plans, ``Touched``): whether its result may be served
    # again, where each table it read keeps its files, whose decision each read used.
    reusable: bool = False
    locations: dict[str, str] = field(default_factory=dict)
    readers: dict[str, tuple[str, ...]] = field(default_factory=dict)
    # Its session's context after it ran (``Reuse.context``); None: reuse turned off there,
    # or not known (no extension).
    context_after: str | None = None

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
        after: Callable[[Execution], None],
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
                self._after(execution)  # the engine may take the session's next statement
        self._ended()
