"""The HTTP doors (``/v1``, Livy, the dashboard) against what a fuzzer and hostile numbers send,
with authentication on, as a plain user: a clear 4xx naming the field, never a 500, nothing
stored that breaks a later read, and answers that match the OpenAPI schema.

The short Schemathesis run here has a fixed seed (CI must not be a lottery); ``bench/fuzz.py``
runs it long with fresh seeds.
"""

from __future__ import annotations

import json
import time
import typing
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from fastapi import FastAPI
from fastapi.dependencies.models import Dependant
from fastapi.dependencies.utils import get_flat_params
from fastapi.routing import APIRoute

from sparkgate.server import create_app
from sparkgate.settings import Settings
from sparkgate.store.schema import tokens
from sparkgate_dev import (
    FUZZ_CHECKS,
    ServerProcess,
    fuzz_api,
    kill_engines,
    local_test_settings,
    user_files,
)
from tests.concurrency import race

pytestmark = pytest.mark.spark

PASSWORDS = {"fuzz": "fuzz-pass-1", "carol": "carol-pass-1", "erin": "erin-pass-1"}
# A plain user, held to one session: batch sessions start an engine each, and a fuzzer makes
# many.
ACCESS = "admins: [carol]\nlimits: {sessions_per_user: 1, running_queries_per_user: 2}\n"
CI_SEED = 20261125


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory, metastore_uri: str) -> Iterator[ServerProcess]:
    home = tmp_path_factory.mktemp("contract-home")
    users = user_files(home, PASSWORDS, ACCESS)
    settings = local_test_settings(
        home,
        metastore_uri=metastore_uri,
        auth="password",
        **users,
        warm_engines=0,
    )
    server = ServerProcess(settings).start()
    try:
        yield server
    finally:
        server.stop()
        kill_engines(settings)


def _client(server: ServerProcess, user: str) -> httpx.Client:
    return httpx.Client(base_url=server.url, auth=(user, PASSWORDS[user]), timeout=60)


def _served_routes(app: FastAPI) -> Iterator[tuple[str, set[str], Dependant]]:
    """(path, methods, dependant) of every route the app serves, from its router. FastAPI 0.16x
    keeps an included router whole (its routes are reached through effective contexts);
    earlier versions copied each route into the app as an APIRoute."""
    for route in app.routes:
        if isinstance(route, APIRoute):
            yield route.path, set(route.methods or ()), route.dependant
        contexts = getattr(route, "effective_route_contexts", None)
        if contexts is not None:
            for context in contexts():
                yield context.path, set(context.methods or ()), context.dependant


def _numeric_parameters() -> list[tuple[str, str, str, str, type]]:
    """(method, path, where, name, type) of every int or float parameter of every route the
    app serves, the hidden ones (the dashboard) included."""
    app = create_app(Settings(home=Path("/nonexistent")))
    found: list[tuple[str, str, str, str, type]] = []
    for path, methods, dependant in _served_routes(app):
        for param in get_flat_params(dependant):
            where = "path" if "{" + param.name in path else "query"
            annotation = param.field_info.annotation
            kinds = {annotation, *typing.get_args(annotation)}
            kind = int if int in kinds else float if float in kinds else None
            if kind is None or param.field_info.__class__.__name__ not in ("Path", "Query"):
                continue
            found.extend((method, path, where, param.alias, kind) for method in sorted(methods))
    return found


def _concrete(path: str, target: str | None, value: str) -> str:
    """The path with ``target`` set to ``value`` and every other parameter to a plain one."""

    def fill(name: str) -> str:
        if name == target:
            return value
        return "1" if name.endswith("_id") else "x"

    return "/".join(
        fill(part[1:-1].split(":")[0]) if part.startswith("{") else part for part in path.split("/")
    )


# What a client can write that no store column or clock holds.
_HOSTILE = {int: ["9223372036854775808", "-9223372036854775809", "1" + "0" * 40], float: ["1e400"]}


def test_every_number_out_of_range_answers_4xx_naming_the_field(server: ServerProcess) -> None:
    parameters = _numeric_parameters()
    # Ids in /v1, Livy and the dashboard; offsets, limits, waits, Livy's from and size.
    assert len(parameters) > 40, parameters
    assert {name for *_, name, _ in parameters} >= {
        "query_id", "session_id", "batch_id", "statement_id", "token_id", "run_id",
        "engine_id", "deployment_id", "offset", "limit", "wait", "from", "size", "since",
    }  # fmt: skip
    with _client(server, "fuzz") as fuzz:
        for method, path, where, name, kind in parameters:
            for value in _HOSTILE[kind]:
                if where == "path":
                    url, params = _concrete(path, name, value), {}
                else:
                    url, params = _concrete(path, None, ""), {name: value}
                headers = {"HX-Request": "true"} if path.startswith("/ui") else {}
                answer = fuzz.request(method, url, params=params, headers=headers)
                what = (method, url, params, answer.status_code, answer.text[:300])
                livy = path.startswith(("/sessions", "/batches"))
                assert answer.status_code == (400 if livy else 422), what
                assert name in answer.text, what
    assert "Traceback" not in server.log_path.read_text(), server.log()


