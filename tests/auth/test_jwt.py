from __future__ import annotations

import base64
import hashlib
import hmac
import json
import logging
import os
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, HTTPServer
from pathlib import Path
from typing import Any

import jwt as pyjwt
import pytest

from sparkgate.auth.jwt import JwtAuthenticator
from sparkgate.auth.principal import Identity
from sparkgate.errors import ConfigurationError
from sparkgate.settings import Settings
from sparkgate_dev import free_port
from sparkgate_dev.jwt import JwtIssuer

MakeAuth = Callable[..., JwtAuthenticator]


class FakeClock:
    def __init__(self) -> None:
        self.now = time.time()

    def __call__(self) -> float:
        return self.now

    def advance(self, seconds: float) -> None:
        self.now += seconds


@pytest.fixture(scope="module")
def issuer() -> JwtIssuer:
    return JwtIssuer(kid="key-1")


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock()


@pytest.fixture
def jwks_path(tmp_path: Path, issuer: JwtIssuer) -> Path:
    return issuer.write_jwks(tmp_path / "jwks.json")


@pytest.fixture
def make_auth(tmp_path: Path, jwks_path: Path, clock: FakeClock) -> MakeAuth:
    def make(**overrides: Any) -> JwtAuthenticator:
        values: dict[str, Any] = {"auth_jwt_jwks": str(jwks_path), **overrides}
        settings = Settings(home=tmp_path, auth="jwt", **values)
        return JwtAuthenticator(settings, clock=clock)

    return make


def _b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def _hand_made(header: dict[str, Any], payload: dict[str, Any], secret: bytes | None) -> str:
    """A token built without PyJWT, which refuses to make the forgeries below."""
    signing_input = f"{_b64(json.dumps(header).encode())}.{_b64(json.dumps(payload).encode())}"
    if secret is None:
        return f"{signing_input}."
    signature = hmac.new(secret, signing_input.encode(), hashlib.sha256).digest()
    return f"{signing_input}.{_b64(signature)}"


# -- valid tokens and claims ---------------------------------------------------------------------


def test_valid_token_gives_identity_with_groups(
    make_auth: MakeAuth, issuer: JwtIssuer, clock: FakeClock
) -> None:
    token = issuer.token("alice", groups=["analysts", "admins"], now=clock.now)
    assert make_auth().verify_bearer(token) == Identity(
        "alice", groups=frozenset({"analysts", "admins"}), via="jwt"
    )


@pytest.mark.parametrize("groups", ["analysts", ["analysts", 7], {"analysts": 1}, None])
def test_groups_that_are_not_a_list_of_strings_are_ignored(
    make_auth: MakeAuth, issuer: JwtIssuer, clock: FakeClock, groups: object
) -> None:
    payload = {"sub": "alice", "exp": int(clock.now + 300), "groups": groups}
    token = pyjwt.encode(payload, issuer.private_key, algorithm="RS256", headers={"kid": "key-1"})
    assert make_auth().verify_bearer(token) == Identity("alice", via="jwt")


def test_token_without_kid_uses_the_only_key(
    make_auth: MakeAuth, issuer: JwtIssuer, clock: FakeClock
) -> None:
    token = issuer.token("alice", include_kid=False, now=clock.now)
    assert pyjwt.get_unverified_header(token).get("kid") is None
    assert make_auth().verify_bearer(token) == Identity("alice", via="jwt")


def test_token_without_kid_is_refused_when_the_jwks_has_several_keys(
    make_auth: MakeAuth, issuer: JwtIssuer, clock: FakeClock, jwks_path: Path
) -> None:
    issuer.write_jwks(jwks_path, JwtIssuer(kid="key-2"))
    assert make_auth().verify_bearer(issuer.token("alice", include_kid=False)) is None


