"""Long polling without a polling loop per request.

Requests waiting for queries to finish register here; one task reads the states of all the
awaited queries from the store in a single query per tick and wakes the requests whose query
reached a final state. The cost is one store read per tick per node, however many wait.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging

from sparkgate.states import TERMINAL_STATEMENT_STATES
from sparkgate.store import Store

log = logging.getLogger("sparkgate.watcher")


class StatementWatcher:
    def __init__(self, store: Store, interval: float = 0.01) -> None:
        self.store = store
        self.interval = interval
        self._waiters: dict[int, list[asyncio.Future[None]]] = {}
        self._task: asyncio.Task[None] | None = None

    async def wait(self, statement_id: int, timeout: float) -> None:
        """Return when the statement is final, or after ``timeout`` seconds."""
        future: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self._waiters.setdefault(statement_id, []).append(future)
        if self._task is None or self._task.done():
            self._task = asyncio.create_task(self._watch())
        try:
            await asyncio.wait_for(asyncio.shield(future), timeout)
        except TimeoutError:
            pass
        finally:
            waiting = self._waiters.get(statement_id, [])
            if future in waiting:
                waiting.remove(future)
            if not waiting:
                self._waiters.pop(statement_id, None)

    async def _watch(self) -> None:
        while self._waiters:
            try:
                states = await asyncio.to_thread(self.store.statements.states, list(self._waiters))
            except Exception:
                log.exception("reading statement states failed")
                states = {}
            for statement_id, state in states.items():
                if state in TERMINAL_STATEMENT_STATES:
                    for future in self._waiters.pop(statement_id, []):
                        if not future.done():
                            future.set_result(None)
            # Statements that vanished (cannot happen today) must not hold requests forever.
            for statement_id in [s for s in self._waiters if s not in states]:
                for future in self._waiters.pop(statement_id, []):
                    if not future.done():
                        future.set_result(None)
            await asyncio.sleep(self.interval)

    async def close(self) -> None:
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task
