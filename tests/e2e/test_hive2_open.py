"""The HiveServer2 door of a server without authentication: NOSASL (bare Thrift) and SASL
PLAIN with any password both connect, as the anonymous user; the binary port can be off.

Without authentication anyone gets in, so this server is also where the binary port's
defences before login are shown over real TCP: junk closes its connection with one warning
line and no traceback, a silent connection is closed at the login deadline, and connections
logging in from one address are capped (small here: a 5 s deadline, a cap of 3).
"""

from __future__ import annotations

import random
import socket
import struct
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from pyhive import hive

from sparkgate_dev import ServerProcess, eventually, free_port

pytestmark = [pytest.mark.spark, pytest.mark.timeout(600)]

LOGIN_TIMEOUT = 5.0
MAX_PENDING = 3


@pytest.fixture(scope="module")
def open_server(
    tmp_path_factory: pytest.TempPathFactory, metastore_uri: str
) -> Iterator[tuple[ServerProcess, int]]:
    from sparkgate_dev import kill_engines, local_test_settings

    port = free_port()
    settings = local_test_settings(
        tmp_path_factory.mktemp("hive2-open"),
        metastore_uri=metastore_uri,
        thrift_port=port,
        connect_port=free_port(),  # every door: one name for the anonymous user
        warm_engines=0,
        thrift_login_timeout=LOGIN_TIMEOUT,
        thrift_max_pending_logins_per_address=MAX_PENDING,
    )
    server = ServerProcess(settings).start()
    try:
        yield server, port
    finally:
        server.stop()
        kill_engines(settings)


@pytest.mark.parametrize("auth", ["NOSASL", "NONE"])
def test_without_authentication_both_nosasl_and_plain_connect(
    open_server: tuple[ServerProcess, int], auth: str
) -> None:
    server, port = open_server
    with (
        hive.connect("127.0.0.1", port=port, username="whoever", auth=auth) as conn,
        conn.cursor() as cursor,
    ):
        cursor.execute("SELECT 'open' AS door, 1 + 1 AS two")
        assert cursor.fetchall() == [("open", 2)]
        query_id = int.from_bytes(cursor._operationHandle.operationId.guid[8:], "big")
    query = httpx.get(f"{server.url}/v1/queries/{query_id}", timeout=30).json()
    session = httpx.get(f"{server.url}/v1/sessions/{query['session_id']}", timeout=30).json()
    assert session["owner"] == "anonymous"


def test_without_authentication_every_door_names_the_anonymous_user(
    open_server: tuple[ServerProcess, int],
) -> None:
    """SQL's current_user() is the session's sparkgate user at every door, as the queries
    list names it, and so is the owner of a table it creates: without authentication,
    ``anonymous`` (not the engine's OS user)."""
    from pyspark.sql.connect.session import SparkSession

    server, port = open_server
    who = "SELECT current_user() AS who"
    with (
        hive.connect("127.0.0.1", port=port, username="whoever", auth="NOSASL") as conn,
        conn.cursor() as cursor,
    ):
        cursor.execute(who)
        assert cursor.fetchall() == [("anonymous",)]
        ids = [int.from_bytes(cursor._operationHandle.operationId.guid[8:], "big")]
        # Spark's own current user, the owner a new table records, is the session's too.
        cursor.execute("CREATE TABLE open_door_owned (i INT) USING parquet")
        try:
            cursor.execute("DESCRIBE TABLE EXTENDED open_door_owned")
            described = cursor.fetchall()
            assert [row[1] for row in described if row[0] == "Owner"] == ["anonymous"]
        finally:
            cursor.execute("DROP TABLE open_door_owned")
    with server.client() as sg:
        rest = sg.wait(sg.submit(who).id, timeout=240)
        assert rest.state == "success", rest
        assert sg.result(rest.id).rows == [["anonymous"]]
        ids.append(rest.id)
    with httpx.Client(base_url=server.url, timeout=60) as http:
        ids.append(_livy_sql(http, who, [["anonymous"]]))
    spark = SparkSession.builder.remote(f"sc://localhost:{server.settings.connect_port}/").create()
    try:
        assert spark.sql(who).collect()[0].who == "anonymous"
    finally:
        spark.stop()
    with server.client() as sg:
        listed = sg.queries(limit=1000).queries
    named = {q.id: q.owner for q in listed if "current_user()" in q.query}
    assert set(ids) < set(named), (ids, named)  # and Spark Connect's
    assert set(named.values()) == {"anonymous"}, named