def test_custom_user_claim(make_auth: MakeAuth, issuer: JwtIssuer, clock: FakeClock) -> None:
    auth = make_auth(auth_jwt_user_claim="preferred_username")
    token = issuer.token("0b1c-uuid", preferred_username="alice", now=clock.now)
    assert auth.verify_bearer(token) == Identity("alice", via="jwt")
    assert auth.verify_bearer(issuer.token("0b1c-uuid", now=clock.now)) is None
    empty = issuer.token("0b1c-uuid", preferred_username="", now=clock.now)
    assert auth.verify_bearer(empty) is None
    not_a_string = issuer.token("0b1c-uuid", preferred_username=["alice"], now=clock.now)
    assert auth.verify_bearer(not_a_string) is None


def test_exp_is_required(make_auth: MakeAuth, issuer: JwtIssuer, clock: FakeClock) -> None:
    assert make_auth().verify_bearer(issuer.token("alice", exp=None, now=clock.now)) is None


@pytest.mark.parametrize("exp", ["soon", True, float("nan")])
def test_exp_must_be_a_finite_number(
    make_auth: MakeAuth, issuer: JwtIssuer, clock: FakeClock, exp: object
) -> None:
    assert make_auth().verify_bearer(issuer.token("alice", exp=exp, now=clock.now)) is None


# -- time ------------------------------------------------------------------------------------------


def test_expired_beyond_leeway_is_refused(
    make_auth: MakeAuth, issuer: JwtIssuer, clock: FakeClock
) -> None:
    token = issuer.token("alice", expires_in=60, now=clock.now)
    clock.advance(60 + 31)
    assert make_auth().verify_bearer(token) is None


def test_expired_within_leeway_is_accepted(
    make_auth: MakeAuth, issuer: JwtIssuer, clock: FakeClock
) -> None:
    token = issuer.token("alice", expires_in=60, now=clock.now)
    auth = make_auth()
    clock.advance(60 + 29)
    assert auth.verify_bearer(token) == Identity("alice", via="jwt")
    assert make_auth(auth_jwt_leeway=0).verify_bearer(token) is None


def test_not_before_in_the_future_is_refused(
    make_auth: MakeAuth, issuer: JwtIssuer, clock: FakeClock
) -> None:
    auth = make_auth()
    later = issuer.token("alice", not_before=clock.now + 120, now=clock.now)
    assert auth.verify_bearer(later) is None
    clock.advance(100)  # within the leeway now
    assert auth.verify_bearer(later) == Identity("alice", via="jwt")


def test_issued_in_the_future_is_refused(
    make_auth: MakeAuth, issuer: JwtIssuer, clock: FakeClock
) -> None:
    assert make_auth().verify_bearer(issuer.token("alice", now=clock.now + 600)) is None


# -- forgeries -------------------------------------------------------------------------------------


def test_wrong_signature_same_kid_is_refused(
    make_auth: MakeAuth, issuer: JwtIssuer, clock: FakeClock
) -> None:
    forged = issuer.forged("alice", now=clock.now)
    assert pyjwt.get_unverified_header(forged)["kid"] == issuer.kid
    assert make_auth().verify_bearer(forged) is None


def test_tampered_payload_is_refused(
    make_auth: MakeAuth, issuer: JwtIssuer, clock: FakeClock
) -> None:
    header, _, signature = issuer.token("alice", now=clock.now).split(".")
    payload = _b64(json.dumps({"sub": "root", "exp": clock.now + 300}).encode())
    assert make_auth().verify_bearer(f"{header}.{payload}.{signature}") is None


@pytest.mark.parametrize("with_alg", [True, False], ids=["jwk-alg", "jwk-no-alg"])
def test_alg_none_and_hs256_confusion_are_refused(
    make_auth: MakeAuth, issuer: JwtIssuer, clock: FakeClock, jwks_path: Path, with_alg: bool
) -> None:
    jwk = issuer.jwk()
    if not with_alg:
        del jwk["alg"]
    jwks_path.write_text(json.dumps({"keys": [jwk]}))
    auth = make_auth()
    payload = {"sub": "alice", "exp": clock.now + 300}
    for alg in ("none", "None", "NONE"):
        assert (
            auth.verify_bearer(_hand_made({"alg": alg, "kid": issuer.kid}, payload, None)) is None
        )
    hs256 = {"alg": "HS256", "typ": "JWT", "kid": issuer.kid}
    assert auth.verify_bearer(_hand_made(hs256, payload, issuer.public_pem())) is None
    jwk_secret = json.dumps(jwk).encode()
    assert auth.verify_bearer(_hand_made(hs256, payload, jwk_secret)) is None
    # The key itself is fine: a real token with the same claims verifies.
    assert auth.verify_bearer(issuer.token("alice", now=clock.now)) is not None


