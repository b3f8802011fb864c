"""Queries for every door: read one, list them, wait until final, page its result, cancel.

Submitting and cancelling are the gateway's (``gateway.py``); this module adds the reads that
every door made its own way before: a wait that sleeps on the store's hints (``watcher.py``),
one answer for a result that is not there (``ResultNotReady``, ``ResultGone``), the
visibility rule for lists.
"""

from __future__ import annotations

import asyncio
import dataclasses
import threading
import time
from collections import OrderedDict
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

import pyarrow as pa

from sparkgate import results
from sparkgate.auth.principal import Principal
from sparkgate.errors import ResultGone, ResultNotReady
from sparkgate.service.gateway import Gateway
from sparkgate.service.visibility import scope
from sparkgate.service.watcher import StatementWatcher
from sparkgate.settings import Settings
from sparkgate.states import TERMINAL_STATEMENT_STATES, StatementKind, StatementState
from sparkgate.store import Store
from sparkgate.store.records import Page, SessionRecord, StatementRecord, Window


@dataclass(frozen=True)
class ResultPage:
    """Rows ``offset`` to ``offset + limit`` of a query's result, of ``total``."""

    schema: list[dict[str, Any]]
    rows: list[list[Any]]
    offset: int
    limit: int
    total: int


@dataclass(frozen=True)
class Fetched:
    """Rows of a query's result read at its cursor: ``batches`` start at row ``position``."""

    batches: list[pa.RecordBatch]
    position: int
    total: int

    @property
    def more(self) -> bool:
        taken: int = sum(b.num_rows for b in self.batches)
        return self.position + taken < self.total


# A cursor-paging client (HiveServer2's FetchResults, 1000 rows a call by default) would read
# its query, and check that it may, on every page: a read as dear as the page itself. An
# ended query's record changes no more but for its cursor, which the fetch moves by
# compare-and-set and so keeps here too; the check is made again after this many seconds.
_ENDED_RECHECK = 5.0
_ENDED_MAX = 256


@dataclass
class _Ended:
    statement: StatementRecord
    checked_at: dict[str | None, float]  # by user: when their access was last checked


