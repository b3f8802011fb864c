"""The store out of reach for longer than the heartbeat timeout costs nothing: nodes answer
503 (STORE_UNAVAILABLE) and recover by themselves, the engine goes on running its statement
and records it when the store is back, and nobody is declared lost for heartbeats that could
not be written. PostgreSQL is taken away by pausing a TCP proxy in front of it."""

from __future__ import annotations

import time
from collections.abc import Iterator
from typing import Any

import httpx
import pytest
from sqlalchemy.engine import make_url

from sparkgate.client import ClientError
from sparkgate_dev import ServerProcess, eventually
from sparkgate_dev.chaos import fresh_database, through
from sparkgate_dev.proxy import TcpProxy

pytestmark = [pytest.mark.postgres, pytest.mark.spark]

OUTAGE = 10.0  # longer than the heartbeat timeout below
# Thread.sleep through reflection: a statement that runs 14 s, through the outage.
SLOW = "SELECT 7 AS n FROM range(1) WHERE java_method('java.lang.Thread', 'sleep', 14000L) <> ''"


@pytest.fixture(scope="module")
def outage_rig(
    tmp_path_factory: pytest.TempPathFactory, pg_available: None
) -> Iterator[tuple[ServerProcess, TcpProxy, str]]:
    from sparkgate_dev import kill_engines, local_test_settings

    home = tmp_path_factory.mktemp("outage")
    with fresh_database() as url:
        proxy = TcpProxy(("127.0.0.1", make_url(url).port or 5432)).start()
        settings = local_test_settings(
            home,
            store_url=through(url, proxy),
            metastore_uri=None,
            catalog="in-memory",
            warm_engines=0,
            engine_heartbeat_interval=1.0,
            engine_heartbeat_timeout=4.0,
            lease_ttl=3.0,
        )
        server = ServerProcess(settings).start()
        try:
            server.wait_engines_running()
            yield server, proxy, url
        finally:
            proxy.resume()
            server.stop()
            kill_engines(settings)
            proxy.stop()


def test_a_store_outage_answers_503_and_loses_nothing(
    outage_rig: tuple[ServerProcess, TcpProxy, str],
) -> None:
    server, proxy, _ = outage_rig
    with server.client() as sg:
        session = sg.create_session()
        sid = session.id
        assert sg.wait_session(sid, {"idle", "error", "dead"}, 240).state == "idle"
        engine_id = sg.session(sid).engine_id
        assert engine_id is not None
        slow = sg.submit(SLOW, session_id=sid)
        eventually(lambda: sg.query(slow.id).state == "running", timeout=60)

        proxy.pause()
        started = time.monotonic()
        try:
            for path in ("/healthz", f"/v1/queries/{slow.id}", "/v1/sessions"):
                answer = httpx.get(f"{server.url}{path}", timeout=30)
                assert answer.status_code == 503, (path, answer.text)
                error: dict[str, Any] = answer.json()["error"]
                assert error["code"] == "STORE_UNAVAILABLE", error
                assert "cannot be reached" in error["message"]
                assert answer.headers["Retry-After"]
            with pytest.raises(ClientError) as refused:
                sg.submit("SELECT 1", session_id=sid)
            assert (refused.value.status, refused.value.code) == (503, "STORE_UNAVAILABLE")
            time.sleep(max(0.0, OUTAGE - (time.monotonic() - started)))
        finally:
            proxy.resume()

        eventually(lambda: _healthy(server), timeout=60, what="the node to recover")
        done = sg.wait(slow.id, timeout=120)
        assert done.state == "success", done
        assert list(sg.rows(slow.id)) == [[7]]
        eventually(lambda: sg.session(sid).state == "idle", timeout=30, what="idle again")
        again = sg.submit("SELECT 41 + 1 AS n", session_id=sid)
        assert sg.wait(again.id, timeout=60).state == "success"
        assert list(sg.rows(again.id)) == [[42]]
        engines = {e.id: e for e in sg.engines(all=True).engines}
        assert engines[engine_id].state == "running", engines[engine_id]
        queries = sg.queries(session_id=sid).queries
        assert {q.state for q in queries} == {"success"}, queries


def _healthy(server: ServerProcess) -> bool:
    try:
        return httpx.get(f"{server.url}/healthz", timeout=5).status_code == 200
    except httpx.TransportError:
        return False
