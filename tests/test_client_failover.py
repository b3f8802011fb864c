"""The client over several nodes: which failures send a request on to the next node (refused
connections, 503s, reads and keyed submits that got no answer) and which do not (another POST
that may have been taken), the node it then stays with, and patience when every node
failed."""

from __future__ import annotations

from collections.abc import Callable

import httpx
import pytest

from sparkgate import credentials
from sparkgate.client import Client, ClientError, servers_of
from sparkgate.schemas.health import Health
from sparkgate.schemas.queries import Query, Session
from tests.answers import example

A, B = "http://a.example:8998", "http://b.example:8998"
# A query as the server answers it (submits and reads alike).
QUERY = example(Query, id=7, session_id=1, state="waiting")
Answer = Callable[[httpx.Request], httpx.Response]


pytestmark = pytest.mark.usefixtures("client_env")


def nodes(seen: list[str], **answers: Answer) -> httpx.MockTransport:
    """A transport where each host answers as given (``a=...``, ``b=...``); hosts record."""

    def handle(request: httpx.Request) -> httpx.Response:
        host = request.url.host.split(".")[0]
        seen.append(f"{host} {request.method} {request.url.path}")
        return answers[host](request)

    return httpx.MockTransport(handle)


def ok(request: httpx.Request) -> httpx.Response:
    """A node that answers: the session made, or the query."""
    if request.url.path == "/v1/sessions":
        return httpx.Response(201, json=example(Session, id=1))
    return httpx.Response(200, json=QUERY)


def refused(request: httpx.Request) -> httpx.Response:
    raise httpx.ConnectError("connection refused", request=request)


def died(request: httpx.Request) -> httpx.Response:
    raise httpx.RemoteProtocolError("server disconnected without a response", request=request)


def store_out(request: httpx.Request) -> httpx.Response:
    body = {"error": {"code": "STORE_UNAVAILABLE", "message": "the store cannot be reached"}}
    return httpx.Response(503, json=body, headers={"Retry-After": "0"})


def test_a_refused_connection_sends_any_request_on_and_the_client_stays() -> None:
    seen: list[str] = []
    with Client([A, B], transport=nodes(seen, a=refused, b=ok)) as sg:
        assert (
            sg.submit("SELECT 1", session_id=1).model_dump(mode="json") == QUERY
        )  # never sent: safe to send again
        assert sg.server == B
        sg.query(7)
    assert seen == ["a POST /v1/queries", "b POST /v1/queries", "b GET /v1/queries/7"]


def test_a_submit_whose_node_died_before_answering_goes_on_with_its_key() -> None:
    seen: list[str] = []
    keys: list[str] = []

    def keyed(answer: Answer) -> Answer:
        def handle(request: httpx.Request) -> httpx.Response:
            keys.append(request.headers["idempotency-key"])
            return answer(request)

        return handle

    with Client(f"{A},{B}", transport=nodes(seen, a=keyed(died), b=keyed(ok))) as sg:
        # A may have taken it: B gets the same key, and answers what A made if it did.
        assert sg.submit("SELECT 1", session_id=1).model_dump(mode="json") == QUERY
        assert sg.server == B
        assert len(keys) == 2 and keys[0] == keys[1]
        sg.server = A
        sg.create_session()  # a session the same way
        assert len(keys) == 4 and keys[2] == keys[3] != keys[0]  # a fresh key per submit
        sg.server = A
        sg.submit("SELECT 1", idempotency_key="mine-1")  # the caller's own key
        assert keys[4:] == ["mine-1", "mine-1"]
    assert [s.split()[0] for s in seen] == ["a", "b"] * 3


def test_a_post_without_a_key_is_not_sent_twice_but_reads_and_cancels_are() -> None:
    seen: list[str] = []
    with Client(f"{A},{B}", transport=nodes(seen, a=died, b=ok)) as sg:
        with pytest.raises(ClientError) as caught:
            sg.run_job("nightly")  # it may have been taken: not sent twice
        assert caught.value.status == 0 and caught.value.code == "UNREACHABLE"
        assert sg.server == A
        # Reads and cancels may be sent twice: they go on to B.
        assert sg.query(7, wait=5).model_dump(mode="json") == QUERY
        sg.cancel(7)
    assert seen == [
        "a POST /v1/jobs/nightly/runs",
        "a GET /v1/queries/7",
        "b GET /v1/queries/7",
        "b POST /v1/queries/7/cancel",
    ]


def test_a_503_goes_on_to_the_next_node_and_every_node_failing_is_the_last_error() -> None:
    seen: list[str] = []
    with Client([A, B], transport=nodes(seen, a=store_out, b=ok)) as sg:
        assert (
            sg.submit("SELECT 1", session_id=1).model_dump(mode="json") == QUERY
        )  # a 503 did nothing
    with Client([A, B], transport=nodes(seen, a=store_out, b=store_out)) as sg:
        with pytest.raises(ClientError) as caught:
            sg.health()
        assert caught.value.status == 503 and caught.value.code == "STORE_UNAVAILABLE"
    with Client([A, B], transport=nodes(seen, a=refused, b=refused)) as sg:
        with pytest.raises(ClientError) as caught:
            sg.health()
        assert caught.value.status == 0 and B in caught.value.message


def test_other_errors_are_answers_not_failovers() -> None:
    seen: list[str] = []

    def missing(request: httpx.Request) -> httpx.Response:
        return httpx.Response(404, json={"error": {"code": "NOT_FOUND", "message": "no"}})

    with Client([A, B], transport=nodes(seen, a=missing, b=ok)) as sg:
        with pytest.raises(ClientError) as caught:
            sg.query(7)
        assert caught.value.status == 404
    assert seen == ["a GET /v1/queries/7"]


def test_patience_rides_out_every_node_failing_for_a_while() -> None:
    seen: list[str] = []
    rounds = iter([store_out, store_out, ok])  # A: out, out, then back

    def recovering(request: httpx.Request) -> httpx.Response:
        return next(rounds)(request)

    with Client([A, B], transport=nodes(seen, a=recovering, b=refused), patience=30) as sg:
        assert sg.submit("SELECT 1", session_id=1).model_dump(mode="json") == QUERY
        assert sg.server == A
    assert [s.split()[0] for s in seen] == ["a", "b", "a", "b", "a"]


def test_server_lists_and_their_stored_token() -> None:
    assert servers_of(f" {A}/ ,{B}") == [A, B]
    assert servers_of([A]) == [A]
    with pytest.raises(ValueError):
        servers_of(" , ")
    credentials.save(f"{A},{B}", "alice", "sgp_stored", 3)  # sparkgate login --server A,B
    seen: list[httpx.Request] = []

    def record(request: httpx.Request) -> httpx.Response:
        seen.append(request)
        return httpx.Response(200, json=example(Health))

    with Client(f"{A},{B}", transport=httpx.MockTransport(record)) as sg:
        sg.health()
    assert seen[0].headers["authorization"] == "Bearer sgp_stored"
