"""The HiveServer2 calls on the service, without a transport or an engine, on a real store
(SQLite and PostgreSQL): handles, ownership, operation states, fetching a stored result and
the one answer for a result that is gone."""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

from sparkgate.auth.principal import Principal
from sparkgate.hive2.idl import T
from sparkgate.hive2.service import HiveService
from sparkgate.service import Service
from sparkgate.store import Store
from tests.conftest import NOW, force_state, run_async, succeeded, write_result

ALICE = Principal("alice", rights=frozenset({"sql"}))
BOB = Principal("bob", rights=frozenset({"sql"}))
OK, INVALID = T.TStatusCode.SUCCESS_STATUS, T.TStatusCode.INVALID_HANDLE_STATUS


def calls(service: Service, *steps: tuple[str, Any, Principal]) -> list[Any]:
    """Answer the calls in order, on one event loop (as the transports do)."""
    hive = HiveService(service)

    async def run() -> list[Any]:
        try:
            return [await hive.call(api, request, user) for api, request, user in steps]
        finally:
            await service.close()

    return list(run_async(run()))


def open_session(service: Service, user: Principal = ALICE) -> Any:
    [opened] = calls(service, ("OpenSession", T.TOpenSessionReq(client_protocol=8), user))
    assert opened.status.statusCode == OK
    return opened.sessionHandle


def execute(service: Service, session: Any, sql: str) -> Any:
    request = T.TExecuteStatementReq(sessionHandle=session, statement=sql, runAsync=True)
    [executed] = calls(service, ("ExecuteStatement", request, ALICE))
    assert executed.status.statusCode == OK
    return executed.operationHandle


def stored_result(service: Service, store: Store, tmp_path: Path, rows: int) -> tuple[Any, Any]:
    """An operation of alice's whose query succeeded with ``rows`` rows, and a request for
    its next 3."""
    operation = execute(service, open_session(service), "SELECT n")
    statement = store.statements.list_page().items[-1]
    succeeded(store, statement, write_result(tmp_path / "r", rows))
    return statement, T.TFetchResultsReq(operationHandle=operation, orientation=0, maxRows=3)


def test_an_operation_is_pending_until_its_engine_runs_it_and_bob_cannot_see_it(
    service: Service, store: Store
) -> None:
    operation = execute(service, open_session(service), "SELECT 1")
    status = T.TGetOperationStatusReq(operationHandle=operation)
    mine, theirs, cancelled, again = calls(
        service,
        ("GetOperationStatus", status, ALICE),
        ("GetOperationStatus", status, BOB),
        ("CancelOperation", T.TCancelOperationReq(operationHandle=operation), BOB),
        ("GetOperationStatus", status, ALICE),
    )
    assert mine.operationState == T.TOperationState.PENDING_STATE
    assert theirs.status.statusCode == INVALID and cancelled.status.statusCode == INVALID
    assert again.operationState == T.TOperationState.PENDING_STATE  # bob changed nothing
    [cancel, final] = calls(
        service,
        ("CancelOperation", T.TCancelOperationReq(operationHandle=operation), ALICE),
        ("GetOperationStatus", status, ALICE),
    )
    assert cancel.status.statusCode == OK
    assert final.operationState == T.TOperationState.CANCELED_STATE


def test_fetching_a_stored_result_moves_the_cursor(
    service: Service, store: Store, tmp_path: Path
) -> None:
    statement, fetch = stored_result(service, store, tmp_path, 5)
    first, second, third = calls(
        service,
        ("FetchResults", fetch, ALICE),
        ("FetchResults", fetch, ALICE),
        ("FetchResults", fetch, ALICE),
    )
    assert [first.hasMoreRows, second.hasMoreRows, third.hasMoreRows] == [True, False, False]
    assert first.results.columns[0].i64Val.values == [0, 1, 2]
    assert second.results.columns[0].i64Val.values == [3, 4]
    assert third.results.columns[0].i64Val.values == []
    assert store.statements.get(statement.id).fetched == 5


