"""The HiveServer2 door with real clients: PyHive (SASL PLAIN and NOSASL), beeline and the Hive
JDBC driver from pyspark's jars (binary and HTTP transports), SQLAlchemy's ``hive://`` dialect,
and raw Thrift for what no polite client sends (other users' handles, garbage, wrong SASL).

One server for the module: password authentication, one shared engine for everyone.
"""

from __future__ import annotations

import contextlib
import os
import socket
import struct
import subprocess
from collections.abc import Iterator
from decimal import Decimal
from pathlib import Path
from typing import Any

import httpx
import pytest
from pyhive import hive
from TCLIService import ttypes
from thrift.transport.TTransport import TTransportException
from thriftpy2.protocol import binary as thrift_binary
from thriftpy2.thrift import TApplicationException, TMessageType
from thriftpy2.transport import memory as thrift_memory

from sparkgate.hive2.idl import T
from sparkgate_dev import (
    ServerProcess,
    beeline,
    eventually,
    free_port,
    kill_engines,
    local_test_settings,
    user_files,
)

pytestmark = [pytest.mark.spark, pytest.mark.timeout(900)]

PASSWORDS = {"alice": "alice-secret", "bob": "bob-secret"}

# thriftpy2's pure-Python protocol, for calls PyHive's generated client does not know (the
# server's IDL has more): untyped, so held as Any.
TBinaryProtocol: Any = thrift_binary.TBinaryProtocol
TMemoryBuffer: Any = thrift_memory.TMemoryBuffer


class Env:
    def __init__(self, server: ServerProcess, thrift_port: int, home: Path) -> None:
        self.server = server
        self.url = server.url
        self.http_port = server.settings.port
        self.thrift_port = thrift_port
        self.home = home

    def connect(self, user: str = "alice", **kwargs: Any) -> Any:
        return hive.connect(
            "127.0.0.1",
            port=self.thrift_port,
            username=user,
            password=PASSWORDS[user],
            auth="CUSTOM",
            **kwargs,
        )

    def connect_http(self, user: str = "alice") -> Any:
        # PyHive's own HTTP transport, as SQLAlchemy's hive+http:// uses it (to /cliservice/).
        return hive.connect(
            "127.0.0.1",
            port=self.http_port,
            scheme="http",
            username=user,
            password=PASSWORDS[user],
            auth="BASIC",
        )

    def api(self, user: str = "alice") -> httpx.Client:
        return httpx.Client(base_url=self.url, auth=(user, PASSWORDS[user]), timeout=60)


@pytest.fixture(scope="module")
def env(tmp_path_factory: pytest.TempPathFactory, metastore_uri: str) -> Iterator[Env]:
    home = tmp_path_factory.mktemp("hive2-home")
    users = user_files(home, PASSWORDS)
    thrift_port = free_port()
    settings = local_test_settings(
        home,
        metastore_uri=metastore_uri,
        auth="password",
        **users,
        thrift_port=thrift_port,
        warm_engines=0,
        engine_share_level="server",  # one engine for both users: two cores
    )
    server = ServerProcess(settings).start()
    try:
        server.wait_engines_running()
        yield Env(server, thrift_port, home)
    finally:
        server.stop()
        kill_engines(settings)


def _query_id(cursor: Any) -> int:
    """The sparkgate query behind a cursor's operation: its id is in the handle."""
    return int.from_bytes(cursor._operationHandle.operationId.guid[8:], "big")


# -- PyHive ------------------------------------------------------------------------------


