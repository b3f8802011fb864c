"""What each Client method puts on the wire (method, path, query string, JSON body, timeout,
credentials) and how error answers come back: pinned call by call, so that the one request
path every method goes through stays exactly the requests the server expects."""

from __future__ import annotations

import json
import typing
from collections.abc import Callable
from typing import Any

import httpx
import pytest
from pydantic import BaseModel

from sparkgate.client import Client, ClientError
from sparkgate.schemas.queries import ResultPage, Session
from sparkgate.states import SessionState, StreamJobState
from tests.answers import example

A, B = "http://a.example:8998", "http://b.example:8998"
ANSWER = example(Session)
Call = Callable[[Client], Any]
# Where a poller waits for a state, the answer is in it (the others wait for any state).
_ENDED = {"wait": "success", "wait_deployment": "succeeded", "wait_job_run": "succeeded"}


def answer_of(name: str) -> dict[str, Any]:
    """What the server answers the call ``name`` (a ``CALLS`` entry): an example of the model
    its method says it returns (a submit: the query as queued)."""
    method = name
    while not hasattr(Client, method):  # "sessions_one_off": the method "sessions"
        method = method.rsplit("_", 1)[0]
    model = typing.get_type_hints(getattr(Client, method))["return"]
    found: type[BaseModel] = typing.get_args(model)[0] if typing.get_args(model) else model
    return example(found, **({"state": _ENDED[method]} if method in _ENDED else {}))


pytestmark = pytest.mark.usefixtures("client_env")


def timeouts(seconds: float) -> dict[str, float]:
    return {"connect": seconds, "read": seconds, "write": seconds, "pool": seconds}