def test_algorithm_must_fit_the_key(
    make_auth: MakeAuth, issuer: JwtIssuer, clock: FakeClock, jwks_path: Path
) -> None:
    payload = {"sub": "alice", "exp": int(clock.now + 300)}
    ps256 = pyjwt.encode(payload, issuer.private_key, algorithm="PS256", headers={"kid": "key-1"})
    # The JWK says RS256: a PS256 token is refused, though the key could verify it.
    assert make_auth().verify_bearer(ps256) is None
    jwk = issuer.jwk()
    del jwk["alg"]
    jwks_path.write_text(json.dumps({"keys": [jwk]}))
    assert make_auth().verify_bearer(ps256) == Identity("alice", via="jwt")
    es256 = _hand_made({"alg": "ES256", "kid": "key-1"}, payload, b"x")
    assert make_auth().verify_bearer(es256) is None


def test_symmetric_keys_in_the_jwks_are_never_used(tmp_path: Path, clock: FakeClock) -> None:
    path = tmp_path / "oct.json"
    secret = b"a shared secret of thirty-two bytes!"
    path.write_text(json.dumps({"keys": [{"kty": "oct", "kid": "s", "k": _b64(secret)}]}))
    settings = Settings(home=tmp_path, auth="jwt", auth_jwt_jwks=str(path))
    with pytest.raises(ConfigurationError, match="no asymmetric signing key"):
        JwtAuthenticator(settings, clock=clock)


# -- issuer and audience ---------------------------------------------------------------------------


def test_issuer_and_audience_mismatch_refused_match_accepted(
    make_auth: MakeAuth, issuer: JwtIssuer, clock: FakeClock
) -> None:
    auth = make_auth(auth_jwt_issuer="https://idp.example", auth_jwt_audience="sparkgate")

    def token(**kwargs: Any) -> str:
        return issuer.token("alice", now=clock.now, **kwargs)

    good = {"issuer": "https://idp.example", "audience": "sparkgate"}
    assert auth.verify_bearer(token(**good)) == Identity("alice", via="jwt")
    assert auth.verify_bearer(token(**{**good, "audience": ["other", "sparkgate"]})) is not None
    assert auth.verify_bearer(token(**{**good, "issuer": "https://evil.example"})) is None
    assert auth.verify_bearer(token(**{**good, "audience": "other"})) is None
    assert auth.verify_bearer(token(audience="sparkgate")) is None  # no iss
    assert auth.verify_bearer(token(issuer="https://idp.example")) is None  # no aud


def test_audience_is_not_checked_when_not_configured(
    make_auth: MakeAuth, issuer: JwtIssuer, clock: FakeClock
) -> None:
    token = issuer.token("alice", audience="anything", issuer="https://idp", now=clock.now)
    assert make_auth().verify_bearer(token) == Identity("alice", via="jwt")


# -- not a JWT at all ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "token", ["sgp_abc", "", "a.b", "a.b.c.d", "not a token", "abc.d€f.ghi", "e30.e30.e30", "a.b.c"]
)
def test_non_jwt_and_garbage_give_none(make_auth: MakeAuth, token: str) -> None:
    assert make_auth().verify_bearer(token) is None


