"""The next page read ahead for each operation a HiveServer2 client fetches: its bounds, when it
is made and dropped, and, through the calls on a real store (SQLite and PostgreSQL), that pages
still come in order, that the cursor in the store only ever says what was sent, and that a
page read ahead is sent only to a call whose own check and cursor move gave it those rows."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest

from sparkgate.auth.principal import Principal
from sparkgate.hive2.idl import T
from sparkgate.hive2.readahead import Ahead, Encode, PageKey, ReadAhead
from sparkgate.hive2.service import HiveService
from sparkgate.hive2.wire import EncodedRowSet
from sparkgate.service import Service
from sparkgate.store import Store
from tests.conftest import run_async, succeeded, write_result

ALICE = Principal("alice", rights=frozenset({"sql"}))
BOB = Principal("bob", rights=frozenset({"sql"}))
OK, INVALID = T.TStatusCode.SUCCESS_STATUS, T.TStatusCode.INVALID_HANDLE_STATUS
SMALL = EncodedRowSet(b"\x00")


def key(statement_id: int, position: int = 3) -> PageKey:
    return PageKey(statement_id, "/results/1", position, 3, True)


def keep(
    pages: ReadAhead,
    statement_id: int,
    encode: Encode,
    start: Launches,
    *,
    session_id: int = 10,
    position: int = 3,
) -> Ahead:
    """A page expected as its call is answered, then filled with its rows: what is kept."""
    pages.expect(key(statement_id, position), session_id)
    pages.fill(key(statement_id, position), [], encode, start)
    kept = pages.get(statement_id)
    assert kept is not None
    return kept


class Launches:
    """A ``start`` that holds the launches until told to run them (the event loop's part)."""

    def __init__(self) -> None:
        self.waiting: list[Callable[[], None]] = []

    def __call__(self, launch: Callable[[], None]) -> None:
        self.waiting.append(launch)

    def run(self) -> None:
        while self.waiting:
            self.waiting.pop(0)()


def encoder(encoded: list[int]) -> Encode:
    def encode(page: PageKey, rows: list[pa.RecordBatch]) -> EncodedRowSet:
        encoded.append(page.statement_id)
        return SMALL

    return encode


# -- the read-ahead alone ---------------------------------------------------------------------


def test_one_page_per_operation_for_the_operations_served_last() -> None:
    pages, start, encoded = ReadAhead(max_operations=3), Launches(), list[int]()
    for statement_id in (1, 2, 3, 4):
        keep(pages, statement_id, encoder(encoded), start)
    assert len(pages) == 3 and pages.get(1) is None  # the oldest made room
    again = keep(pages, 2, encoder(encoded), start, position=6)
    assert again.key == key(2, position=6) and len(pages) == 3  # one page per operation
    start.run()
    assert sorted(encoded) == [2, 3, 4]  # 2's second page; the dropped ones never
    assert again.page is SMALL


def test_a_page_is_encoded_only_once_its_answer_is_sent() -> None:
    pages, start, encoded = ReadAhead(), Launches(), list[int]()
    page = keep(pages, 1, encoder(encoded), start)
    assert encoded == [] and page.page is None  # the loop runs it after the reply
    start.run()
    assert encoded == [1] and pages.get(1) is page and page.page is SMALL


def test_nothing_is_read_ahead_after_a_large_page_and_drops_forget_pages() -> None:
    pages, start, encoded = ReadAhead(max_page_bytes=100), Launches(), list[int]()
    assert pages.wants_after(EncodedRowSet(bytes(100)))
    assert not pages.wants_after(EncodedRowSet(bytes(101)))
    for statement_id, session_id in ((1, 10), (2, 10), (3, 11)):
        keep(pages, statement_id, encoder(encoded), start, session_id=session_id)
    pages.drop(1)
    pages.drop_session(10)
    assert [pages.get(i) is None for i in (1, 2, 3)] == [True, True, False]
    start.run()
    assert encoded == [3]  # a page dropped before the loop got to it is not encoded


def test_a_page_that_cannot_be_encoded_is_dropped(caplog: pytest.LogCaptureFixture) -> None:
    pages, start = ReadAhead(), Launches()

    def fail(page: PageKey, rows: list[pa.RecordBatch]) -> EncodedRowSet:
        raise ValueError("no")

    keep(pages, 1, fail, start)
    start.run()
    assert pages.get(1) is None  # the next call encodes the rows itself
    assert "could not be encoded" in caplog.text


def test_rows_that_come_for_a_page_no_longer_expected_are_dropped() -> None:
    pages, start, encoded = ReadAhead(), Launches(), list[int]()
    pages.expect(key(1), 10)
    pages.drop(1)  # the operation closed before the worker's rows came
    pages.fill(key(1), [], encoder(encoded), start)
    assert pages.get(1) is None
    pages.expect(key(2), 10)
    pages.expect(key(2, position=6), 10)  # the next call was answered first
    pages.fill(key(2), [], encoder(encoded), start)
    waiting = pages.get(2)
    assert waiting is not None and waiting.key == key(2, position=6) and waiting.batches is None
    pages.fill(key(2, position=6), [], encoder(encoded), start)
    pages.fill(key(2, position=6), [], encoder(encoded), start)  # once only
    start.run()
    assert encoded == [2]


# -- through the calls, on a real store ---------------------------------------------------------


def run(service: Service, steps: Callable[[HiveService], Any]) -> Any:
    hive = HiveService(service)

    async def go() -> Any:
        try:
            return await steps(hive)
        finally:
            await service.close()

    return run_async(go())


async def call(hive: HiveService, api: str, request: Any, user: Principal = ALICE) -> Any:
    response = await hive.call(api, request, user)
    assert response.status.statusCode == OK, response.status
    return response


async def stored(hive: HiveService, store: Store, tmp_path: Path, rows: int) -> tuple[Any, Any]:
    """A session of alice's, an operation of hers that succeeded with ``rows`` numbers, and
    its statement's id."""
    opened = await call(hive, "OpenSession", T.TOpenSessionReq(client_protocol=8))
    request = T.TExecuteStatementReq(
        sessionHandle=opened.sessionHandle, statement="SELECT n", runAsync=True
    )
    executed = await call(hive, "ExecuteStatement", request)
    statement = store.statements.list_page().items[-1]
    succeeded(store, statement, write_result(tmp_path / "r", rows))
    return opened.sessionHandle, executed.operationHandle


async def prepared(hive: HiveService, statement_id: int) -> EncodedRowSet:
    """The page read ahead for the operation, once the worker has read it (after the answer)
    and the loop has encoded it."""
    for _ in range(1000):
        await asyncio.sleep(0.005)
        page = hive._read_ahead.get(statement_id)
        if page is not None and page.page is not None:
            return page.page
    raise AssertionError("no page read ahead")


def values(response: Any) -> list[int]:
    return list(response.results.columns[0].i64Val.values)


def test_pages_read_ahead_come_in_order_and_the_cursor_says_only_what_was_sent(
    service: Service, store: Store, tmp_path: Path
) -> None:
    async def steps(hive: HiveService) -> list[list[int]]:
        _, operation = await stored(hive, store, tmp_path, 10)
        statement_id = store.statements.list_page().items[-1].id
        fetch = T.TFetchResultsReq(operationHandle=operation, orientation=0, maxRows=3)
        pages, sent = [], 0
        while True:
            response = await call(hive, "FetchResults", fetch)
            pages.append(values(response))
            sent += len(pages[-1])
            # the page after it is read ahead, and the cursor is where the client is
            assert store.statements.get(statement_id).fetched == sent
            if not response.hasMoreRows:
                break
            page = await prepared(hive, statement_id)
            assert store.statements.get(statement_id).fetched == sent
            following = await call(hive, "FetchResults", fetch)
            assert following.results is page  # sent as prepared, not encoded again
            pages.append(values(following))
            sent += len(pages[-1])
            if not following.hasMoreRows:
                break
        assert hive._read_ahead.get(statement_id) is None  # none after the last page
        return pages

    assert run(service, steps) == [[0, 1, 2], [3, 4, 5], [6, 7, 8], [9]]


def test_a_page_read_ahead_goes_only_to_the_rows_the_cursor_gives_and_to_alice(
    service: Service, store: Store, tmp_path: Path
) -> None:
    async def steps(hive: HiveService) -> list[Any]:
        _, operation = await stored(hive, store, tmp_path, 12)
        statement_id = store.statements.list_page().items[-1].id
        fetch = T.TFetchResultsReq(operationHandle=operation, orientation=0, maxRows=3)
        first = await call(hive, "FetchResults", fetch)
        await prepared(hive, statement_id)  # rows 3..5
        theirs = await hive.call("FetchResults", fetch, BOB)
        assert store.statements.move_cursor(statement_id, 3, 6)  # another node's page
        second = await call(hive, "FetchResults", fetch)
        await prepared(hive, statement_id)  # rows 9..11
        first_rows = T.TFetchOrientation.FETCH_FIRST
        again = T.TFetchResultsReq(operationHandle=operation, orientation=first_rows, maxRows=3)
        restarted = await call(hive, "FetchResults", again)  # FETCH_FIRST
        return [values(first), theirs.status.statusCode, values(second), values(restarted)]

    first, theirs, second, restarted = run(service, steps)
    assert theirs == INVALID
    assert (first, second, restarted) == ([0, 1, 2], [6, 7, 8], [0, 1, 2])


@pytest.mark.parametrize("closing", ["CloseOperation", "CancelOperation", "CloseSession"])
def test_closing_or_cancelling_drops_the_page_read_ahead(
    service: Service, store: Store, tmp_path: Path, closing: str
) -> None:
    async def steps(hive: HiveService) -> Any:
        session, operation = await stored(hive, store, tmp_path, 9)
        statement_id = store.statements.list_page().items[-1].id
        fetch = T.TFetchResultsReq(operationHandle=operation, orientation=0, maxRows=3)
        await call(hive, "FetchResults", fetch)
        await prepared(hive, statement_id)
        requests = {
            "CloseOperation": T.TCloseOperationReq(operationHandle=operation),
            "CancelOperation": T.TCancelOperationReq(operationHandle=operation),
            "CloseSession": T.TCloseSessionReq(sessionHandle=session),
        }
        await hive.call(closing, requests[closing], BOB)  # not hers to close: nothing dropped
        assert hive._read_ahead.get(statement_id) is not None
        await call(hive, closing, requests[closing])
        return hive._read_ahead.get(statement_id)

    assert run(service, steps) is None