# (call, method, path with its query string, JSON body or None, timeout or None: the client's
# own, 10 s here). Every public method that sends a request (rows() has its own test), with
# its optional arguments set where they change the request.
CALLS: list[tuple[str, Call, str, str, Any, float | None]] = [
    ("create_session", lambda sg: sg.create_session(), "POST", "/v1/sessions",
     {"kind": "interactive", "conf": {}}, None),
    ("create_session_named", lambda sg: sg.create_session("batch", name="n", conf={"a": "1"}),
     "POST", "/v1/sessions", {"kind": "batch", "conf": {"a": "1"}, "name": "n"}, None),
    ("session", lambda sg: sg.session(3), "GET", "/v1/sessions/3", None, None),
    ("sessions", lambda sg: sg.sessions(), "GET", "/v1/sessions?limit=100", None, None),
    ("sessions_filtered",
     lambda sg: sg.sessions(state=["idle", "busy"], offset=5, limit=2, total=True),
     "GET", "/v1/sessions?limit=2&offset=5&total=true&state=idle&state=busy", None, None),
    ("sessions_one_off", lambda sg: sg.sessions(one_off=True), "GET",
     "/v1/sessions?limit=100&one_off=true", None, None),
    ("kill_session", lambda sg: sg.kill_session(3), "DELETE", "/v1/sessions/3", None, None),
    ("wait_session", lambda sg: sg.wait_session(3, set(SessionState)), "GET", "/v1/sessions/3",
     None, None),
    ("submit", lambda sg: sg.submit("SELECT 1"), "POST", "/v1/queries",
     {"query": "SELECT 1"}, None),
    ("submit_all",
     lambda sg: sg.submit("SELECT 1", session_id=2, isolation="engine", conf={"k": "v"},
                          wait=5, limit=7),
     "POST", "/v1/queries?wait=5&limit=7",
     {"query": "SELECT 1", "session_id": 2, "isolation": "engine", "conf": {"k": "v"}}, 35),
    ("query", lambda sg: sg.query(4), "GET", "/v1/queries/4", None, 10),
    ("query_wait", lambda sg: sg.query(4, wait=2), "GET", "/v1/queries/4?wait=2", None, 32),
    ("wait", lambda sg: sg.wait(4, step=3), "GET", "/v1/queries/4?wait=3", None, 33),
    ("queries", lambda sg: sg.queries(), "GET", "/v1/queries?limit=100", None, None),
    ("queries_filtered",
     lambda sg: sg.queries(session_id=2, state=["failed"], after="c1", total=False),
     "GET", "/v1/queries?limit=100&after=c1&total=false&session_id=2&state=failed", None, None),
    ("result", lambda sg: sg.result(4), "GET", "/v1/queries/4/result?offset=0&limit=1000",
     None, None),
    ("cancel", lambda sg: sg.cancel(4), "POST", "/v1/queries/4/cancel", None, None),
    ("create_stream", lambda sg: sg.create_stream("s", "SELECT 1"), "POST", "/v1/streams",
     {"name": "s", "sql": "SELECT 1", "conf": {}}, None),
    ("create_stream_all",
     lambda sg: sg.create_stream("s", "SELECT 1", conf={"a": "b"}, checkpoint_root="/c"),
     "POST", "/v1/streams",
     {"name": "s", "sql": "SELECT 1", "conf": {"a": "b"}, "checkpoint_root": "/c"}, None),
    ("streams", lambda sg: sg.streams(), "GET", "/v1/streams?limit=100", None, None),
    ("streams_filtered", lambda sg: sg.streams(state=["running"], limit=3, after="x"),
     "GET", "/v1/streams?limit=3&after=x&state=running", None, None),
    ("stream", lambda sg: sg.stream("s"), "GET", "/v1/streams/s", None, None),
    ("stop_stream", lambda sg: sg.stop_stream("s"), "POST", "/v1/streams/s/stop", None, None),
    ("start_stream", lambda sg: sg.start_stream("s"), "POST", "/v1/streams/s/start", None,
     None),
    ("delete_stream", lambda sg: sg.delete_stream("s"), "DELETE", "/v1/streams/s", None, None),
    ("delete_stream_keep", lambda sg: sg.delete_stream("s", keep_checkpoints=True), "DELETE",
     "/v1/streams/s?keep_checkpoints=true", None, None),
    ("wait_stream", lambda sg: sg.wait_stream("s", set(StreamJobState)), "GET", "/v1/streams/s",
     None, None),
    ("session_streams", lambda sg: sg.session_streams(3), "GET", "/v1/sessions/3/streams",
     None, None),
    ("engines", lambda sg: sg.engines(), "GET", "/v1/engines?all=false", None, None),
    ("engines_all", lambda sg: sg.engines(all=True), "GET", "/v1/engines?all=true", None,
     None),
    ("stop_engine", lambda sg: sg.stop_engine(6), "POST", "/v1/engines/6/stop", None, None),
    ("deploy", lambda sg: sg.deploy([{"path": "p", "content": "c"}]), "POST",
     "/v1/deployments",
     {"manifests": [{"path": "p", "content": "c"}], "template": None, "definitions": [],
      "prune": False, "plan_only": False, "wait": 0.0}, 30),
    ("deploy_all",
     lambda sg: sg.deploy([], template={"t": "1"}, definitions=[{"d": "1"}], prune=True,
                          plan_only=True, wait=60),
     "POST", "/v1/deployments",
     {"manifests": [], "template": {"t": "1"}, "definitions": [{"d": "1"}], "prune": True,
      "plan_only": True, "wait": 60}, 90),
    ("deployment", lambda sg: sg.deployment(8), "GET", "/v1/deployments/8", None, None),
    ("deployments", lambda sg: sg.deployments(), "GET", "/v1/deployments?limit=20", None,
     None),
    ("deployments_after", lambda sg: sg.deployments(limit=1, after="z"), "GET",
     "/v1/deployments?limit=1&after=z", None, None),
    ("wait_deployment", lambda sg: sg.wait_deployment(8), "GET", "/v1/deployments/8", None,
     None),
    ("jobs", lambda sg: sg.jobs(), "GET", "/v1/jobs", None, None),
    ("jobs_removed", lambda sg: sg.jobs(removed=True), "GET", "/v1/jobs?removed=true", None,
     None),
    ("job", lambda sg: sg.job("j"), "GET", "/v1/jobs/j", None, None),
    ("job_history", lambda sg: sg.job_history("j"), "GET", "/v1/jobs/j/history", None, None),
    ("run_job", lambda sg: sg.run_job("j"), "POST", "/v1/jobs/j/runs", None, None),
    ("job_run", lambda sg: sg.job_run("j", 2), "GET", "/v1/jobs/j/runs/2", None, None),
    ("cancel_job_run", lambda sg: sg.cancel_job_run("j", 2), "POST", "/v1/jobs/j/runs/2/cancel",
     None, None),
    ("wait_job_run", lambda sg: sg.wait_job_run("j", 2), "GET", "/v1/jobs/j/runs/2", None,
     None),
    ("whoami", lambda sg: sg.whoami(), "GET", "/v1/whoami", None, None),
    ("create_token", lambda sg: sg.create_token(), "POST", "/v1/tokens",
     {"name": None, "expires_in": None}, None),
    ("tokens", lambda sg: sg.tokens(), "GET", "/v1/tokens", None, None),
    ("tokens_owner", lambda sg: sg.tokens("bob"), "GET", "/v1/tokens?owner=bob", None, None),
    ("revoke_token", lambda sg: sg.revoke_token(9), "DELETE", "/v1/tokens/9", None, None),
    ("audit", lambda sg: sg.audit(), "GET", "/v1/audit?limit=100", None, None),
    ("audit_all",
     lambda sg: sg.audit("u", "query.", "denied", offset=10, limit=5, since=1.5, after="k"),
     "GET", "/v1/audit?limit=5&offset=10&after=k&user=u&action=query.&outcome=denied&since=1.5",
     None, None),
    ("health", lambda sg: sg.health(), "GET", "/healthz", None, None),
]  # fmt: skip