def test_a_body_id_beyond_64_bits_answers_422(server: ServerProcess) -> None:
    with _client(server, "fuzz") as fuzz:
        answer = fuzz.post("/v1/queries", json={"query": "SELECT 1", "session_id": 2**63})
        assert answer.status_code == 422, answer.text
        assert answer.json()["error"]["fields"][0]["field"] == "session_id"
        assert fuzz.get("/v1/queries").json()["queries"] == []  # nothing was queued


def test_body_numbers_are_json_numbers(server: ServerProcess) -> None:
    """Found by the fuzzer: {"expires_in": true} was taken as 1 and made a one-second token."""
    query = '{{"query": "SELECT 1", "session_id": {}}}'
    cases = [
        ("/v1/tokens", "expires_in", '{{"expires_in": {}}}', ("true", "false", '"60"')),
        ("/v1/queries", "session_id", query, ("true", '"1"', "1.5")),
    ]
    with _client(server, "fuzz") as fuzz:
        before = fuzz.get("/v1/tokens").json()["tokens"]
        for path, field, body, values in cases:
            for value in values:
                answer = fuzz.post(
                    path, content=body.format(value), headers={"content-type": "application/json"}
                )
                assert answer.status_code == 422, (path, value, answer.text)
                assert answer.json()["error"]["fields"][0]["field"] == field, answer.text
        assert fuzz.get("/v1/tokens").json()["tokens"] == before  # none was stored
        assert fuzz.get("/v1/queries").json()["queries"] == []  # nothing was queued


def test_token_lifetimes_a_clock_cannot_hold_are_refused_and_the_list_stays_readable(
    server: ServerProcess,
) -> None:
    with _client(server, "fuzz") as fuzz, _client(server, "carol") as carol:
        before = fuzz.get("/v1/tokens").json()["tokens"]
        for value in ("1e12", "1e308", "Infinity", "NaN", "-1", "0", "315360001"):
            answer = fuzz.post(
                "/v1/tokens",
                content=f'{{"expires_in": {value}}}',
                headers={"content-type": "application/json"},
            )
            assert answer.status_code == 422, (value, answer.text)
            assert "expires_in" in answer.text, (value, answer.text)
        assert fuzz.get("/v1/tokens").json()["tokens"] == before  # none was stored
        made = fuzz.post("/v1/tokens", json={"name": "decade", "expires_in": 315360000})
        assert made.status_code == 201, made.text
        # A row an older release stored, expiring in year 33715: every list stays readable.
        now = time.time()
        with server.store() as store, store.db.begin() as conn:
            conn.execute(
                tokens.insert().values(
                    owner="fuzz",
                    name="legacy",
                    secret_hash="0" * 64,
                    prefix="sgp_legacy",
                    created_at=now,
                    expires_at=now + 1e12,
                )
            )
        for who in (fuzz, carol):
            listed = who.get("/v1/tokens")
            assert listed.status_code == 200, listed.text
            legacy = [t for t in listed.json()["tokens"] if t["name"] == "legacy"]
            assert legacy and legacy[0]["expires_at"].startswith("9999-12-31"), legacy
        legacy_id = next(
            t["id"] for t in fuzz.get("/v1/tokens").json()["tokens"] if t["name"] == "legacy"
        )
        assert fuzz.delete(f"/v1/tokens/{legacy_id}").status_code == 200


