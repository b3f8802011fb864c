"""The HiveServer2 door of a server without authentication: NOSASL (bare Thrift) and SASL
PLAIN with any password both connect, as the anonymous user; the binary port can be off."""

from __future__ import annotations

from collections.abc import Iterator

import httpx
import pytest
from pyhive import hive

from sparkgate.testing import ServerProcess, free_port

pytestmark = [pytest.mark.spark, pytest.mark.timeout(600)]


@pytest.fixture(scope="module")
def open_server(
    tmp_path_factory: pytest.TempPathFactory, metastore_uri: str
) -> Iterator[tuple[ServerProcess, int]]:
    from sparkgate.testing import kill_engines, local_test_settings

    port = free_port()
    settings = local_test_settings(
        tmp_path_factory.mktemp("hive2-open"),
        metastore_uri=metastore_uri,
        thrift_port=port,
        warm_engines=0,
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