def test_pyhive_types_paging_and_the_same_query_in_v1(env: Env) -> None:
    with env.connect() as conn, conn.cursor() as cursor:
        cursor.execute(
            "SELECT 1 AS i, CAST(2 AS TINYINT) AS t, CAST(3 AS SMALLINT) AS s, "
            "CAST(4 AS BIGINT) AS b, true AS flag, CAST(1.1 AS FLOAT) AS f, 2.5D AS d, "
            "'x' AS str, CAST('12.30' AS DECIMAL(10,2)) AS dec, DATE'2024-02-29' AS day, "
            "TIMESTAMP_NTZ'2024-01-02 03:04:05.5' AS ts, array(1, 2) AS arr, "
            "map('k', 1) AS m, named_struct('a', 1, 'b', 'y') AS st, X'CAFE' AS bin, "
            "CAST(NULL AS INT) AS nothing"
        )
        names = [d[0] for d in cursor.description]
        types = [d[1] for d in cursor.description]
        row = cursor.fetchall()
        assert names[:4] == ["i", "t", "s", "b"]
        assert types == [
            "INT_TYPE",
            "TINYINT_TYPE",
            "SMALLINT_TYPE",
            "BIGINT_TYPE",
            "BOOLEAN_TYPE",
            "FLOAT_TYPE",
            "DOUBLE_TYPE",
            "STRING_TYPE",
            "DECIMAL_TYPE",
            "DATE_TYPE",
            "TIMESTAMP_TYPE",
            "ARRAY_TYPE",
            "MAP_TYPE",
            "STRUCT_TYPE",
            "BINARY_TYPE",
            "INT_TYPE",
        ]
        assert row == [
            (
                1,
                2,
                3,
                4,
                True,
                1.1,
                2.5,
                "x",
                Decimal("12.30"),
                "2024-02-29",
                # PyHive parses TIMESTAMP strings itself
                __import__("datetime").datetime(2024, 1, 2, 3, 4, 5, 500000),
                "[1,2]",
                '{"k":1}',
                '{"a":1,"b":"y"}',
                b"\xca\xfe",
                None,
            )
        ]

        cursor.execute("SELECT current_user()")  # the connected user, not the engine's
        assert cursor.fetchall() == [("alice",)]

        cursor.arraysize = 1000
        cursor.execute("SELECT id, CAST(id AS STRING) AS s FROM range(2500)")
        rows = cursor.fetchall()
        assert [r[0] for r in rows] == list(range(2500))
        assert rows[-1] == (2499, "2499")
        query_id = _query_id(cursor)

    with env.api() as api:
        query = api.get(f"/v1/queries/{query_id}").json()
        assert query["state"] == "success"
        assert query["cost"]["input_records"] == 2500, query["cost"]  # its tasks' metrics
        listed = api.get("/v1/queries", params={"limit": 50}).json()["queries"]
        assert query_id in [q["id"] for q in listed]
        page = api.get(f"/v1/queries/{query_id}/result", params={"offset": 1000, "limit": 3})
        assert page.json()["rows"] == [[1000, "1000"], [1001, "1001"], [1002, "1002"]]
        session = api.get(f"/v1/sessions/{query['session_id']}").json()
        assert session["owner"] == "alice"
    with env.api("bob") as bob:
        assert bob.get(f"/v1/queries/{query_id}").status_code == 404


def test_schemas_are_created_and_dropped(env: Env) -> None:
    """What dbt does around every run: its schema, a table in it, then DROP ... CASCADE."""
    with env.connect() as conn, conn.cursor() as cursor:
        cursor.execute("CREATE SCHEMA IF NOT EXISTS hive2_e2e_schema")
        cursor.execute("CREATE TABLE hive2_e2e_schema.t USING parquet AS SELECT 1 AS x")
        cursor.execute("DROP SCHEMA IF EXISTS hive2_e2e_schema CASCADE")
        cursor.execute("CREATE SCHEMA hive2_e2e_empty")
        cursor.execute("DROP SCHEMA hive2_e2e_empty")
        cursor.execute("SHOW SCHEMAS LIKE 'hive2_e2e_*'")
        assert cursor.fetchall() == []


def test_errors_carry_sparks_message_sql_state_and_position(env: Env) -> None:
    with env.connect() as conn, conn.cursor() as cursor:
        with pytest.raises(hive.OperationalError) as missing:
            cursor.execute("SELECT * FROM no_such_table")
        status = missing.value.args[0].status
        assert "TABLE_OR_VIEW_NOT_FOUND" in status.errorMessage
        assert status.sqlState == "42P01"
        assert "(line 1, pos 15)" in status.errorMessage

        cursor.execute("SELEC 1", async_=True)  # the error arrives through the status
        state = _wait_done(cursor)
        assert state.operationState == ttypes.TOperationState.ERROR_STATE
        assert "PARSE_SYNTAX_ERROR" in state.errorMessage
        assert state.sqlState == "42601"
        # The session is still usable after errors.
        cursor.execute("SELECT 'still here'")
        assert cursor.fetchall() == [("still here",)]


def _wait_done(cursor: Any) -> Any:
    def done() -> Any:
        state = cursor.poll()
        return state if state.operationState not in _RUNNING else None

    return eventually(done, timeout=120, interval=0.05, what="the operation to end")


_RUNNING = {
    ttypes.TOperationState.INITIALIZED_STATE,
    ttypes.TOperationState.PENDING_STATE,
    ttypes.TOperationState.RUNNING_STATE,
}


