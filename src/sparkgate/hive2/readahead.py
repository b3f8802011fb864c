"""The next page of each result being fetched, prepared while its client decodes the current one.

A HiveServer2 client asks for a page, decodes it, and only then asks for the next: without
this, the node waits while the client decodes, and the client while the node reads and
encodes. So when a page is answered, the worker thread that moved the cursor hands the answer
to the event loop first and then copies the rows of the page after it (same size, from where
it ended) out of the result file; the event loop encodes them. Both happen while the answer
is on its way and the client decodes it: neither is on the path of a call.

A page read ahead is only a copy of part of a result file, which is written once and never
changes: reading it moves no cursor and checks no access. Every FetchResults call still checks
the caller's access and moves the cursor in the store by compare-and-set (so a page fetched
through another node, or by another fetch at the same time, is followed); only then, if the
rows that move gave it are exactly the ones read ahead, it sends their encoding.

The page is announced (``expect``) when its call is answered, on the loop, and filled
(``fill``) when its rows arrive: rows for a page no longer expected (the operation closed,
another page answered meanwhile) are dropped, so a late worker never brings back a page.

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

import asyncio
import contextvars
import logging
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass
from typing import TypeVar

import pyarrow as pa

from sparkgate.hive2.wire import EncodedRowSet

log = logging.getLogger("sparkgate.hive2")

R = TypeVar("R")
# A page's rows encoded as its answer: the page's key and its rows.
Encode = Callable[["PageKey", list[pa.RecordBatch]], EncodedRowSet]

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
    file; None until they are) and, once the event loop has encoded them, ``page``. ``page``
    is set once, on the loop; the next call's worker thread reads it (None: it encodes the
    rows itself)."""

    key: PageKey
    session_id: int | None
    batches: list[pa.RecordBatch] | None = None
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

    def expect(self, key: PageKey, session_id: int | None) -> None:
        """The page ``key`` is being read for its operation's next call (in place of any
        page kept for it); until it is filled, the call encodes its rows itself."""
        self.drop(key.statement_id)
        self._pages[key.statement_id] = Ahead(key, session_id)
        while len(self._pages) > self.max_operations:
            self._pages.popitem(last=False)

    def fill(
        self,
        key: PageKey,
        batches: list[pa.RecordBatch],
        encode: Encode,
        start: Callable[[Callable[[], None]], object],
    ) -> None:
        """The rows of the page ``key``, if it is still the one expected: kept, and encoded
        (``encode(key, batches)``) by ``start`` (the loop's ``call_soon``)."""
        ahead = self._pages.get(key.statement_id)
        if ahead is None or ahead.key != key or ahead.batches is not None:
            return  # closed, or another page answered since: nobody will ask for these rows
        ahead.batches = batches
        start(lambda: self._encode(ahead, batches, encode))

    def drop(self, statement_id: int) -> None:
        """Forget the operation's page (closed, cancelled, or another is read ahead)."""
        self._pages.pop(statement_id, None)

    def drop_session(self, session_id: int) -> None:
        for statement_id in [k for k, a in self._pages.items() if a.session_id == session_id]:
            self.drop(statement_id)

    def _encode(self, ahead: Ahead, batches: list[pa.RecordBatch], encode: Encode) -> None:
        if self._pages.get(ahead.key.statement_id) is not ahead:
            return  # dropped or replaced meanwhile: nobody will ask for it
        try:
            ahead.page = encode(ahead.key, batches)
        except Exception:  # the next call encodes the rows itself, and meets the error there
            log.exception("HiveServer2: a page read ahead could not be encoded")
            self.drop(ahead.key.statement_id)


def answer_then(
    work: Callable[[], R], answered: Callable[[R], None], after: Callable[[R], None]
) -> asyncio.Future[R]:
    """``work`` on a worker thread, its result handed to the event loop as soon as it returns
    (``answered`` of it runs on the loop just before the caller resumes); then ``after`` of it
    on the same worker, while the caller goes on: what follows an answer, off its path.

    Like ``asyncio.to_thread`` (the caller's context goes along), but the thread stays to do
    ``after`` once the answer is out. A failure of ``after`` is logged, never raised."""
    loop = asyncio.get_running_loop()
    answer: asyncio.Future[R] = loop.create_future()

    def succeed(result: R) -> None:
        if answer.cancelled():
            return
        try:
            answered(result)
        except Exception as exc:
            answer.set_exception(exc)
            return
        answer.set_result(result)

    def fail(error: BaseException) -> None:
        if not answer.cancelled():
            answer.set_exception(error)

    def run() -> None:
        try:
            result = work()
        except BaseException as exc:
            loop.call_soon_threadsafe(fail, exc)
            return
        loop.call_soon_threadsafe(succeed, result)
        try:
            after(result)
        except Exception:
            log.exception("HiveServer2: reading a page ahead failed")

    loop.run_in_executor(None, contextvars.copy_context().run, run)
    return answer


def copied(batches: list[pa.RecordBatch]) -> list[pa.RecordBatch]:
    """The rows in memory of their own: read from the result file by the worker, so that the
    event loop that encodes them never waits on the file."""
    return [
        pa.record_batch([pa.concat_arrays([column]) for column in batch.columns], batch.schema)
        for batch in batches
    ]
