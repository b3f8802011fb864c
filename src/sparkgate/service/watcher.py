"""Long polling that sleeps until the store says something changed.

Requests waiting for queries to finish register here. One task per node reads the awaited
queries that are final, in a single query, and wakes their requests with the record read. It
reads when a hint says a statement it waits for became final (``store.hints``: whoever writes
a final state sends one) and, should a hint be lost, on the safety poll. Nothing reads while
nobody waits.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections import OrderedDict

from sparkgate.store import Store
from sparkgate.store.hints import NODES, Listener
from sparkgate.store.records import StatementRecord

log = logging.getLogger("sparkgate.watcher")

# Statements hinted final lately: a request registering just after its query's hint went by
# needs no read to learn it is over.
_RECENT = 4096


class StatementWatcher:
    def __init__(self, store: Store, safety_poll: float = 1.0) -> None:
        self.store = store
        self.safety_poll = safety_poll
        self._waiters: dict[int, list[asyncio.Future[StatementRecord | None]]] = {}
        self._recent: OrderedDict[int, None] = OrderedDict()
        self._look = asyncio.Event()
        self._task: asyncio.Task[None] | None = None
        self._listener: Listener | None = None

    async def wait(self, statement_id: int, timeout: float) -> StatementRecord | None:
        """Return when the statement is final, or after ``timeout`` seconds: its record when
        the watcher read it final, else None (read it yourself)."""
        loop = asyncio.get_running_loop()
        if self._listener is None:

            def on_hint(payload: str) -> None:  # on the listener's thread
                loop.call_soon_threadsafe(self._hinted, payload)

            self._listener = self.store.db.hints.listen(NODES, on_hint)
        if statement_id in self._recent:
            return None
        future: asyncio.Future[StatementRecord | None] = loop.create_future()
        self._waiters.setdefault(statement_id, []).append(future)
        if self._task is None or self._task.done():
            self._task = asyncio.create_task(self._watch())
        try:
            return await asyncio.wait_for(asyncio.shield(future), timeout)
        except TimeoutError:
            return None
        finally:
            waiting = self._waiters.get(statement_id, [])
            if future in waiting:
                waiting.remove(future)
            if not waiting:
                self._waiters.pop(statement_id, None)

    def _hinted(self, payload: str) -> None:
        if not payload:
            self._look.set()  # a listener (re)connected: hints may have been missed
            return
        try:
            statement_id = int(payload)
        except ValueError:
            return
        self._recent[statement_id] = None
        if len(self._recent) > _RECENT:
            self._recent.popitem(last=False)
        if statement_id in self._waiters:
            self._look.set()

    async def _watch(self) -> None:
        # No read before the first hint: the request has just read its query (not final),
        # and a hint that went by since is in _recent.
        while self._waiters:
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._look.wait(), self.safety_poll)
            self._look.clear()  # before reading: a hint during the read means read again
            if not self._waiters:
                break
            try:
                final = await asyncio.to_thread(self.store.statements.final, list(self._waiters))
            except Exception:
                log.exception("reading statement states failed")
                final = {}
            for statement_id, record in final.items():
                for future in self._waiters.pop(statement_id, []):
                    if not future.done():
                        future.set_result(record)

    async def close(self) -> None:
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task
        if self._listener is not None:
            await asyncio.to_thread(self._listener.close)