def test_cancel_from_the_client_stops_the_query(env: Env) -> None:
    with env.connect() as conn, conn.cursor() as cursor:
        cursor.execute(
            "SELECT sum(a.id * b.id) FROM range(100000000) a CROSS JOIN range(1000) b",
            async_=True,
        )
        query_id = _query_id(cursor)
        with env.api() as api:
            eventually(
                lambda: api.get(f"/v1/queries/{query_id}").json()["state"] == "running",
                timeout=120,
                what="the query to run",
            )
        cursor.cancel()
        state = _wait_done(cursor)
        assert state.operationState == ttypes.TOperationState.CANCELED_STATE
        with env.api() as api:
            assert api.get(f"/v1/queries/{query_id}").json()["state"] == "cancelled"
        cursor.execute("SELECT 42")
        assert cursor.fetchall() == [(42,)]


def test_session_settings_database_and_variables(env: Env) -> None:
    with env.connect() as conn, conn.cursor() as cursor:
        cursor.execute("CREATE DATABASE IF NOT EXISTS hive2_db")
    configuration = {
        "set:hiveconf:spark.sql.shuffle.partitions": "3",
        "set:hivevar:answer": "42",
    }
    with (
        env.connect(database="hive2_db", configuration=configuration) as conn,
        conn.cursor() as cursor,
    ):
        cursor.execute("SELECT current_database(), ${answer}")
        assert cursor.fetchall() == [("hive2_db", 42)]
        cursor.execute("SET spark.sql.shuffle.partitions")
        assert cursor.fetchall() == [("spark.sql.shuffle.partitions", "3")]
    denied = {"set:hiveconf:spark.hadoop.fs.s3a.secret.key": "x"}
    with pytest.raises(hive.OperationalError, match="SETTING_DENIED"):
        env.connect(configuration=denied)


def test_denied_settings_in_open_session_and_conf_overlay_change_nothing(env: Env) -> None:
    with env.api() as api:
        sessions = api.get("/v1/sessions").json()["total"]
    for configuration in (
        # A variable is SET like a setting: one named after a denied setting is one.
        {"set:hivevar:spark.master": "local[8]"},
        {"set:hiveconf:spark.sql.shuffle.partitions": "3", "set:hiveconf:spark.jars": "x.jar"},
    ):
        with pytest.raises(hive.OperationalError, match=r"SETTING_DENIED.*spark\.(master|jars)"):
            env.connect(configuration=configuration)
    with env.api() as api:
        assert api.get("/v1/sessions").json()["total"] == sessions  # no session was made
    with env.connect() as conn, conn.cursor() as cursor:
        cursor.execute("SET spark.sql.shuffle.partitions")
        before = cursor.fetchall()
        with env.api() as api:
            queries = api.get("/v1/queries").json()["queries"]
        # The allowed setting sorts (and would have been SET) before the denied one.
        overlay = {"spark.sql.shuffle.partitions": "7", "spark.sql.warehouse.dir": "/elsewhere"}
        response = conn.client.ExecuteStatement(
            ttypes.TExecuteStatementReq(
                sessionHandle=conn._sessionHandle, statement="SELECT 1", confOverlay=overlay
            )
        )
        assert response.status.statusCode == ttypes.TStatusCode.ERROR_STATUS
        assert "SETTING_DENIED" in response.status.errorMessage
        assert "'spark.sql.warehouse.dir' (confOverlay)" in response.status.errorMessage
        with env.api() as api:
            assert api.get("/v1/queries").json()["queries"] == queries  # nothing submitted
        cursor.execute("SET spark.sql.shuffle.partitions")
        assert cursor.fetchall() == before


def test_wrong_password_and_nosasl_are_refused_with_a_reason(env: Env) -> None:
    with pytest.raises(TTransportException, match="Authentication failed"):
        hive.connect(
            "127.0.0.1", port=env.thrift_port, username="alice", password="wrong", auth="CUSTOM"
        )
    with pytest.raises(hive.OperationalError, match="requires authentication"):
        hive.connect("127.0.0.1", port=env.thrift_port, username="alice", auth="NOSASL")
    with env.api() as api:
        token = api.post("/v1/tokens", json={"name": "jdbc"}).json()["token"]
    # A personal access token works as the password.
    with (
        hive.connect(
            "127.0.0.1", port=env.thrift_port, username="alice", password=token, auth="CUSTOM"
        ) as conn,
        conn.cursor() as cursor,
    ):
        cursor.execute("SELECT 7")
        assert cursor.fetchall() == [(7,)]