def test_pages_follow_the_cursor_moved_elsewhere_and_stay_alices(
    service: Service, store: Store, tmp_path: Path
) -> None:
    # The node keeps an ended query's record between pages; the cursor in the store stays
    # the truth: a page fetched through another node (here: the store's cursor moved by
    # hand) is not served again, and bob is refused though alice's record is kept.
    statement, fetch = stored_result(service, store, tmp_path, 9)
    hive = HiveService(service)

    async def run() -> list[Any]:
        try:
            first = await hive.call("FetchResults", fetch, ALICE)
            assert store.statements.move_cursor(statement.id, 3, 6)  # another node's page
            second = await hive.call("FetchResults", fetch, ALICE)
            theirs = await hive.call("FetchResults", fetch, BOB)
            third = await hive.call("FetchResults", fetch, ALICE)
            return [first, second, theirs, third]
        finally:
            await service.close()

    first, second, theirs, third = run_async(run())
    assert first.results.columns[0].i64Val.values == [0, 1, 2]
    assert second.results.columns[0].i64Val.values == [6, 7, 8]
    assert theirs.status.statusCode == INVALID
    assert third.results.columns[0].i64Val.values == [] and not third.hasMoreRows
    assert store.statements.get(statement.id).fetched == 9


def test_a_result_that_is_gone_is_an_error_naming_it(
    service: Service, store: Store, tmp_path: Path
) -> None:
    operation = execute(service, open_session(service), "SELECT n")
    statement = store.statements.list_page().items[-1]
    result = write_result(tmp_path / "r", 5)
    succeeded(store, statement, result)
    shutil.rmtree(result["path"])
    fetch = T.TFetchResultsReq(operationHandle=operation, orientation=0, maxRows=3)
    [gone] = calls(service, ("FetchResults", fetch, ALICE))
    assert gone.status.statusCode == T.TStatusCode.ERROR_STATUS
    assert "result files are missing" in gone.status.errorMessage


def test_bob_cannot_run_in_or_close_alices_session(service: Service, store: Store) -> None:
    session = open_session(service)
    executed, closed = calls(
        service,
        ("ExecuteStatement", T.TExecuteStatementReq(sessionHandle=session, statement="1"), BOB),
        ("CloseSession", T.TCloseSessionReq(sessionHandle=session), BOB),
    )
    assert executed.status.statusCode == INVALID and closed.status.statusCode == INVALID
    # sparkgate's own error carries its SQLSTATE, as Spark's errors carry theirs.
    assert executed.status.sqlState == "08003" and closed.status.sqlState == "08003"
    assert store.statements.list_page().items == []
    [session_record] = store.sessions.list_page().items
    assert session_record.owner == "alice" and session_record.finished_at is None


def test_a_failed_operation_tells_sparks_sqlstate_or_else_sparkgates(
    service: Service, store: Store
) -> None:
    """JDBC and ODBC clients read ``sqlState``: Spark's when its error has one, the error
    catalog's for sparkgate's own codes (a cancelled query: 57014)."""
    session = open_session(service)
    spark_failure = execute(service, session, "SELECT 1/0")
    statement = store.statements.list_page().items[-1]
    error = {"code": "DIVIDE_BY_ZERO", "message": "Division by zero.", "sql_state": "22012"}
    force_state(store, "statements", statement.id, "failed", error=error, finished_at=NOW)
    cancelled = execute(service, session, "SELECT 2")
    status = T.TGetOperationStatusReq
    spark, _, ours, fetched = calls(
        service,
        ("GetOperationStatus", status(operationHandle=spark_failure), ALICE),
        ("CancelOperation", T.TCancelOperationReq(operationHandle=cancelled), ALICE),
        ("GetOperationStatus", status(operationHandle=cancelled), ALICE),
        ("FetchResults", T.TFetchResultsReq(operationHandle=cancelled, maxRows=1), ALICE),
    )
    assert spark.operationState == T.TOperationState.ERROR_STATE and spark.sqlState == "22012"
    assert ours.operationState == T.TOperationState.CANCELED_STATE
    assert ours.sqlState == "57014" and fetched.status.sqlState == "57014"