@pytest.mark.parametrize(
    ("name", "call", "method", "path", "body", "timeout"),
    [pytest.param(name, *rest, id=name) for name, *rest in CALLS],
)
def test_each_call_sends_its_request(
    name: str, call: Call, method: str, path: str, body: Any, timeout: float | None
) -> None:
    seen: list[httpx.Request] = []
    sent = answer_of(name)

    def answer(request: httpx.Request) -> httpx.Response:
        seen.append(request)
        return httpx.Response(200, json=sent)

    with Client(A, token="sgp_t", timeout=10, transport=httpx.MockTransport(answer)) as sg:
        result = call(sg)
    assert result.model_dump(mode="json", by_alias=True) == sent
    [request] = seen
    assert (request.method, request.url.raw_path.decode()) == (method, path)
    assert (json.loads(request.content) if request.content else None) == body
    assert request.extensions["timeout"] == timeouts(10 if timeout is None else timeout)
    assert request.headers["authorization"] == "Bearer sgp_t"


def test_rows_pages_through_the_result() -> None:
    pages = iter(
        [
            example(ResultPage, rows=[[1], [2]], total=3, limit=2),
            example(ResultPage, rows=[[3]], offset=2, total=3, limit=2),
        ]
    )
    seen: list[str] = []

    def answer(request: httpx.Request) -> httpx.Response:
        seen.append(request.url.raw_path.decode())
        return httpx.Response(200, json=next(pages))

    with Client(A, transport=httpx.MockTransport(answer)) as sg:
        assert list(sg.rows(4, page=2)) == [[1], [2], [3]]
    assert seen == [
        "/v1/queries/4/result?offset=0&limit=2",
        "/v1/queries/4/result?offset=2&limit=2",
    ]


def failing(status: int, **kwargs: Any) -> tuple[list[str], httpx.MockTransport]:
    seen: list[str] = []

    def answer(request: httpx.Request) -> httpx.Response:
        seen.append(f"{request.url.host.split('.')[0]} {request.method} {request.url.path}")
        return httpx.Response(status, **kwargs)

    return seen, httpx.MockTransport(answer)