def test_a_client_that_reconnects_elsewhere_carries_on_fetching(env: Env) -> None:
    conn = env.connect()
    cursor = conn.cursor()
    cursor.arraysize = 10
    cursor.execute("SELECT id FROM range(25)")
    assert cursor.fetchmany(10) == [(i,) for i in range(10)]
    handle = cursor._operationHandle
    conn._transport.close()  # the connection drops; the query and its cursor stay
    with env.connect_http() as other:
        client = other.client
        fetched = client.FetchResults(
            ttypes.TFetchResultsReq(operationHandle=handle, orientation=0, maxRows=100)
        )
        assert fetched.status.statusCode == 0
        values = fetched.results.columns[0].i64Val.values
        assert values == list(range(10, 25))
        again = client.FetchResults(
            ttypes.TFetchResultsReq(operationHandle=handle, orientation=4, maxRows=3)
        )
        assert again.results.columns[0].i64Val.values == [0, 1, 2]  # FETCH_FIRST
        log = client.FetchResults(
            ttypes.TFetchResultsReq(operationHandle=handle, orientation=4, maxRows=100, fetchType=1)
        )
        lines = log.results.columns[0].stringVal.values
        assert any("succeeded: 25 rows" in line for line in lines)


def test_handles_naming_ids_beyond_the_store_are_invalid(env: Env) -> None:
    """Eight bytes of a handle hold more than a 64-bit id: refused like any handle not ours."""
    with env.connect("alice") as alice, alice.cursor() as cursor:
        cursor.execute("SELECT 1")
        handle = cursor._operationHandle
        guid = handle.operationId.guid
        handle.operationId.guid = guid[:8] + b"\xff" * 8
        fetched = alice.client.FetchResults(
            ttypes.TFetchResultsReq(operationHandle=handle, orientation=0, maxRows=10)
        )
        assert fetched.status.statusCode == ttypes.TStatusCode.INVALID_HANDLE_STATUS
        assert "Invalid operation handle" in fetched.status.errorMessage
        handle.operationId.guid = guid  # PyHive closes it on the way out
    assert "Traceback" not in env.server.log_path.read_text()


# -- the call walks: every call the door serves, read from its IDL ---------------------------
#
# The calls come from the service sparkgate loads (``T.TCLIService``), not from a client's
# list or a hand-written one, so a call added to the IDL is walked without anyone adding it
# here. Handles are alice's real ones: a refusal that let a call through would show up as her
# session closed, her query cancelled or a statement run.

# Calls that do not look at handles: sparkgate refuses them outright.
_UNSUPPORTED = {"GetDelegationToken", "CancelDelegationToken", "RenewDelegationToken", "GetLog"}
_WALKED = "SELECT 'walked' AS w"  # the statement every walked ExecuteStatement carries


def _served_calls() -> list[str]:
    calls = sorted(T.TCLIService.thrift_services)
    assert {"OpenSession", "ExecuteStatement", "FetchResults", "GetQueryId"} <= set(calls)
    assert len(calls) >= 24, calls
    return calls


def _server_handles(session: Any, operation: Any) -> dict[str, Any]:
    """PyHive's handles (its own generated classes) as the server's IDL's structs."""

    def identifier(handle: Any) -> Any:
        return T.THandleIdentifier(guid=handle.guid, secret=handle.secret)

    return {
        "sessionHandle": T.TSessionHandle(sessionId=identifier(session.sessionId)),
        "operationHandle": T.TOperationHandle(
            operationId=identifier(operation.operationId),
            operationType=operation.operationType,
            hasResultSet=operation.hasResultSet,
        ),
    }


def _request(call: str, handles: dict[str, Any]) -> Any:
    request = getattr(T, f"T{call}Req")()
    for spec in request.thrift_spec.values():
        if spec[1] in handles:
            setattr(request, spec[1], handles[spec[1]])
    if call == "OpenSession":
        request.client_protocol = T.TProtocolVersion.HIVE_CLI_SERVICE_PROTOCOL_V10
        request.username = "alice"
    if call == "ExecuteStatement":
        request.statement = _WALKED
    if call == "FetchResults":
        request.orientation, request.maxRows = 0, 10
    if call == "GetInfo":
        request.infoType = T.TGetInfoType.CLI_SERVER_NAME
    return request


def _encode_call(call: str, request: Any) -> bytes:
    buffer = TMemoryBuffer()
    protocol = TBinaryProtocol(buffer)
    protocol.write_message_begin(call, TMessageType.CALL, 1)
    protocol.write_struct(getattr(T.TCLIService, f"{call}_args")(req=request))
    protocol.write_message_end()
    return bytes(buffer.getvalue())


def _decode_reply(call: str, data: bytes) -> Any:
    """The call's response, or the TApplicationException the server answered with."""
    protocol = TBinaryProtocol(TMemoryBuffer(data))
    name, kind, _ = protocol.read_message_begin()
    assert name == call, (name, call)
    if kind == TMessageType.EXCEPTION:
        error: Any = TApplicationException()
        protocol.read_struct(error)
        return error
    result = getattr(T.TCLIService, f"{call}_result")()
    protocol.read_struct(result)
    return result.success


