"""Two server nodes on one PostgreSQL store behave as one service."""

from __future__ import annotations

import signal
import threading
from typing import Any

import httpx
import pytest
from pyhive import hive
from TCLIService import ttypes
from thrift.transport import THttpClient

from sparkgate.client import Client
from sparkgate.schemas.queries import Query
from sparkgate.store.records import Window
from sparkgate_dev import MakeServer, ServerProcess, eventually, free_port

ENDLESS = "SELECT sum(id % 7) FROM range(100000000000)"
ONCE = "SELECT 'once' AS once"
REUSED_TABLE = "CREATE TABLE two_nodes_reused USING parquet AS SELECT id FROM range(100)"
REUSED = "SELECT count(*) FROM two_nodes_reused"

pytestmark = pytest.mark.postgres


def test_two_nodes_serve_as_one(pg_url: str, make_server: MakeServer, tmp_path: Any) -> None:
    # pg_url first: its schema is dropped after make_server has stopped the nodes and their
    # engines (teardown runs in reverse; the other way round, the engines outlived the test).
    home = tmp_path / "shared-home"  # results and warehouse on storage both nodes see
    # No metastore URI: the nodes start the embedded one, and the second reuses the first's.
    common = {
        "store_url": pg_url,
        "metastore_uri": None,
        "metastore_port": free_port(),
        "warm_engines": 0,
        "lease_ttl": 3.0,
        # No safety poll within this test: the engine runs what node A queues, and node B's
        # long polls end, only because PostgreSQL's NOTIFY reached them (store/hints.py).
        "hint_safety_poll": 3600.0,
    }
    thrift_port = free_port()
    a = make_server(home, **common, thrift_port=thrift_port)
    b = make_server(home, **common)
    with a.client() as on_a, b.client() as on_b:
        assert on_a.health().store == on_b.health().store == "postgresql"
        session = on_a.create_session()
        ready = on_b.wait_session(session.id, {"idle", "error"}, timeout=240)
        assert ready.state == "idle", ready

        submitted = on_a.submit("SELECT id FROM range(2500)", session_id=session.id)
        done = on_b.query(submitted.id, wait=120)  # long poll on the other node
        assert done.state == "success"
        assert sum(1 for _ in on_b.rows(submitted.id, page=1000)) == 2500
        # A result kept by a query through node A answers its repeat through node B.
        made = on_a.submit(REUSED_TABLE, session_id=session.id)
        assert on_b.wait(made.id, timeout=120).state == "success"
        counted = on_a.submit(REUSED, session_id=session.id)
        assert on_a.wait(counted.id, timeout=120).state == "success"
        again = on_b.wait(on_b.submit(REUSED, session_id=session.id).id, timeout=120)
        assert again.state == "success" and again.reused_from == counted.id, again
        assert list(on_b.rows(again.id)) == list(on_a.rows(counted.id)) == [[100]]

        long = on_b.submit(ENDLESS, session_id=session.id)
        eventually(lambda: on_a.query(long.id).state == "running", timeout=60)
        on_a.cancel(long.id)
        assert on_b.wait(long.id, timeout=60).state == "cancelled"
        assert [q.id for q in on_a.queries(session_id=session.id).queries] == [
            long.id,
            again.id,
            counted.id,
            made.id,
            submitted.id,
        ]

        # A HiveServer2 client starts on A's binary port and goes on fetching through B's
        # HTTP transport: handles carry ids, and the fetch position is in the store.
        with hive.connect("127.0.0.1", port=thrift_port, username="x") as on_a_thrift:
            cursor = on_a_thrift.cursor()
            cursor.arraysize = 10
            cursor.execute("SELECT id FROM range(30)")
            assert cursor.fetchmany(10) == [(i,) for i in range(10)]
            handle = cursor._operationHandle
        transport = THttpClient.THttpClient(f"{b.url}/cliservice")
        with hive.connect(thrift_transport=transport) as on_b_thrift:
            rest = on_b_thrift.client.FetchResults(
                ttypes.TFetchResultsReq(operationHandle=handle, orientation=0, maxRows=100)
            )
            assert rest.results.columns[0].i64Val.values == list(range(10, 30))

        # Node A dies without a word: B takes over its duties when A's leases lapse. A long
        # poll in flight on A then fails over: sparkgate's client, given both nodes, sends a
        # read that got no answer to the next node, and a submit too, with its key.
        with a.store() as store:
            holders = {name: store.leases.get(name) for name in ("reaper", "placement")}
        kill_a_under_a_long_poll(a, b, session.id)
        b_node = on_b.health().node

        def b_holds_everything() -> bool:
            with b.store() as store:
                return all(
                    (lease := store.leases.get(name)) is not None and lease.owner == b_node
                    for name in holders
                )

        eventually(b_holds_everything, timeout=30, what="node B to take over the leases")
        after = on_b.submit("SELECT 'still serving' AS s", session_id=session.id)
        assert on_b.wait(after.id, timeout=60).state == "success"


def kill_a_under_a_long_poll(a: ServerProcess, b: ServerProcess, session_id: int) -> None:
    """SIGKILL node A while a client given both nodes long-polls A, and just after A took a
    submit whose answer it then never sent: the poll is answered by B, and the client's retry
    of the submit through B, with the same Idempotency-Key, answers the query A made, which
    runs once."""
    with a.client() as on_a, b.client() as on_b:
        endless = on_b.submit(ENDLESS, session_id=session_id)
        eventually(lambda: on_a.query(endless.id).state == "running", timeout=60)
        polling_a = threading.Event()

        class Watched(httpx.HTTPTransport):
            def handle_request(self, request: httpx.Request) -> httpx.Response:
                if request.url.port == a.port and "wait" in request.url.params:
                    polling_a.set()
                return super().handle_request(request)

        keys: list[str] = []
        taken: list[int] = []

        class DiesAfterTaking(httpx.HTTPTransport):
            """Node A takes the submit (its query is in the store), then dies before the
            client reads its answer."""

            def handle_request(self, request: httpx.Request) -> httpx.Response:
                if request.method == "POST" and request.url.path == "/v1/queries":
                    keys.append(request.headers["idempotency-key"])
                    if request.url.port == a.port:
                        answer = super().handle_request(request)
                        answer.read()
                        taken.append(answer.json()["id"])
                        a.stop(signal.SIGKILL)
                        raise httpx.RemoteProtocolError("no answer: the node died", request=request)
                return super().handle_request(request)

        answered: list[Query] = []
        with Client([a.url, b.url], transport=Watched(), timeout=60) as both:
            poll = threading.Thread(
                target=lambda: answered.append(both.query(endless.id, wait=120))
            )
            poll.start()
            assert polling_a.wait(30)
            with Client([a.url, b.url], transport=DiesAfterTaking(), timeout=60) as retrying:
                once = retrying.submit(ONCE, session_id=session_id)
                assert retrying.server == b.url
            assert len(keys) == 2 and keys[0] == keys[1], keys  # A's attempt, then B's
            assert once.id == taken[0], (once, taken)  # B answered the query A made
            on_b.cancel(endless.id)
            poll.join(timeout=120)
            assert [q.state for q in answered] == ["cancelled"], answered
            assert both.server == b.url  # and it stays with the node that answered
        # It runs once, after the cancelled query, and succeeds: one such query in the store.
        assert on_b.wait(once.id, timeout=120).state == "success"
        assert next(on_b.rows(once.id)) == ["once"]
        with b.store() as store:
            made = store.statements.list_page(
                session_id=session_id, window=Window(limit=1000)
            ).items
        assert [q.id for q in made if q.code == ONCE] == [once.id]
