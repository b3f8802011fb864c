"""The next page of each result being fetched, prepared while its client decodes the current one.

A HiveServer2 client asks for a page, decodes it, and only then asks for the next: without
this, the node waits while the client decodes, and the client while the node reads and
encodes. So when a page is answered, the worker thread that moved the cursor also copies the
rows of the page after it (same size, from where it ended) out of the result file, and once
the answer is written the event loop encodes them, while the client decodes.

A page read ahead is only a copy of part of a result file, which is written once and never
changes: reading it moves no cursor and checks no access. Every FetchResults call still checks
the caller's access and moves the cursor in the store by compare-and-set (so a page fetched
through another node, or by another fetch at the same time, is followed); only then, if the
rows that move gave it are exactly the ones read ahead, it sends their encoding.

Why the loop encodes: on these machines a thread woken for a page costs more than the page
(a sleeping core's cold caches: about 190 us of CPU for a 1000-row page against 60 us on a
running one), and the loop has just written the answer. It is bounded: nothing is read ahead
after a page of more than ``MAX_PAGE_BYTES`` encoded (then the worker encodes each page as it
is asked for), so the loop spends at most that page's encoding, less than it spent before
(when it encoded every reply itself). The file is read by the worker, never on the loop.

Bounds: one page per operation, for at most ``MAX_OPERATIONS`` operations (the least
recently served dropped first), nothing after the last page. A page is dropped when another
is read ahead for its operation, and when its operation is closed or cancelled or its
session closed.
"""

from __future__ import annotations

import logging
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass

import pyarrow as pa

from sparkgate.hive2.wire import EncodedRowSet

log = logging.getLogger("sparkgate.hive2")

MAX_OPERATIONS = 16
MAX_PAGE_BYTES = 256 * 1024


@dataclass(frozen=True)
class PageKey:
    """Which rows a page holds: ``limit`` rows from ``position`` of the result at ``path``."""

    statement_id: int
    path: str
    position: int
    limit: int
    columnar: bool


@dataclass
class Ahead:
    """The page after the one just answered: its rows (in memory, copied out of the result
    file) and, once the event loop has encoded them, ``page``. ``page`` is set once, on the
    loop; the next call's worker thread reads it (None: it encodes the rows itself)."""

    key: PageKey
    session_id: int | None
    batches: list[pa.RecordBatch]
    page: EncodedRowSet | None = None


class ReadAhead:
    """Pages read ahead, by operation (this node only; used on the event loop's thread)."""

    def __init__(
        self, max_operations: int = MAX_OPERATIONS, max_page_bytes: int = MAX_PAGE_BYTES
    ) -> None:
        self.max_operations = max_operations
        self.max_page_bytes = max_page_bytes
        self._pages: OrderedDict[int, Ahead] = OrderedDict()

    def __len__(self) -> int:
        return len(self._pages)

    def wants_after(self, served: EncodedRowSet) -> bool:
        """Whether to read ahead after ``served``: the next page is about its size. Any
        thread."""
        return len(served.encoded) <= self.max_page_bytes

    def get(self, statement_id: int) -> Ahead | None:
        """What is read ahead for the operation's next call."""
        return self._pages.get(statement_id)

    def keep(
        self,
        ahead: Ahead,
        encode: Callable[[Ahead], EncodedRowSet],
        start: Callable[[Callable[[], None]], object],
    ) -> None:
        """Keep ``ahead`` in place of the operation's previous page, and have it encoded by
        ``start`` (the loop's ``call_soon``: after the answer being sent is written)."""
        self.drop(ahead.key.statement_id)
        self._pages[ahead.key.statement_id] = ahead
        while len(self._pages) > self.max_operations:
            self._pages.popitem(last=False)
        start(lambda: self._encode(ahead, encode))

    def drop(self, statement_id: int) -> None:
        """Forget the operation's page (closed, cancelled, or another is read ahead)."""
        self._pages.pop(statement_id, None)

    def drop_session(self, session_id: int) -> None:
        for statement_id in [k for k, a in self._pages.items() if a.session_id == session_id]:
            self.drop(statement_id)

    def _encode(self, ahead: Ahead, encode: Callable[[Ahead], EncodedRowSet]) -> None:
        if self._pages.get(ahead.key.statement_id) is not ahead:
            return  # dropped or replaced meanwhile: nobody will ask for it
        try:
            ahead.page = encode(ahead)
        except Exception:  # the next call encodes the rows itself, and meets the error there
            log.exception("HiveServer2: a page read ahead could not be encoded")
            self.drop(ahead.key.statement_id)