def _until_closed(sock: socket.socket) -> bytes:
    """What the server says until it closes (a reset counts: it closed with bytes unread)."""
    received = b""
    try:
        while chunk := sock.recv(65536):
            received += chunk
    except ConnectionResetError:
        pass
    except TimeoutError:
        said = f"the connection is still open; the server said {received!r}"
        raise AssertionError(said) from None
    return received


def _framed(sock: socket.socket, message: bytes) -> bytes:
    sock.sendall(struct.pack(">I", len(message)) + message)
    (length,) = struct.unpack(">I", _recv_exactly(sock, 4))
    return _recv_exactly(sock, length)


def _alices_queries(env: Env) -> list[str]:
    with env.api() as api:
        return [q["query"] for q in api.get("/v1/queries", params={"limit": 500}).json()["queries"]]


def test_every_call_without_a_login_is_refused_and_changes_nothing(env: Env) -> None:
    """The walk without credentials, over both transports: on the binary port, after a SASL
    login with a wrong password no call gets an answer, and a call sent without SASL (NOSASL)
    is refused with how to log in; over HTTP, /cliservice answers 401 without credentials (and
    with wrong ones). Alice's session and query carry on, and no walked statement ran."""
    calls = _served_calls()
    before = _alices_queries(env)
    # Wrong passwords count against their address: from another loopback address, so that
    # 127.0.0.1 stays unslowed for the tests after this one.
    elsewhere = httpx.Client(transport=httpx.HTTPTransport(local_address="127.0.0.9"), timeout=30)
    with elsewhere, env.connect("alice") as alice, alice.cursor() as cursor:
        cursor.execute("SELECT 'secret'", async_=True)
        handles = _server_handles(alice.sessionHandle, cursor._operationHandle)
        messages = {call: _encode_call(call, _request(call, handles)) for call in calls}

        with socket.create_connection(
            ("127.0.0.1", env.thrift_port), timeout=30, source_address=("127.0.0.9", 0)
        ) as sock:
            _sasl(sock, 1, b"PLAIN")
            _sasl(sock, 2, b"\0alice\0not-her-password")
            status, reason = _sasl_reply(sock)
            assert status == 3 and b"Authentication failed" in reason, reason
            with contextlib.suppress(OSError):  # it may be closed already
                for message in messages.values():
                    sock.sendall(struct.pack(">I", len(message)) + message)
            assert _until_closed(sock) == b""  # not one call answered

        for call, message in messages.items():
            with socket.create_connection(("127.0.0.1", env.thrift_port), timeout=30) as sock:
                sock.sendall(message)  # NOSASL: the bare call
                answer = _decode_reply(call, _until_closed(sock))
            text = answer.status.errorMessage if call == "OpenSession" else answer.message
            assert "requires authentication" in text, (call, answer)

            anonymous = httpx.post(f"{env.url}/cliservice", content=message, timeout=30)
            assert anonymous.status_code == 401, (call, anonymous.status_code, anonymous.text)
            if call in {"ExecuteStatement", "CloseSession", "CancelOperation"}:
                wrong = elsewhere.post(
                    f"{env.url}/cliservice", content=message, auth=("alice", "not-her-password")
                )
                assert wrong.status_code == 401, (call, wrong.status_code, wrong.text)
        assert cursor.fetchall() == [("secret",)]
        cursor.execute("SELECT 'still open'")
        assert cursor.fetchall() == [("still open",)]
    assert not [q for q in _alices_queries(env) if q not in before and "walked" in q]
    assert "Traceback" not in env.server.log_path.read_text()


def test_every_call_with_another_users_handles_is_refused_and_changes_nothing(env: Env) -> None:
    """The walk with another user's handles: every call that takes a handle, made by bob (logged
    in) with alice's session and operation, answers as for handles that do not exist, and
    alice's session and query carry on. A new call that forgot the ownership check fails."""
    calls = [call for call in _served_calls() if call != "OpenSession"]
    before = _alices_queries(env)
    with env.connect("alice") as alice, alice.cursor() as cursor:
        cursor.execute("SELECT 'secret'", async_=True)
        handles = _server_handles(alice.sessionHandle, cursor._operationHandle)
        with socket.create_connection(("127.0.0.1", env.thrift_port), timeout=60) as bob:
            _sasl(bob, 1, b"PLAIN")
            _sasl(bob, 2, b"\0bob\0" + PASSWORDS["bob"].encode())
            assert _sasl_reply(bob)[0] == 5  # COMPLETE
            for call in calls:
                answer = _decode_reply(
                    call, _framed(bob, _encode_call(call, _request(call, handles)))
                )
                if call == "GetQueryId":  # its response has no status: an exception
                    assert "QUERY_NOT_FOUND" in answer.message, (call, answer)
                    continue
                expected = (
                    T.TStatusCode.ERROR_STATUS
                    if call in _UNSUPPORTED
                    else T.TStatusCode.INVALID_HANDLE_STATUS
                )
                assert answer.status.statusCode == expected, (call, answer.status)
        assert cursor.fetchall() == [("secret",)]
    assert not [q for q in _alices_queries(env) if q not in before and "walked" in q]


