"""Which credentials the Client sends, and how: Bearer for tokens, Basic for passwords."""

from __future__ import annotations

import base64
import json
from collections.abc import Callable
from typing import Any

import httpx
import pytest

from sparkgate import credentials
from sparkgate.client import Client, ClientError
from sparkgate.schemas.users import AuditList, NewToken, Token, TokenList, Whoami
from tests.answers import example

SERVER = "http://sg.example:8998"
Seen = list[httpx.Request]


pytestmark = pytest.mark.usefixtures("client_env")


def recording(
    seen: Seen, answer: Callable[[httpx.Request], httpx.Response] | None = None
) -> httpx.MockTransport:
    def handle(request: httpx.Request) -> httpx.Response:
        seen.append(request)
        if answer is not None:
            return answer(request)
        return httpx.Response(200, json=example(Whoami, user="alice", admin=False))

    return httpx.MockTransport(handle)


def authorization(**kwargs: Any) -> str | None:
    seen: Seen = []
    with Client(SERVER, transport=recording(seen), **kwargs) as sg:
        sg.whoami()
    header: str | None = seen[0].headers.get("authorization")
    return header


def basic(user: str, password: str) -> str:
    return "Basic " + base64.b64encode(f"{user}:{password}".encode()).decode()


def test_a_token_is_sent_as_bearer() -> None:
    assert authorization(token="sgp_abc") == "Bearer sgp_abc"


def test_a_user_and_password_are_sent_as_basic() -> None:
    assert authorization(user="alice", password="s3cret:x") == basic("alice", "s3cret:x")


def test_no_credentials_sends_no_authorization() -> None:
    assert authorization() is None


def test_arguments_beat_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SPARKGATE_TOKEN", "sgp_env")
    assert authorization(user="bob", password="pw") == basic("bob", "pw")
    assert authorization(token="sgp_arg") == "Bearer sgp_arg"


def test_env_token_beats_env_user_and_stored(monkeypatch: pytest.MonkeyPatch) -> None:
    credentials.save(SERVER, "carol", "sgp_stored", "7")
    monkeypatch.setenv("SPARKGATE_USER", "bob")
    monkeypatch.setenv("SPARKGATE_PASSWORD", "pw")
    assert authorization() == basic("bob", "pw")
    monkeypatch.setenv("SPARKGATE_TOKEN", "sgp_env")
    assert authorization() == "Bearer sgp_env"


def test_env_user_without_password_falls_back_to_stored(monkeypatch: pytest.MonkeyPatch) -> None:
    credentials.save(SERVER + "/", "carol", "sgp_stored", 7)
    monkeypatch.setenv("SPARKGATE_USER", "bob")
    seen: Seen = []
    with Client(SERVER, transport=recording(seen)) as sg:
        sg.whoami()
        assert sg.auth_user == "carol" and (sg.auth_source or "").startswith("stored")
    assert seen[0].headers["authorization"] == "Bearer sgp_stored"


def test_stored_token_is_per_server() -> None:
    credentials.save("http://other:8998", "carol", "sgp_other", "1")
    assert authorization() is None


def test_user_argument_takes_the_password_from_the_environment(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("SPARKGATE_PASSWORD", "envpw")
    assert authorization(user="dave") == basic("dave", "envpw")


def test_conflicting_or_partial_arguments_are_refused() -> None:
    with pytest.raises(ValueError, match="not both"):
        Client(SERVER, token="t", user="u", password="p")
    with pytest.raises(ValueError, match="needs password"):
        Client(SERVER, user="u")


def test_token_and_audit_calls() -> None:
    seen: Seen = []

    def answer(request: httpx.Request) -> httpx.Response:
        if request.method == "POST":
            return httpx.Response(201, json=example(NewToken, id=1, token="sgp_new"))
        if request.url.path == "/v1/tokens":
            return httpx.Response(200, json=example(TokenList))
        if request.url.path == "/v1/audit":
            return httpx.Response(200, json=example(AuditList, total=0))
        revoked = example(Token, id=1, revoked_at="2026-01-01T00:00:00.000Z")
        return httpx.Response(200, json=revoked)

    with Client(SERVER, token="sgp_x", transport=recording(seen, answer)) as sg:
        assert sg.create_token("ci", 3600).token == "sgp_new"
        sg.tokens()
        sg.tokens(owner="bob")
        sg.revoke_token("t1")
        sg.audit(outcome="denied", limit=5)
    create, mine, bobs, revoke, audit = seen
    assert json.loads(create.content) == {"name": "ci", "expires_in": 3600}
    assert "owner" not in mine.url.params and bobs.url.params["owner"] == "bob"
    assert (revoke.method, revoke.url.path) == ("DELETE", "/v1/tokens/t1")
    assert dict(audit.url.params) == {"limit": "5", "outcome": "denied"}
    assert all(r.headers["authorization"] == "Bearer sgp_x" for r in seen)


def test_unauthenticated_is_a_client_error() -> None:
    def refuse(request: httpx.Request) -> httpx.Response:
        body = {"error": {"code": "UNAUTHENTICATED", "message": "Bad credentials."}}
        return httpx.Response(401, json=body)

    with (
        Client(SERVER, token="sgp_bad", transport=recording([], refuse)) as sg,
        pytest.raises(ClientError) as caught,
    ):
        sg.whoami()
    assert caught.value.status == 401 and caught.value.code == "UNAUTHENTICATED"