def test_refusal_reason_is_logged_at_debug(
    make_auth: MakeAuth, issuer: JwtIssuer, clock: FakeClock, caplog: pytest.LogCaptureFixture
) -> None:
    token = issuer.token("alice", expires_in=-3600, now=clock.now)
    with caplog.at_level(logging.DEBUG, logger="sparkgate.auth"):
        assert make_auth().verify_bearer(token) is None
    assert any(
        record.name == "sparkgate.auth" and "expired" in record.getMessage()
        for record in caplog.records
    )


# -- the JWKS file ---------------------------------------------------------------------------------


def test_key_rotation_in_the_file_needs_no_restart(
    make_auth: MakeAuth, issuer: JwtIssuer, clock: FakeClock, jwks_path: Path
) -> None:
    auth = make_auth()
    old = issuer.token("alice", now=clock.now)
    assert auth.verify_bearer(old) is not None
    rotated = JwtIssuer(kid="key-2")
    rotated.write_jwks(jwks_path)
    assert auth.verify_bearer(rotated.token("bob", now=clock.now)) == Identity("bob", via="jwt")
    assert auth.verify_bearer(old) is None  # key-1 is gone


def test_rewrite_keeping_mtime_and_size_is_found_on_an_unknown_kid(
    make_auth: MakeAuth, issuer: JwtIssuer, clock: FakeClock, jwks_path: Path
) -> None:
    auth = make_auth()
    before = os.stat(jwks_path)
    rotated = JwtIssuer(kid="key-9")  # same length of kid, same size of key
    rotated.write_jwks(jwks_path)
    os.utime(jwks_path, ns=(before.st_atime_ns, before.st_mtime_ns))
    assert os.stat(jwks_path).st_size == before.st_size
    assert auth.verify_bearer(rotated.token("bob", now=clock.now)) == Identity("bob", via="jwt")


def test_missing_jwks_setting(tmp_path: Path) -> None:
    with pytest.raises(ConfigurationError, match="SPARKGATE_AUTH_JWT_JWKS"):
        JwtAuthenticator(Settings(home=tmp_path, auth="jwt"))


def test_missing_jwks_file(make_auth: MakeAuth, tmp_path: Path) -> None:
    with pytest.raises(ConfigurationError, match="does not exist"):
        make_auth(auth_jwt_jwks=str(tmp_path / "nope.json"))


def test_jwks_file_removed_later_is_an_outage_not_a_refusal(
    make_auth: MakeAuth, issuer: JwtIssuer, clock: FakeClock, jwks_path: Path
) -> None:
    auth = make_auth()
    jwks_path.unlink()
    with pytest.raises(ConfigurationError, match="does not exist"):
        auth.verify_bearer(issuer.token("alice", now=clock.now))
    assert auth.verify_bearer("sgp_abc") is None  # not a JWT: the JWKS is not even looked at


@pytest.mark.parametrize(
    ("content", "message"),
    [
        ("{not json", "not valid JSON"),
        ("[]", "not a JSON Web Key Set"),
        ('{"keys": []}', "no asymmetric signing key"),
    ],
)
def test_bad_jwks_file(make_auth: MakeAuth, tmp_path: Path, content: str, message: str) -> None:
    path = tmp_path / "bad.json"
    path.write_text(content)
    with pytest.raises(ConfigurationError, match=message) as caught:
        make_auth(auth_jwt_jwks=str(path))
    assert "\n" not in str(caught.value)


@pytest.mark.parametrize(
    "url", ["http://idp.example/jwks.json", "ftp://127.0.0.1/jwks.json", "https:///jwks"]
)
def test_insecure_jwks_urls_are_refused(make_auth: MakeAuth, url: str) -> None:
    with pytest.raises(ConfigurationError, match="https://"):
        make_auth(auth_jwt_jwks=url)


# -- a JWKS URL ------------------------------------------------------------------------------------


@dataclass
class JwksServer:
    url: str
    body: bytes = b""
    status: int = 200
    requests: list[str] = field(default_factory=list)

    def serve(self, issuer: JwtIssuer, *others: JwtIssuer) -> None:
        self.body = json.dumps(issuer.jwks(*others)).encode()