def test_metadata_calls_answer_with_jdbc_layouts(env: Env) -> None:
    with env.connect() as conn, conn.cursor() as cursor:
        cursor.execute("CREATE DATABASE IF NOT EXISTS meta_db")
        cursor.execute(
            "CREATE TABLE IF NOT EXISTS meta_db.people (id BIGINT, name STRING, "
            "score DECIMAL(5,2)) USING parquet"
        )
        cursor.execute(
            "CREATE OR REPLACE VIEW meta_db.people_view AS SELECT id FROM meta_db.people"
        )
        client, session = conn.client, conn.sessionHandle

        def rows(response: Any) -> tuple[list[str], list[tuple[Any, ...]]]:
            assert response.status.statusCode == 0, response.status
            handle = response.operationHandle
            meta = client.GetResultSetMetadata(
                ttypes.TGetResultSetMetadataReq(operationHandle=handle)
            )
            names = [c.columnName for c in meta.schema.columns]
            fetched = client.FetchResults(
                ttypes.TFetchResultsReq(operationHandle=handle, orientation=0, maxRows=10000)
            )
            columns = []
            for column in fetched.results.columns:
                typed = next(v for v in column.__dict__.values() if v is not None)
                columns.append(typed.values)
            return names, list(zip(*columns, strict=True))

        names, schemas = rows(
            client.GetSchemas(ttypes.TGetSchemasReq(sessionHandle=session, schemaName="meta%"))
        )
        assert names[:2] == ["TABLE_SCHEM", "TABLE_CATALOG"]
        assert [s[0] for s in schemas] == ["meta_db"]

        names, tables = rows(
            client.GetTables(
                ttypes.TGetTablesReq(sessionHandle=session, schemaName="meta_db", tableName="peo%")
            )
        )
        assert names[:5] == ["TABLE_CAT", "TABLE_SCHEM", "TABLE_NAME", "TABLE_TYPE", "REMARKS"]
        assert {(t[2], t[3]) for t in tables} == {("people", "TABLE"), ("people_view", "VIEW")}

        names, columns = rows(
            client.GetColumns(
                ttypes.TGetColumnsReq(
                    sessionHandle=session, schemaName="meta_db", tableName="people"
                )
            )
        )
        assert len(names) == 23 and names[3] == "COLUMN_NAME" and names[4] == "DATA_TYPE"
        assert [(c[3], c[4]) for c in columns] == [("id", -5), ("name", 12), ("score", 3)]

        _, types = rows(client.GetTypeInfo(ttypes.TGetTypeInfoReq(sessionHandle=session)))
        assert "DECIMAL" in {t[0] for t in types}
        _, table_types = rows(client.GetTableTypes(ttypes.TGetTableTypesReq(sessionHandle=session)))
        assert {t[0] for t in table_types} >= {"TABLE", "VIEW"}
        names, keys = rows(
            client.GetPrimaryKeys(
                ttypes.TGetPrimaryKeysReq(sessionHandle=session, schemaName="meta_db")
            )
        )
        assert keys == [] and "PK_NAME" in names
        names, references = rows(
            client.GetCrossReference(ttypes.TGetCrossReferenceReq(sessionHandle=session))
        )
        assert references == [] and "FKCOLUMN_NAME" in names
        names, _ = rows(client.GetCatalogs(ttypes.TGetCatalogsReq(sessionHandle=session)))
        assert names == ["TABLE_CAT"]
        names, functions = rows(
            client.GetFunctions(
                ttypes.TGetFunctionsReq(
                    sessionHandle=session, schemaName="meta_db", functionName="upp%"
                )
            )
        )
        assert names[2] == "FUNCTION_NAME"
        assert {f[2] for f in functions} == {"upper"}

        info = client.GetInfo(ttypes.TGetInfoReq(sessionHandle=session, infoType=17))
        assert info.infoValue.stringValue == "Spark SQL"
        token = client.GetDelegationToken(
            ttypes.TGetDelegationTokenReq(sessionHandle=session, owner="a", renewer="b")
        )
        assert token.status.statusCode == ttypes.TStatusCode.ERROR_STATUS
        assert "not supported" in token.status.errorMessage


