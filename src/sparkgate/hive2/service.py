"""The TCLIService calls, answered with sparkgate's sessions and queries.

A HiveServer2 session is a sparkgate interactive session, and an operation is a sparkgate query
(statement): its handle carries the id, so any node answers for any handle and a client that
reconnects elsewhere carries on. Statements go through the service, exactly as from ``/v1``;
the metadata calls (GetTables, GetColumns, ...) are ``catalog`` statements that the session's
engine answers from its catalog. Results are read from the stored result files, a page at a
time; the FETCH_NEXT position is kept in the store (``statements.fetched``).

Every method takes the request struct and the authenticated caller, and returns the response
struct; errors become a ``TStatus``, never a dropped connection.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import functools
import logging
import threading
from collections import OrderedDict
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from importlib.metadata import version
from typing import Any

import pyarrow as pa

from sparkgate import __version__
from sparkgate.auth.principal import Principal
from sparkgate.error_catalog import sql_state
from sparkgate.errors import QueryFinished, SparkgateError
from sparkgate.hive2 import encoding, rowsets
from sparkgate.hive2.configuration import session_settings
from sparkgate.hive2.handles import (
    OPERATION,
    SESSION,
    OperationFailed,
    error_status,
    failure_text,
    handle_id,
    ok,
    operation_handle,
    session_handle,
)
from sparkgate.hive2.idl import COLUMNAR_FROM, SERVER_PROTOCOL, T
from sparkgate.hive2.progress import log_lines, millis, progress
from sparkgate.hive2.readahead import PageKey, ReadAhead, answer_then, copied
from sparkgate.hive2.types import column_types, table_schema
from sparkgate.hive2.wire import EncodedRowSet, encode_struct
from sparkgate.runtime.catalog_request import CatalogRequest
from sparkgate.service import Service
from sparkgate.service.queries import result_path
from sparkgate.states import (
    TERMINAL_SESSION_STATES,
    TERMINAL_STATEMENT_STATES,
    SessionKind,
    StatementKind,
    StatementState,
)
from sparkgate.store.records import SessionRecord, StatementRecord
from sparkgate.store.session_attributes import SessionAttributes

log = logging.getLogger("sparkgate.hive2")

_OPERATION_STATES = {
    StatementState.QUEUED: T.TOperationState.PENDING_STATE,  # HiveServer2 has no queued state
    StatementState.WAITING: T.TOperationState.PENDING_STATE,
    StatementState.RUNNING: T.TOperationState.RUNNING_STATE,
    StatementState.CANCELLING: T.TOperationState.RUNNING_STATE,
    StatementState.SUCCESS: T.TOperationState.FINISHED_STATE,
    StatementState.FAILED: T.TOperationState.ERROR_STATE,
    StatementState.CANCELLED: T.TOperationState.CANCELED_STATE,
}


_NAMES = {"catalog": "catalogName", "schema": "schemaName"}
# The metadata calls, each a catalog statement (engine/catalog_calls.py): TCLIService call ->
# (catalog call, its request keys -> the Thrift request's fields, operation type).
_CATALOG_CALLS: dict[str, tuple[str, dict[str, str], str]] = {
    "GetCatalogs": ("catalogs", {}, "GET_CATALOGS"),
    "GetSchemas": ("schemas", _NAMES, "GET_SCHEMAS"),
    "GetTables": (
        "tables",
        {**_NAMES, "table": "tableName", "table_types": "tableTypes"},
        "GET_TABLES",
    ),
    "GetTableTypes": ("table_types", {}, "GET_TABLE_TYPES"),
    "GetColumns": (
        "columns",
        {**_NAMES, "table": "tableName", "column": "columnName"},
        "GET_COLUMNS",
    ),
    "GetTypeInfo": ("type_info", {}, "GET_TYPE_INFO"),
    "GetFunctions": ("functions", {**_NAMES, "function": "functionName"}, "GET_FUNCTIONS"),
    # Spark tables have no keys: empty results with JDBC's columns, not errors.
    "GetPrimaryKeys": ("primary_keys", {}, "UNKNOWN"),
    "GetCrossReference": ("cross_reference", {}, "UNKNOWN"),
}


class HiveService:
    def __init__(self, service: Service) -> None:
        self.service = service
        self.sessions = service.sessions
        self.queries = service.queries
        self.store = service.store
        self.settings = service.settings
        # Log lines each operation's client has fetched (this node only: a client that moves
        # to another node may see a log line twice, never a result row).
        self._log_positions: OrderedDict[int, int] = OrderedDict()
        self._protocols: OrderedDict[int, int] = OrderedDict()  # session id -> protocol
        self._protocols_lock = threading.Lock()  # written from the loop and worker threads
        self._read_ahead = ReadAhead()  # the next page of each result being fetched

    async def call(self, api: str, request: Any, user: Principal) -> Any:
        """Answer one call. Unknown methods are the transport's concern (an exception)."""
        try:
            if api in _CATALOG_CALLS:
                return await self._catalog(api, request, user)
            method: Callable[[Any, Principal], Awaitable[Any]] = getattr(self, "_" + api)
            return await method(request, user)
        except Exception as exc:
            if not isinstance(exc, SparkgateError):
                log.exception("HiveServer2 %s failed", api)
            return _failed_response(api, exc)

    # -- sessions ------------------------------------------------------------------------

    async def _OpenSession(self, req: Any, user: Principal) -> Any:
        protocol = min(int(req.client_protocol or 0), SERVER_PROTOCOL)
        conf, setup, proxy_user = session_settings(req.configuration or {})
        # Every setting is checked before the session exists: a denied one (in a Spark
        # setting or in a variable's SET) leaves nothing behind.
        await asyncio.to_thread(
            self.sessions.check_settings, user, conf=conf, sql=setup, where="OpenSession"
        )
        session, _ = await asyncio.to_thread(
            self.sessions.create,
            SessionKind.INTERACTIVE,
            user=user,
            conf=conf,
            proxy_user=proxy_user,
            attributes=SessionAttributes(
                door="hive2",
                hive2_protocol=protocol,
                idle_timeout=self.settings.thrift_idle_timeout,
            ),
        )
        self._remember_protocol(session.id, protocol)
        # Variables and the database are session state: set by statements that run first.
        for code in setup:
            await asyncio.to_thread(self.queries.submit, code, user=user, session_id=session.id)
        return T.TOpenSessionResp(
            status=ok(),
            serverProtocolVersion=protocol,
            sessionHandle=session_handle(session.id),
            configuration={},
        )

    async def _CloseSession(self, req: Any, user: Principal) -> Any:
        session = await self._session(req.sessionHandle, user)
        if session.state not in TERMINAL_SESSION_STATES:
            await asyncio.to_thread(self.sessions.kill, session.id, user=user)
        self._read_ahead.drop_session(session.id)
        return T.TCloseSessionResp(status=ok())

    async def _GetInfo(self, req: Any, user: Principal) -> Any:
        await self._session(req.sessionHandle, user)
        info = T.TGetInfoType
        strings = {
            info.CLI_SERVER_NAME: f"sparkgate {__version__}",
            info.CLI_DBMS_NAME: "Spark SQL",
            info.CLI_DBMS_VER: version("pyspark"),
            info.CLI_ODBC_KEYWORDS: "",
            info.CLI_IDENTIFIER_QUOTE_CHAR: "`",
            info.CLI_SEARCH_PATTERN_ESCAPE: "\\",
            info.CLI_USER_NAME: user.name,
        }
        lengths = {
            info.CLI_MAX_COLUMN_NAME_LEN: 128,
            info.CLI_MAX_SCHEMA_NAME_LEN: 128,
            info.CLI_MAX_TABLE_NAME_LEN: 128,
        }
        if req.infoType in strings:
            value = T.TGetInfoValue(stringValue=strings[req.infoType])
        elif req.infoType in lengths:
            value = T.TGetInfoValue(lenValue=lengths[req.infoType])
        else:
            return T.TGetInfoResp(
                status=T.TStatus(
                    statusCode=T.TStatusCode.ERROR_STATUS,
                    errorMessage=f"Unrecognized GetInfoType value: {req.infoType}",
                ),
                infoValue=T.TGetInfoValue(stringValue=""),
            )
        return T.TGetInfoResp(status=ok(), infoValue=value)

    async def _SetClientInfo(self, req: Any, user: Principal) -> Any:
        await self._session(req.sessionHandle, user)
        return T.TSetClientInfoResp(status=ok())

    # -- statements ----------------------------------------------------------------------

    async def _ExecuteStatement(self, req: Any, user: Principal) -> Any:
        session = await self._session(req.sessionHandle, user)
        # A statement's own settings (confOverlay) are SET first, in the session; all of them
        # are checked against the denied settings before the first runs.
        overlay = [f"SET {key}={value}" for key, value in sorted((req.confOverlay or {}).items())]
        if overlay:  # most statements have none: no trip off the event loop for nothing
            await asyncio.to_thread(
                self.sessions.check_settings,
                user,
                sql=overlay,
                target=f"session:{session.id}",
                where="confOverlay",
            )
        for code in overlay:
            await asyncio.to_thread(self.queries.submit, code, user=user, session_id=session.id)
        statement, _ = await asyncio.to_thread(
            self.queries.submit, req.statement, user=user, session_id=session.id
        )
        if req.runAsync:
            handle = operation_handle(statement.id, T.TOperationType.EXECUTE_STATEMENT)
            return T.TExecuteStatementResp(status=ok(), operationHandle=handle)
        statement = await self.queries.finished(statement)
        _raise_if_failed(statement)
        has_result = bool(statement.result and statement.result.schema)
        handle = operation_handle(
            statement.id, T.TOperationType.EXECUTE_STATEMENT, has_result=has_result
        )
        return T.TExecuteStatementResp(status=ok(), operationHandle=handle)

    async def _GetOperationStatus(self, req: Any, user: Principal) -> Any:
        statement = await self._statement(req.operationHandle, user)
        # Hold the answer a little (as HiveServer2's long polling does): clients poll in a
        # tight loop, and the answer they wait for is "finished".
        statement = await self.queries.wait(statement, self.settings.thrift_status_wait)
        response = T.TGetOperationStatusResp(
            status=ok(),
            operationState=_OPERATION_STATES[statement.state],
            hasResultSet=True,
            operationStarted=millis(statement.started_at or statement.created_at),
            operationCompleted=millis(statement.finished_at),
        )
        if statement.state in (StatementState.FAILED, StatementState.CANCELLED):
            response.errorMessage = failure_text(statement.error, statement.state)
            response.sqlState = sql_state(statement.error)  # Spark's, else sparkgate's
            response.errorCode = 0
        if req.getProgressUpdate:
            response.progressUpdateResponse = progress(statement)
        return response

    async def _CancelOperation(self, req: Any, user: Principal) -> Any:
        statement = await self._statement(req.operationHandle, user)
        with contextlib.suppress(QueryFinished):  # cancelling a finished query: nothing to do
            await asyncio.to_thread(self.queries.cancel, statement.id, user=user)
        self._read_ahead.drop(statement.id)
        return T.TCancelOperationResp(status=ok())

    async def _CloseOperation(self, req: Any, user: Principal) -> Any:
        statement = await self._statement(req.operationHandle, user)
        if statement.state not in TERMINAL_STATEMENT_STATES:
            with contextlib.suppress(QueryFinished):
                await asyncio.to_thread(self.queries.cancel, statement.id, user=user)
        self._log_positions.pop(statement.id, None)
        self._read_ahead.drop(statement.id)
        return T.TCloseOperationResp(status=ok())

    async def _GetQueryId(self, req: Any, user: Principal) -> Any:
        statement = await self._statement(req.operationHandle, user)
        return T.TGetQueryIdResp(queryId=str(statement.id))

    async def _GetResultSetMetadata(self, req: Any, user: Principal) -> Any:
        statement = await self.queries.finished(await self._statement(req.operationHandle, user))
        _raise_if_failed(statement)
        columns = column_types(_spark_schema(statement))
        return T.TGetResultSetMetadataResp(status=ok(), schema=table_schema(columns))

    async def _FetchResults(self, req: Any, user: Principal) -> Any:
        if req.orientation not in (T.TFetchOrientation.FETCH_NEXT, T.TFetchOrientation.FETCH_FIRST):
            raise SparkgateError("Only FETCH_NEXT and FETCH_FIRST are supported.")
        first = req.orientation == T.TFetchOrientation.FETCH_FIRST
        limit = max(0, min(int(req.maxRows or 0), self.settings.thrift_fetch_max_rows))
        statement_id = handle_id(
            getattr(req.operationHandle, "operationId", None), OPERATION, "operation"
        )
        if req.fetchType == 1:
            statement = await asyncio.to_thread(self.queries.get, statement_id, user=user)
            columnar = await self._columnar(statement.session_id)
            return self._fetch_log(statement, first, limit, columnar)

        ahead = self._read_ahead.get(statement_id)

        def fetch() -> tuple[StatementRecord, _Fetched | None]:
            # The check, the cursor and the page: one trip off the event loop (a client
            # fetching 1000 rows at a time pays this per call).
            statement = self.queries.for_fetch(statement_id, user=user)
            if statement.state not in TERMINAL_STATEMENT_STATES:
                return statement, None
            _raise_if_failed(statement)
            columnar = self._known_protocol(statement.session_id) >= COLUMNAR_FROM
            fetched = self.queries.fetch(statement, from_start=first, limit=limit)
            key = PageKey(statement.id, result_path(statement), fetched.position, limit, columnar)
            # Only the rows this call's own check and cursor move gave it are sent: the page
            # read ahead if it holds exactly those.
            page = ahead.page if ahead is not None and ahead.key == key else None
            if page is None:
                page = _page(statement, key, fetched.batches)
            taken = sum(batch.num_rows for batch in fetched.batches)
            following = None
            if fetched.more and taken and self._read_ahead.wants_after(page):
                following = dataclasses.replace(key, position=key.position + taken)
            return statement, _Fetched(fetched.more, page, following)

        loop = asyncio.get_running_loop()

        def answered(done: tuple[StatementRecord, _Fetched | None]) -> None:
            """On the loop, as the answer is handed over: the next page is expected (or
            none)."""
            statement, fetched = done
            if fetched is None:
                return
            if fetched.following is None:
                self._read_ahead.drop(statement_id)
            else:
                self._read_ahead.expect(fetched.following, statement.session_id)

        def read_following(done: tuple[StatementRecord, _Fetched | None]) -> None:
            """On the worker, after the answer is handed over: the next page's rows."""
            statement, fetched = done
            if fetched is None or fetched.following is None:
                return
            key = fetched.following
            rows, _ = self.queries.result_batches(statement, key.position, key.limit)
            encode = functools.partial(_page, statement)
            loop.call_soon_threadsafe(
                self._read_ahead.fill, key, copied(rows), encode, loop.call_soon
            )

        statement, done = await answer_then(fetch, answered, read_following)
        while done is None:  # fetched before it finished: wait, as a synchronous client expects
            statement = await self.queries.finished(statement)
            statement, done = await answer_then(fetch, answered, read_following)
        return T.TFetchResultsResp(status=ok(), hasMoreRows=done.more, results=done.page)

    def _known_protocol(self, session_id: int) -> int:
        protocol = self._protocols.get(session_id)
        if protocol is None:
            known = self.store.sessions.get(session_id).attributes.hive2_protocol
            protocol = SERVER_PROTOCOL if known is None else known
            self._remember_protocol(session_id, protocol)
        return protocol

    async def _columnar(self, session_id: int) -> bool:
        """Whether the session's protocol has columnar row sets (remembered: it never changes)."""
        return await asyncio.to_thread(self._known_protocol, session_id) >= COLUMNAR_FROM

    def _remember_protocol(self, session_id: int, protocol: int) -> None:
        with self._protocols_lock:
            _remember(self._protocols, session_id, protocol)

    def _fetch_log(
        self, statement: StatementRecord, first: bool, limit: int, columnar: bool
    ) -> Any:
        lines = log_lines(statement)
        start = 0 if first else self._log_positions.get(statement.id, 0)
        page = lines[start : start + limit] if limit else []
        _remember(self._log_positions, statement.id, start + len(page))
        return T.TFetchResultsResp(
            status=ok(),
            hasMoreRows=start + len(page) < len(lines),
            results=rowsets.string_row_set(page, start, columnar=columnar),
        )

    # -- metadata: catalog statements on the session's engine ---------------------------

    async def _catalog(self, api: str, req: Any, user: Principal) -> Any:
        name, fields, operation_type = _CATALOG_CALLS[api]
        session = await self._session(req.sessionHandle, user)
        names = {key: getattr(req, field) for key, field in fields.items()}
        types = names.pop("table_types", None)
        request = CatalogRequest(name, names, None if types is None else tuple(types))
        statement, _ = await asyncio.to_thread(
            self.queries.submit,
            request.to_code(),
            user=user,
            session_id=session.id,
            kind=StatementKind.CATALOG,
        )
        handle = operation_handle(statement.id, getattr(T.TOperationType, operation_type))
        return getattr(T, f"T{api}Resp")(status=ok(), operationHandle=handle)

    # -- what sparkgate does not do ------------------------------------------------------

    async def _GetDelegationToken(self, req: Any, user: Principal) -> Any:
        raise SparkgateError(_NO_DELEGATION)

    async def _CancelDelegationToken(self, req: Any, user: Principal) -> Any:
        raise SparkgateError(_NO_DELEGATION)

    async def _RenewDelegationToken(self, req: Any, user: Principal) -> Any:
        raise SparkgateError(_NO_DELEGATION)

    async def _GetLog(self, req: Any, user: Principal) -> Any:
        raise SparkgateError("GetLog is not supported: use FetchResults with fetchType=1.")

    # -- helpers -------------------------------------------------------------------------

    async def _session(self, handle: Any, user: Principal) -> SessionRecord:
        session_id = handle_id(getattr(handle, "sessionId", None), SESSION, "session")
        return await asyncio.to_thread(self.sessions.get, session_id, user=user)

    async def _statement(self, handle: Any, user: Principal) -> StatementRecord:
        statement_id = handle_id(getattr(handle, "operationId", None), OPERATION, "operation")
        return await asyncio.to_thread(self.queries.get, statement_id, user=user)