@pytest.mark.parametrize(
    ("call", "status"),
    [
        pytest.param(lambda sg: sg.session(9), 404, id="get-404"),
        pytest.param(lambda sg: sg.submit("SELEC"), 400, id="post-400"),
        pytest.param(lambda sg: sg.stop_stream("s"), 409, id="post-409"),
        pytest.param(lambda sg: sg.revoke_token(1), 403, id="delete-403"),
        pytest.param(lambda sg: sg.deploy([]), 422, id="deploy-422"),
        pytest.param(lambda sg: sg.query(1), 500, id="get-500"),
    ],
)
def test_an_error_answer_is_a_client_error_with_its_code_and_message(
    call: Call, status: int
) -> None:
    body = {"error": {"code": "SOME_CODE", "message": "Something is wrong."}}
    seen, transport = failing(status, json=body)
    with Client([A, B], transport=transport) as sg, pytest.raises(ClientError) as caught:
        call(sg)
    error = caught.value
    assert type(error) is ClientError
    assert (error.status, error.code, error.message) == (status, "SOME_CODE", "Something is wrong.")
    assert str(error) == "[SOME_CODE] Something is wrong."
    assert error.body == body
    assert len(seen) == 1  # an answer, not a node that cannot answer: B is not asked


def test_an_error_without_an_error_object_names_the_status_and_keeps_the_text() -> None:
    _, transport = failing(500, text="Internal Server Error")
    with Client(A, transport=transport) as sg, pytest.raises(ClientError) as caught:
        sg.health()
    assert (caught.value.status, caught.value.code) == (500, "HTTP_500")
    assert caught.value.message == "Internal Server Error" and caught.value.body is None
    assert str(caught.value) == "[HTTP_500] Internal Server Error"

    _, transport = failing(404, json={"detail": "Not Found"})
    with Client(A, transport=transport) as sg, pytest.raises(ClientError) as caught:
        sg.job("j")
    assert (caught.value.code, caught.value.message) == ("HTTP_404", '{"detail":"Not Found"}')
    assert caught.value.body == {"detail": "Not Found"}


def test_a_503_on_every_node_is_the_last_nodes_client_error() -> None:
    body = {"error": {"code": "STORE_UNAVAILABLE", "message": "the store cannot be reached"}}
    seen, transport = failing(503, json=body, headers={"Retry-After": "0"})
    with Client([A, B], transport=transport) as sg, pytest.raises(ClientError) as caught:
        sg.create_session()
    assert type(caught.value) is ClientError
    assert (caught.value.status, caught.value.code) == (503, "STORE_UNAVAILABLE")
    assert seen == ["a POST /v1/sessions", "b POST /v1/sessions"]


def test_a_gateway_error_goes_on_for_a_read_and_a_cancel_but_not_for_other_posts() -> None:
    body = {"error": {"code": "BAD_GATEWAY", "message": "upstream"}}
    cases: list[tuple[Call, str, bool]] = [
        (lambda sg: sg.job("j"), "GET /v1/jobs/j", True),
        (lambda sg: sg.cancel(4), "POST /v1/queries/4/cancel", True),
        (lambda sg: sg.cancel_job_run("j", 2), "POST /v1/jobs/j/runs/2/cancel", False),
        (lambda sg: sg.run_job("j"), "POST /v1/jobs/j/runs", False),
    ]
    for call, path, resent in cases:
        seen, transport = failing(502, json=body)
        with Client([A, B], transport=transport) as sg, pytest.raises(ClientError) as caught:
            call(sg)
        assert (caught.value.status, caught.value.code) == (502, "BAD_GATEWAY")
        assert seen == ([f"a {path}", f"b {path}"] if resent else [f"a {path}"])


def test_no_answer_is_unreachable_and_only_safe_calls_go_on() -> None:
    seen: list[str] = []

    def died(request: httpx.Request) -> httpx.Response:
        host = request.url.host.split(".")[0]
        seen.append(f"{host} {request.method} {request.url.path}")
        if host == "a":
            raise httpx.RemoteProtocolError("server disconnected", request=request)
        return httpx.Response(200, json=ANSWER)

    with Client([A, B], transport=httpx.MockTransport(died)) as sg:
        with pytest.raises(ClientError) as caught:
            sg.start_stream("s")
        assert (caught.value.status, caught.value.code) == (0, "UNREACHABLE")
        assert caught.value.message == f"cannot reach {A}: server disconnected"
        assert sg.kill_session(3).model_dump(mode="json") == ANSWER  # DELETE: safe again
        assert sg.server == B
    assert seen == [
        "a POST /v1/streams/s/start",
        "a DELETE /v1/sessions/3",
        "b DELETE /v1/sessions/3",
    ]