# -- raw bytes: what no polite client sends ----------------------------------------------


def _sasl(sock: socket.socket, status: int, payload: bytes) -> None:
    sock.sendall(bytes([status]) + struct.pack(">I", len(payload)) + payload)


def _sasl_reply(sock: socket.socket) -> tuple[int, bytes]:
    head = _recv_exactly(sock, 5)
    (length,) = struct.unpack(">I", head[1:])
    return head[0], _recv_exactly(sock, length)


def _recv_exactly(sock: socket.socket, size: int) -> bytes:
    data = b""
    while len(data) < size:
        chunk = sock.recv(size - len(data))
        if not chunk:
            raise ConnectionError("closed")
        data += chunk
    return data


def test_garbage_wrong_mechanisms_and_unknown_calls_get_clear_answers(env: Env) -> None:
    with socket.create_connection(("127.0.0.1", env.thrift_port), timeout=30) as sock:
        _sasl(sock, 1, b"GSSAPI")
        status, message = _sasl_reply(sock)
        assert status == 3 and b"Unsupported SASL mechanism" in message

    with socket.create_connection(("127.0.0.1", env.thrift_port), timeout=30) as sock:
        _sasl(sock, 1, b"PLAIN")
        _sasl(sock, 2, b"\0alice\0" + PASSWORDS["alice"].encode())
        assert _sasl_reply(sock)[0] == 5  # COMPLETE
        # An unknown call: an exception reply naming it, and the connection goes on.
        from thrift.protocol.TBinaryProtocol import TBinaryProtocol
        from thrift.transport.TTransport import TMemoryBuffer

        buffer = TMemoryBuffer()
        protocol = TBinaryProtocol(buffer)
        protocol.writeMessageBegin("UploadData", 1, 5)
        protocol.writeStructBegin("args")
        protocol.writeFieldStop()
        protocol.writeStructEnd()
        protocol.writeMessageEnd()
        call = buffer.getvalue()
        sock.sendall(struct.pack(">I", len(call)) + call)
        (length,) = struct.unpack(">I", _recv_exactly(sock, 4))
        reply = _recv_exactly(sock, length)
        assert b"UploadData" in reply and b"does not serve" in reply
        # Garbage in a frame: the connection is closed, nothing else.
        sock.sendall(struct.pack(">I", 12) + b"not thrift!!")
        assert sock.recv(100) == b""

    with socket.create_connection(("127.0.0.1", env.thrift_port), timeout=30) as sock:
        sock.sendall(b"\x07" * 64)  # neither SASL nor Thrift
        status, message = _sasl_reply(sock)
        assert status == 4 and b"Not a SASL message" in message

    # The server serves everyone else as before.
    with env.connect() as conn, conn.cursor() as cursor:
        cursor.execute("SELECT 'fine'")
        assert cursor.fetchall() == [("fine",)]
    with env.api() as api:
        garbage = api.post(
            "/cliservice", content=b"\x00junk", headers={"Content-Type": "application/x-thrift"}
        )
        assert garbage.status_code == 422 and "Not a HiveServer2 Thrift call" in garbage.text
    anonymous = httpx.post(f"{env.url}/cliservice", content=b"x", timeout=30)
    assert anonymous.status_code == 401


# -- SQLAlchemy ----------------------------------------------------------------------------


def test_sqlalchemy_hive_dialect_inspects_tables(env: Env) -> None:
    import sqlalchemy as sa

    engine = sa.create_engine(
        f"hive://alice:{PASSWORDS['alice']}@127.0.0.1:{env.thrift_port}/default",
        connect_args={"auth": "CUSTOM"},
    )
    try:
        with engine.connect() as conn:
            conn.execute(sa.text("CREATE TABLE IF NOT EXISTS sa_people (id INT, name STRING)"))
            conn.execute(sa.text("INSERT INTO sa_people VALUES (1, 'ann'), (2, 'ben')"))
            assert conn.execute(sa.text("SELECT name FROM sa_people ORDER BY id")).all() == [
                ("ann",),
                ("ben",),
            ]
        inspector = sa.inspect(engine)
        assert inspector.has_table("sa_people")
        # PyHive 0.7's get_table_names() reads SHOW TABLES' first column, which Spark fills
        # with the database (Hive has one column): the same answer as Spark Thrift Server's.
        assert inspector.get_table_names() == ["default"] * len(inspector.get_table_names())
        columns = {c["name"]: str(c["type"]) for c in inspector.get_columns("sa_people")}
        assert columns == {"id": "INTEGER", "name": "VARCHAR"}
    finally:
        engine.dispose()


