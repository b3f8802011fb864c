"""Ended queries' records kept for the clients that page their results by cursor.

A cursor-paging client (HiveServer2's FetchResults, 1000 rows a call by default) would read its
query, and check that it may, on every page: a read as dear as the page itself. An ended
query's record changes no more but for its cursor, which the fetch moves by compare-and-set and
so keeps here too; the check is made again after ``RECHECK`` seconds.
"""

from __future__ import annotations

import dataclasses
import threading
from collections import OrderedDict
from dataclasses import dataclass, field

from sparkgate.store.records import StatementRecord

RECHECK = 5.0
KEPT_MAX = 256


@dataclass
class _Ended:
    statement: StatementRecord
    checked_at: dict[str | None, float]  # by user: when their access was last checked


@dataclass
class EndedQueries:
    """The last ``KEPT_MAX`` ended queries read for a fetch, and who may read them."""

    _kept: OrderedDict[int, _Ended] = field(default_factory=OrderedDict, init=False)
    _lock: threading.Lock = field(default_factory=threading.Lock, init=False)

    def find(self, query_id: int, user: str | None, now: float) -> StatementRecord | None:
        """The query's kept record, if ``user``'s access to it was checked lately."""
        with self._lock:
            kept = self._kept.get(query_id)
            checked = None if kept is None else kept.checked_at.get(user)
            if kept is None or checked is None or now - checked >= RECHECK:
                return None
            self._kept.move_to_end(query_id)
            return kept.statement

    def keep(self, statement: StatementRecord, user: str | None, now: float) -> None:
        """An ended query, just read (and its access checked) for ``user``."""
        with self._lock:
            kept = self._kept.setdefault(statement.id, _Ended(statement, {}))
            kept.statement = statement
            kept.checked_at[user] = now
            self._kept.move_to_end(statement.id)
            while len(self._kept) > KEPT_MAX:
                self._kept.popitem(last=False)

    def moved(self, query_id: int, position: int) -> None:
        """The query's cursor moved to ``position``: a kept record says so."""
        with self._lock:
            kept = self._kept.get(query_id)
            if kept is not None:
                kept.statement = dataclasses.replace(kept.statement, fetched=position)