def _livy_sql(http: httpx.Client, code: str, rows: list[list[object]]) -> int:
    """Run ``code`` in a new Livy SQL session, check its rows; the statement's query id."""
    session = http.post("/sessions", json={"kind": "sql"}).json()
    try:
        eventually(
            lambda: http.get(f"/sessions/{session['id']}/state").json()["state"] == "idle",
            timeout=240,
            what="the Livy session idle",
        )
        posted = http.post(f"/sessions/{session['id']}/statements", json={"code": code}).json()

        def available() -> dict[str, Any] | None:
            got = http.get(f"/sessions/{session['id']}/statements/{posted['id']}").json()
            return got if got["state"] == "available" else None

        done = eventually(available, timeout=240, what="the Livy statement")
        output = done["output"]
        assert output["status"] == "ok", output
        assert output["data"]["application/json"]["data"] == rows
        return int(done["sparkgate"]["query_id"])
    finally:
        http.delete(f"/sessions/{session['id']}")


# -- before login: what a fuzzer sends ----------------------------------------------------


class ServerLog:
    """The server's log from the moment this was made."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.start = path.stat().st_size

    def text(self) -> str:
        with self.path.open("rb") as f:
            f.seek(self.start)
            return f.read().decode(errors="replace")

    def closed_lines(self) -> list[str]:
        return [
            line
            for line in self.text().splitlines()
            if " WARNING " in line and "HiveServer2 connection from 127.0.0.1 closed" in line
        ]


def _until_closed(sock: socket.socket) -> bytes:
    """Whatever the server says until it closes the connection (a reset counts: the server
    closed with bytes of ours unread). Fails if it is still open after the login deadline."""
    sock.settimeout(LOGIN_TIMEOUT + 10)
    received = b""
    try:
        while chunk := sock.recv(65536):
            received += chunk
    except ConnectionResetError:
        pass
    return received


def _sasl(status: int, payload: bytes) -> bytes:
    return bytes([status]) + struct.pack(">I", len(payload)) + payload


def _call(name: bytes, message_type: int, body: bytes) -> bytes:
    """A strict Thrift binary message: version and type, name, sequence id, then ``body``."""
    return struct.pack(">Ii", 0x80010000 | message_type, len(name)) + name + b"\0\0\0\1" + body


JUNK = {
    "bad-thrift-version": (b"\x80\x02\x00\x01" + random.Random(1).randbytes(200), "not a Thrift"),
    "random-bytes": (random.Random(2).randbytes(300), ""),
    "http-request": (b"GET / HTTP/1.1\r\nHost: sparkgate\r\n\r\n", "Not a SASL message"),
    "huge-sasl-start": (b"\x01" + struct.pack(">I", 2**31) + b"PLAIN", "too long"),
    "sasl-start-then-junk": (_sasl(1, b"PLAIN") + b"\x07" + bytes(64), "Not a SASL message"),
    "sasl-stalled-mid-message": (b"\x01\x00\x00\x01\x00PLA", "no login within"),
    "sasl-cut-short": (_sasl(1, b"PLAIN") + b"\x02\x00\x00", "in the middle of logging in"),
    "nosasl-a-reply-not-a-call": (_call(b"OpenSession", 2, b"\x00"), "is not a call"),
    # Two billion list elements of a type that takes no bytes: refused, not skipped.
    "nosasl-phantom-list": (
        _call(b"GetInfo", 1, b"\x0f\x00\x09\x00" + struct.pack(">i", 2**31 - 1)),
        "unknown Thrift type 0",
    ),
    "nosasl-never-ending": (_call(b"x" * 70_000, 1, b""), "longer than 65536 bytes"),
    "nosasl-stalled-mid-message": (_call(b"OpenSession", 1, b"\x0c\x00\x01"), "no login"),
}


@pytest.mark.parametrize("shape", list(JUNK))
def test_junk_before_login_closes_with_one_warning_line(
    open_server: tuple[ServerProcess, int], shape: str
) -> None:
    server, port = open_server
    data, reason = JUNK[shape]
    log = ServerLog(server.log_path)
    sock = socket.create_connection(("127.0.0.1", port), timeout=30)
    try:
        sock.sendall(data)
        if shape == "sasl-cut-short":
            sock.shutdown(socket.SHUT_WR)  # the client's end of the stream mid-message
        _until_closed(sock)
    finally:
        sock.close()
    lines = eventually(log.closed_lines, timeout=30, what="the warning line")
    assert len(lines) == 1 and reason in lines[0], lines
    assert "Traceback" not in log.text()
    _a_real_client_gets_an_answer(port)


def test_junk_after_login_closes_with_one_warning_line(
    open_server: tuple[ServerProcess, int],
) -> None:
    server, port = open_server
    log = ServerLog(server.log_path)
    sock = socket.create_connection(("127.0.0.1", port), timeout=30)
    try:
        sock.sendall(_sasl(1, b"PLAIN") + _sasl(2, b"\0whoever\0anything"))
        assert sock.recv(5)[:1] == b"\x05"  # COMPLETE: logged in as the anonymous user
        sock.sendall(struct.pack(">I", 12) + b"not thrift!!")
        _until_closed(sock)
    finally:
        sock.close()
    lines = eventually(log.closed_lines, timeout=30, what="the warning line")
    assert len(lines) == 1 and "not a Thrift binary message" in lines[0], lines
    assert "Traceback" not in log.text()


def test_a_silent_connection_is_closed_at_the_login_deadline(
    open_server: tuple[ServerProcess, int],
) -> None:
    server, port = open_server
    log = ServerLog(server.log_path)
    sock = socket.create_connection(("127.0.0.1", port), timeout=30)
    try:
        assert _until_closed(sock) == b""
    finally:
        sock.close()
    lines = eventually(log.closed_lines, timeout=30, what="the warning line")
    assert len(lines) == 1 and f"no login within {LOGIN_TIMEOUT:g} s" in lines[0], lines


def test_connections_logging_in_from_one_address_are_capped(
    open_server: tuple[ServerProcess, int],
) -> None:
    server, port = open_server
    log = ServerLog(server.log_path)
    silent: list[socket.socket] = []
    try:
        for _ in range(MAX_PENDING):
            silent.append(socket.create_connection(("127.0.0.1", port), timeout=30))
        extra = socket.create_connection(("127.0.0.1", port), timeout=30)
        silent.append(extra)
        assert _until_closed(extra) == b""
        lines = eventually(log.closed_lines, timeout=30, what="the warning line")
        # Closed for the cap, not by the deadline (which would close the first three too).
        assert "logging in already" in lines[0], lines
    finally:
        for sock in silent:
            sock.close()
    # The server counts a connection out when it sees it close; then others get in again.
    _a_real_client_gets_an_answer(port)


def _a_real_client_gets_an_answer(port: int) -> None:
    def answered() -> bool:
        try:
            with (
                hive.connect("127.0.0.1", port=port, username="whoever", auth="NONE") as conn,
                conn.cursor() as cursor,
            ):
                cursor.execute("SELECT 'still here'")
                return bool(cursor.fetchall() == [("still here",)])
        except Exception:  # refused for the cap until the server has seen the others close
            return False

    eventually(answered, timeout=240, interval=0.5, what="a real client's answer")