# -- beeline and the Hive JDBC driver ------------------------------------------------------


@pytest.mark.parametrize("transport", ["binary", "http"])
def test_beeline_over_both_transports(env: Env, transport: str, tmp_path: Path) -> None:
    if transport == "binary":
        url = f"jdbc:hive2://127.0.0.1:{env.thrift_port}/default"
    else:
        url = (
            f"jdbc:hive2://127.0.0.1:{env.http_port}/default;transportMode=http;httpPath=cliservice"
        )
    out = beeline(url, "alice", PASSWORDS["alice"], "SELECT 40 + 2 AS answer;", tmp_path)
    assert "answer" in out and "42" in out and "1 row selected" in out, out
    # A query that runs for seconds: beeline polls its status and draws its progress.
    slow = "SELECT java_method('java.lang.Thread', 'sleep', 2000L) IS NULL AS slept, 7 AS n;"
    out = beeline(url, "alice", PASSWORDS["alice"], slow, tmp_path)
    assert "Exception" not in out and "| false" in out, out
    out = beeline(url, "alice", PASSWORDS["alice"], "SELECT * FROM no_such_table;", tmp_path)
    assert "TABLE_OR_VIEW_NOT_FOUND" in out, out
    out = beeline(url, "alice", "wrong", "SELECT 1;", tmp_path)
    assert "row selected" not in out, out  # nothing ran (beeline prints this after a result)
    if transport == "binary":
        assert "Authentication failed" in out, out
    else:
        assert "401" in out, out


# -- dbt ---------------------------------------------------------------------------------

DBT_PROJECT = """
name: sparkgate_demo
version: "1.0"
config-version: 2
profile: sparkgate
model-paths: [models]
"""

DBT_MODELS = {
    "people.sql": "{{ config(materialized='table') }}\n"
    "SELECT id, concat('person-', id) AS name FROM range(5)",
    "grown_ups.sql": "{{ config(materialized='view') }}\n"
    "SELECT * FROM {{ ref('people') }} WHERE id >= 2",
    "events.sql": "{{ config(materialized='incremental', incremental_strategy='append') }}\n"
    "SELECT id FROM range({{ var('events', 3) }})\n"
    "{% if is_incremental() %}WHERE id > (SELECT max(id) FROM {{ this }}){% endif %}",
    "schema.yml": """
version: 2
models:
  - name: people
    columns:
      - name: id
        data_tests: [unique, not_null]
  - name: events
    columns:
      - name: id
        data_tests: [unique]
""",
}


def test_dbt_spark_runs_a_project_over_thrift(env: Env, tmp_path: Path) -> None:
    project = tmp_path / "dbt"
    (project / "models").mkdir(parents=True)
    (project / "dbt_project.yml").write_text(DBT_PROJECT)
    for name, text in DBT_MODELS.items():
        (project / "models" / name).write_text(text)
    (project / "profiles.yml").write_text(
        "sparkgate:\n  target: dev\n  outputs:\n    dev:\n"
        "      type: spark\n      method: thrift\n      host: 127.0.0.1\n"
        f"      port: {env.thrift_port}\n      user: alice\n"
        f"      password: {PASSWORDS['alice']}\n      auth: CUSTOM\n"
        "      schema: dbt_demo\n      threads: 1\n      connect_retries: 0\n"
    )
    dbt = Path(os.environ.get("VIRTUAL_ENV", Path(__import__("sys").executable).parent.parent))
    executable = dbt / "bin" / "dbt"

    def run(*args: str) -> str:
        done = subprocess.run(
            [str(executable), *args, "--project-dir", str(project), "--profiles-dir", str(project)],
            capture_output=True,
            text=True,
            timeout=600,
            cwd=project,
            env={**os.environ, "DBT_SEND_ANONYMOUS_USAGE_STATS": "false", "HOME": str(tmp_path)},
            check=False,
        )
        assert done.returncode == 0, done.stdout[-4000:] + done.stderr[-2000:]
        return done.stdout

    out = run("run")
    assert "Completed successfully" in out and "PASS=3" in out, out
    out = run("run", "--vars", "{events: 6}")  # the incremental model appends 3, 4, 5
    assert "PASS=3" in out, out
    out = run("test")
    assert "PASS=3" in out, out

    with env.connect() as conn, conn.cursor() as cursor:
        cursor.execute("SELECT count(*), max(id) FROM dbt_demo.events")
        assert cursor.fetchall() == [(6, 5)]
        cursor.execute("SELECT name FROM dbt_demo.grown_ups ORDER BY id")
        assert cursor.fetchall() == [("person-2",), ("person-3",), ("person-4",)]