@pytest.fixture
def jwks_server() -> Iterator[JwksServer]:
    port = free_port()
    server_state = JwksServer(url=f"http://127.0.0.1:{port}/jwks.json")

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            server_state.requests.append(self.path)
            self.send_response(server_state.status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(server_state.body)))
            self.end_headers()
            self.wfile.write(server_state.body)

        def log_message(self, format: str, *args: Any) -> None:
            pass

    httpd = HTTPServer(("127.0.0.1", port), Handler)
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    try:
        yield server_state
    finally:
        httpd.shutdown()
        httpd.server_close()
        thread.join(timeout=10)


def test_url_jwks_fetched_once_and_refreshed_on_unknown_kid(
    make_auth: MakeAuth, issuer: JwtIssuer, clock: FakeClock, jwks_server: JwksServer
) -> None:
    jwks_server.serve(issuer)
    auth = make_auth(auth_jwt_jwks=jwks_server.url)
    assert jwks_server.requests == []  # fetched on first use, not at start-up
    for _ in range(3):
        assert auth.verify_bearer(issuer.token("alice", now=clock.now)) is not None
    assert len(jwks_server.requests) == 1

    rotated = JwtIssuer(kid="key-2")
    jwks_server.serve(issuer, rotated)
    clock.advance(11)
    assert auth.verify_bearer(rotated.token("bob", now=clock.now)) == Identity("bob", via="jwt")
    assert len(jwks_server.requests) == 2

    # Unknown kids right after a fetch do not hammer the provider.
    for kid in ("x", "y", "z"):
        assert auth.verify_bearer(rotated.token("bob", kid=kid, now=clock.now)) is None
    assert len(jwks_server.requests) == 2
    clock.advance(11)
    assert auth.verify_bearer(rotated.token("bob", kid="x", now=clock.now)) is None
    assert len(jwks_server.requests) == 3


def test_url_jwks_refetched_after_an_hour(
    make_auth: MakeAuth, issuer: JwtIssuer, clock: FakeClock, jwks_server: JwksServer
) -> None:
    jwks_server.serve(issuer)
    auth = make_auth(auth_jwt_jwks=jwks_server.url)
    assert auth.verify_bearer(issuer.token("alice", now=clock.now)) is not None
    jwks_server.serve(JwtIssuer(kid="key-2"))  # key-1 revoked
    clock.advance(3601)
    assert auth.verify_bearer(issuer.token("alice", now=clock.now)) is None
    assert len(jwks_server.requests) == 2


def test_url_jwks_outage(
    make_auth: MakeAuth, issuer: JwtIssuer, clock: FakeClock, jwks_server: JwksServer
) -> None:
    auth = make_auth(auth_jwt_jwks=jwks_server.url)
    token = issuer.token("alice", now=clock.now)
    jwks_server.status = 500
    with pytest.raises(ConfigurationError, match="HTTP 500"):
        auth.verify_bearer(token)
    jwks_server.status = 200
    jwks_server.body = b"<html>"
    with pytest.raises(ConfigurationError, match="HTTP 500"):  # not retried within 10 s
        auth.verify_bearer(token)
    assert len(jwks_server.requests) == 1
    clock.advance(11)
    with pytest.raises(ConfigurationError, match="not valid JSON"):
        auth.verify_bearer(token)

    # Once keys are held, a failed refresh keeps them.
    jwks_server.serve(issuer)
    clock.advance(11)
    assert auth.verify_bearer(token) is not None
    jwks_server.status = 503
    clock.advance(3601)
    token = issuer.token("alice", now=clock.now)
    assert auth.verify_bearer(token) is not None


def test_url_jwks_unreachable(make_auth: MakeAuth, issuer: JwtIssuer) -> None:
    auth = make_auth(auth_jwt_jwks=f"http://localhost:{free_port()}/jwks.json")
    with pytest.raises(ConfigurationError, match="cannot be fetched"):
        auth.verify_bearer(issuer.token("alice"))