_NO_DELEGATION = (
    "Delegation tokens are not supported: sparkgate authenticates each connection with a "
    "password or a personal access token (as the password)."
)


def _failed_response(api: str, exc: BaseException) -> Any:
    status = error_status(exc)
    if api == "GetQueryId":
        raise exc  # no status field: the transport answers with an exception
    response = getattr(T, f"T{api}Resp")(status=status)
    if api == "GetInfo":
        response.infoValue = T.TGetInfoValue(stringValue="")
    return response


@dataclass(frozen=True)
class _Fetched:
    """A FetchResults call's page, whether rows follow it, and which page to read ahead."""

    more: bool
    page: EncodedRowSet
    following: PageKey | None


def _page(statement: StatementRecord, key: PageKey, batches: list[pa.RecordBatch]) -> EncodedRowSet:
    """A page's row set, encoded (by the worker that moved the cursor, or for a page read
    ahead by the loop): the reply is written around these bytes."""
    columns = column_types(_spark_schema(statement))
    if key.columnar:
        return EncodedRowSet(encoding.row_set(batches, columns, key.position))
    rowset = rowsets.row_set(batches, columns, key.position, columnar=False)
    return EncodedRowSet(encode_struct(rowset), rowset)


def _spark_schema(statement: StatementRecord) -> Mapping[str, Any] | None:
    info = statement.result
    return info.spark_schema if info else None


def _raise_if_failed(statement: StatementRecord) -> None:
    if statement.state is StatementState.SUCCESS:
        return
    error = statement.error
    raise OperationFailed(failure_text(error, statement.state), sql_state(error))


def _remember(memory: OrderedDict[int, int], key: int, value: int) -> None:
    """Keep ``value`` in a per-node memory of the last 10000 sessions or operations."""
    memory[key] = value
    memory.move_to_end(key)
    while len(memory) > 10_000:
        memory.popitem(last=False)