def test_an_idempotency_key_answers_a_repeat_refuses_another_body_and_is_per_user(
    server: ServerProcess,
) -> None:
    """Submits with an Idempotency-Key: a repeat answers the first (201, the same id, marked
    replayed), another body is 422, another user's same key is theirs, a bad key is 400."""

    def key() -> dict[str, str]:
        return {"Idempotency-Key": str(uuid.uuid4())}

    made: list[tuple[httpx.Client, str]] = []
    with _client(server, "carol") as carol, _client(server, "erin") as erin:
        try:
            session_key = key()
            session = carol.post("/v1/sessions", json={"name": "once"}, headers=session_key)
            assert session.status_code == 201, session.text
            assert "idempotent-replayed" not in session.headers
            session_id = session.json()["id"]
            made.append((carol, f"/v1/sessions/{session_id}"))
            again = carol.post(
                "/v1/sessions", json={"name": "once", "kind": "interactive"}, headers=session_key
            )
            assert again.status_code == 201 and again.json()["id"] == session_id, again.text
            assert again.headers["idempotent-replayed"] == "true"
            renamed = carol.post("/v1/sessions", json={"name": "twice"}, headers=session_key)
            assert renamed.status_code == 422, renamed.text
            assert renamed.json()["error"]["code"] == "IDEMPOTENCY_KEY_REUSED"

            query_key, body = key(), {"query": "SELECT 1", "session_id": session_id}
            first = carol.post("/v1/queries", json=body, headers=query_key)
            assert first.status_code == 201, first.text
            made.append((carol, f"/v1/queries/{first.json()['id']}/cancel"))
            repeat = carol.post("/v1/queries", json=body, headers=query_key)
            assert repeat.status_code == 201 and repeat.headers["idempotent-replayed"] == "true"
            assert repeat.json()["id"] == first.json()["id"], repeat.text
            assert set(repeat.json()) == {
                "id",
                "session_id",
                "state",
                "resource_group",
                "queue_position",
                "tags",
            }
            changed = carol.post(
                "/v1/queries", json={**body, "query": "SELECT 2"}, headers=query_key
            )
            assert changed.status_code == 422, changed.text
            assert changed.json()["error"]["code"] == "IDEMPOTENCY_KEY_REUSED"

            # Keys are per user: erin's same key and body make erin's own query.
            shared_key, one_off = key(), {"query": "SELECT 'per user'"}
            carols = carol.post("/v1/queries", json=one_off, headers=shared_key)
            erins = erin.post("/v1/queries", json=one_off, headers=shared_key)
            assert carols.status_code == erins.status_code == 201, (carols.text, erins.text)
            made.append((carol, f"/v1/queries/{carols.json()['id']}/cancel"))
            made.append((erin, f"/v1/queries/{erins.json()['id']}/cancel"))
            assert erins.json()["id"] != carols.json()["id"]
            assert "idempotent-replayed" not in erins.headers
            assert erin.get(f"/v1/queries/{carols.json()['id']}").status_code == 404

        finally:
            for client, path in reversed(made):
                if path.endswith("/cancel"):
                    client.post(path)  # 409 if it ended meanwhile: either way it is over
                else:
                    client.delete(path)


def test_racing_requests_with_one_key_make_one_query(server: ServerProcess) -> None:
    """Four requests with one key at the same instant (a client retrying over several
    connections): the store's key lets one make the query, and the others answer it."""
    key = {"Idempotency-Key": str(uuid.uuid4())}
    body = {"query": "SELECT 'raced'"}
    clients = [_client(server, "carol") for _ in range(4)]
    try:
        answers = race(
            *[lambda c=c: c.post("/v1/queries", json=body, headers=key) for c in clients]
        )
        assert [a.status_code for a in answers] == [201] * 4, [a.text for a in answers]
        assert len({a.json()["id"] for a in answers}) == 1, [a.text for a in answers]
        replayed = sorted("idempotent-replayed" in a.headers for a in answers)
        assert replayed == [False, True, True, True]
        listed = clients[0].get("/v1/queries", params={"owner": "carol", "limit": 1000})
        assert [q["query"] for q in listed.json()["queries"]].count("SELECT 'raced'") == 1
        clients[0].post(f"/v1/queries/{answers[0].json()['id']}/cancel")
    finally:
        for client in clients:
            client.close()


def test_a_bad_idempotency_key_answers_400_and_makes_nothing(server: ServerProcess) -> None:
    listed: dict[str, str | int] = {"owner": "carol", "limit": 1000}

    def ids(client: httpx.Client, kind: str) -> list[int]:
        # Ids, not whole records: an earlier test's query may still be moving to its end.
        return [r["id"] for r in client.get(f"/v1/{kind}", params=listed).json()[kind]]

    with _client(server, "carol") as carol:
        before, sessions = ids(carol, "queries"), ids(carol, "sessions")
        bad_keys = [b"", b"x" * 256, b"tab\tinside", "ключ".encode()]
        for bad in bad_keys:
            for path, body in (("/v1/queries", {"query": "SELECT 1"}), ("/v1/sessions", {})):
                answer = carol.post(path, json=body, headers={b"Idempotency-Key": bad})
                assert answer.status_code == 400, (bad, answer.text)
                error = answer.json()["error"]
                assert error["code"] == "IDEMPOTENCY_KEY_INVALID", error
                assert error["field"] == "Idempotency-Key", error
        assert ids(carol, "queries") == before
        assert ids(carol, "sessions") == sessions


def test_schemathesis_finds_no_server_error_and_no_schema_mismatch(
    server: ServerProcess, tmp_path: Path
) -> None:
    run = fuzz_api(
        server.url,
        ("fuzz", PASSWORDS["fuzz"]),
        tmp_path,
        checks=FUZZ_CHECKS,
        max_examples=8,
        seed=CI_SEED,
    )
    print(run.output[-20000:])
    assert run.cases > 200, run.output[-3000:]
    assert run.passed, json.dumps(run.failures)
    # The server took it all: healthy, answering, and no traceback in its log.
    with _client(server, "fuzz") as fuzz:
        assert fuzz.get("/healthz").status_code == 200
        me: dict[str, Any] = fuzz.get("/v1/whoami").json()
        assert me["user"] == "fuzz"
    assert "Traceback" not in server.log_path.read_text(), server.log()