@dataclass
class Queries:
    settings: Settings
    store: Store
    gateway: Gateway
    watcher: StatementWatcher
    _ended: OrderedDict[int, _Ended] = field(default_factory=OrderedDict, init=False, repr=False)
    _ended_lock: threading.Lock = field(default_factory=threading.Lock, init=False, repr=False)

    def for_fetch(self, query_id: int, *, user: Principal) -> StatementRecord:
        """:meth:`get` for a client paging the query's result by its cursor: once the query
        has ended, its record (cursor included) is kept for the next page's call."""
        now = time.monotonic()
        with self._ended_lock:
            kept = self._ended.get(query_id)
            checked = None if kept is None else kept.checked_at.get(user.name)
            if kept is not None and checked is not None and now - checked < _ENDED_RECHECK:
                self._ended.move_to_end(query_id)
                return kept.statement
        statement = self.gateway.statement(query_id, user=user)
        if statement.state in TERMINAL_STATEMENT_STATES:
            with self._ended_lock:
                kept = self._ended.setdefault(query_id, _Ended(statement, {}))
                kept.statement = statement
                kept.checked_at[user.name] = now
                self._ended.move_to_end(query_id)
                while len(self._ended) > _ENDED_MAX:
                    self._ended.popitem(last=False)
        return statement

    def _moved(self, statement: StatementRecord, position: int) -> None:
        """The cursor moved to ``position``: a kept record of the query says so."""
        with self._ended_lock:
            kept = self._ended.get(statement.id)
            if kept is not None:
                kept.statement = dataclasses.replace(kept.statement, fetched=position)

    def get(self, query_id: int, *, user: Principal) -> StatementRecord:
        """The query, if the user may see it; else QueryNotFound, as for a missing id."""
        return self.gateway.statement(query_id, user=user)

    def list_page(
        self,
        *,
        user: Principal,
        owner: str | None = None,
        session_id: int | None = None,
        states: Iterable[StatementState] | None = None,
        window: Window = Window(),
    ) -> Page[StatementRecord]:
        """The queries the user may see (admins: ``owner``'s, or everyone's), newest first."""
        visible = scope(user, owner)
        return self.store.statements.list_page(
            session_id=session_id,
            states=states,
            owner=visible.owner,
            creator=visible.creator,
            newest_first=True,
            **window.kwargs(),
        )

    def in_session(
        self, session_id: int, *, user: Principal, window: Window = Window()
    ) -> Page[StatementRecord]:
        """A session's statements in order, if the user may see the session."""
        self.gateway.session(session_id, user=user)
        return self.store.statements.list_page(session_id=session_id, **window.kwargs())

    def by_seq(self, session_id: int, seq: int, *, user: Principal) -> StatementRecord | None:
        """A session's statement by its number in the session (0 first), if any."""
        self.gateway.session(session_id, user=user)
        return self.store.statements.find_by_seq(session_id, seq)

    def first_of_sessions(self, sessions: Iterable[SessionRecord]) -> dict[int, StatementRecord]:
        """The first statement of each of sessions already read (a batch's statement)."""
        return self.store.statements.first_of_sessions(s.id for s in sessions)

    # -- waiting -------------------------------------------------------------------------

    async def wait(self, statement: StatementRecord, seconds: float) -> StatementRecord:
        """The statement once final, or as it is after ``seconds`` (at most long_poll_max).
        The watcher's record when it read it final; else one read. The owner is kept."""
        if statement.state in TERMINAL_STATEMENT_STATES:
            return statement
        final = await self.watcher.wait(statement.id, min(seconds, self.settings.long_poll_max))
        if final is None:
            final = await asyncio.to_thread(self.store.statements.get, statement.id)
        return dataclasses.replace(final, owner=statement.owner)

    async def finished(self, statement: StatementRecord) -> StatementRecord:
        """The statement once it has ended, however long that takes (a client that asked
        for a synchronous answer, or a result before it polled)."""
        while statement.state not in TERMINAL_STATEMENT_STATES:
            statement = await self.wait(statement, self.settings.long_poll_max)
        return statement

    # -- results -------------------------------------------------------------------------

    def result_page(
        self, statement: StatementRecord, offset: int = 0, limit: int | None = None
    ) -> ResultPage:
        """A page of a succeeded query's rows (``limit`` defaults to 1000, at most
        ``result_page_max``)."""
        path = self._result_path(statement)
        page_limit = min(limit if limit is not None else 1000, self.settings.result_page_max)
        try:
            rows, total = results.read_page(path, offset, page_limit)
        except FileNotFoundError as exc:
            raise ResultGone(statement.id, path) from exc
        info = statement.result_info
        return ResultPage(info.schema if info else [], rows, offset, page_limit, total)

    def result_batches(
        self, statement: StatementRecord, offset: int, limit: int
    ) -> tuple[list[pa.RecordBatch], int]:
        """The Arrow batches holding rows ``offset`` to ``offset + limit``, and the total."""
        path = self._result_path(statement)
        try:
            return results.read_batches(path, offset, limit)
        except FileNotFoundError as exc:
            raise ResultGone(statement.id, path) from exc

    def _result_path(self, statement: StatementRecord) -> str:
        try:
            return result_path(statement)
        except ResultNotReady:
            # Only now, when there is none, ask whether a Connect client had the rows.
            if self.store.connect.records_operation(statement.id):
                raise ResultNotReady(statement.id, statement.state.value, connect=True) from None
            raise

    def fetch(self, statement: StatementRecord, *, from_start: bool, limit: int) -> Fetched:
        """The next ``limit`` rows after the query's cursor (or its first rows), moving the
        cursor past them. The cursor is in the store, so a client goes on through any node;
        two fetches of one query at once each get rows of their own."""
        while True:
            position = 0 if from_start else statement.fetched
            batches, total = self.result_batches(statement, position, limit)
            taken = sum(b.num_rows for b in batches)
            if self.store.statements.move_cursor(statement.id, statement.fetched, position + taken):
                self._moved(statement, position + taken)
                return Fetched(batches, position, total)
            # Another fetch (or node) moved the cursor first: read from where it is now.
            statement = dataclasses.replace(
                self.store.statements.get(statement.id), owner=statement.owner
            )
            self._moved(statement, statement.fetched)


def result_path(statement: StatementRecord) -> str:
    """Where a query's result is: only a query that succeeded with rows has one."""
    info = statement.result_info
    if statement.state is not StatementState.SUCCESS or info is None or info.path is None:
        load = statement.kind is StatementKind.LOAD
        raise ResultNotReady(statement.id, statement.state.value, load=load)
    return info.path
