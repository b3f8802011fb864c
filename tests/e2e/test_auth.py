"""Users and access, end to end: a real server with authentication on (password file, LDAP
against a real slapd when it can run here, JWT with a key the test makes, personal access
tokens), real engines, and real clients (httpx, the livy package).

One server for the module; users:
- alice (password file): every right but admin
- bob (password file, group analysts): sql only
- carol (password file): admin
- airflow (password file): impersonator
- dave (LDAP; analysts through the directory's group): sql only
- erin (JWT, groups from the token): every right but admin
"""

from __future__ import annotations

import contextlib
import re
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from fastapi.routing import iter_route_contexts
from livy.models import SessionKind as LivyKind
from livy.session import LivySession
from starlette.routing import Mount

from sparkgate.auth.passwords import PasswordFile
from sparkgate.settings import Settings
from sparkgate.store.schema import stream_jobs, stream_queries
from sparkgate.stream_spec import QuerySpec
from sparkgate_dev import (
    ServerProcess,
    eventually,
    kill_engines,
    local_test_settings,
    user_files,
)
from sparkgate_dev.jwt import JwtIssuer
from sparkgate_dev.slapd import LDAP_USERS, SlapdServer, slapd_unavailable

pytestmark = [pytest.mark.spark, pytest.mark.timeout(900)]

PASSWORDS = {"alice": "alice-secret", "bob": "bob-secret", "carol": "carol-secret", "airflow": "af"}
ACCESS = """
admins: [carol]
groups: {analysts: [bob]}
impersonators: [airflow]
rules:
  - {groups: [analysts], allow: [sql]}
  - {users: ["*"], allow: [sql, code, streams, jobs]}
limits: {sessions_per_user: 10, running_queries_per_user: 20}
"""


class Env:
    def __init__(self, server: ServerProcess, issuer: JwtIssuer, ldap: bool, home: Path) -> None:
        self.server = server
        self.url = server.url
        self.issuer = issuer
        self.ldap = ldap
        self.home = home
        self.access_file = home / "access.yaml"
        self.password_file = home / "passwords"

    def client(self, user: str | None = None, *, token: str | None = None) -> httpx.Client:
        headers = {}
        auth: tuple[str, str] | None = None
        if token is not None:
            headers["Authorization"] = f"Bearer {token}"
        elif user is not None:
            auth = (user, PASSWORDS.get(user) or LDAP_USERS[user])
        return httpx.Client(base_url=self.url, auth=auth, headers=headers, timeout=60)


@pytest.fixture(scope="module")
def env(tmp_path_factory: pytest.TempPathFactory, metastore_uri: str) -> Iterator[Env]:
    home = tmp_path_factory.mktemp("auth-home")
    users = user_files(home, PASSWORDS, ACCESS)
    issuer = JwtIssuer()
    issuer.write_jwks(home / "jwks.json")
    methods = ["password", "jwt"]
    stack = contextlib.ExitStack()
    ldap_settings: dict[str, Any] = {}
    if slapd_unavailable() is None:
        slapd = stack.enter_context(SlapdServer())
        methods.insert(1, "ldap")
        ldap_settings = {
            "auth_ldap_url": slapd.url,
            "auth_ldap_user_dn": slapd.user_dn_template,
            "auth_ldap_search_base": slapd.search_base,
        }
    settings = local_test_settings(
        home,
        metastore_uri=metastore_uri,
        auth=",".join(methods),
        **users,
        auth_jwt_jwks=str(home / "jwks.json"),
        warm_engines=0,
        shared_engine=False,
        **ldap_settings,
    )
    server = ServerProcess(settings).start()
    try:
        yield Env(server, issuer, "ldap" in methods, home)
    finally:
        server.stop()
        kill_engines(settings)
        stack.close()


def _wait_idle(client: httpx.Client, session_id: int) -> dict[str, Any]:
    def idle() -> dict[str, Any] | None:
        session: dict[str, Any] = client.get(f"/v1/sessions/{session_id}").json()
        assert session["state"] not in {"error", "dead", "killed"}, session
        return session if session["state"] == "idle" else None

    return eventually(idle, timeout=240, what=f"session {session_id} idle")


def _run(client: httpx.Client, query: str, session_id: int | None = None) -> dict[str, Any]:
    submitted = client.post("/v1/queries", json={"query": query, "session_id": session_id})
    assert submitted.status_code == 201, submitted.text
    query_id = submitted.json()["id"]
    deadline = time.monotonic() + 240
    while time.monotonic() < deadline:
        answer: dict[str, Any] = client.get(f"/v1/queries/{query_id}", params={"wait": 10}).json()
        if answer["state"] in {"success", "failed", "cancelled"}:
            return answer
    raise AssertionError(f"query {query_id} did not finish")


@pytest.fixture(scope="module")
def alice_objects(env: Env) -> dict[str, Any]:
    """Things alice owns, for other users to fail to see: an interactive session with a
    finished query, a batch, a token, a stream job, a deployment, a saved query."""
    with env.client("alice") as alice:
        session = alice.post("/v1/sessions", json={"kind": "interactive"}).json()
        _wait_idle(alice, session["id"])
        query = _run(alice, "SELECT 1 AS one", session["id"])
        assert query["state"] == "success", query
        batch_query = _run(alice, "SELECT 2 AS two")
        token = alice.post("/v1/tokens", json={"name": "laptop"}).json()
        manifest = "name: nightly\nmode: batch\ntarget-table: auth_e2e.nightly\nsql: SELECT 1\n"
        deployment = alice.post(
            "/v1/deployments",
            json={"manifests": [{"path": "n.yaml", "content": manifest}], "plan_only": True},
        )
        assert deployment.status_code == 200, deployment.text
        saved_query = alice.post(
            "/v1/saved-queries", json={"name": "alice's own", "sql": "SELECT 1"}
        )
        assert saved_query.status_code == 201, saved_query.text
    # A stopped stream job of alice's, written straight to the store: starting a real one
    # would cost a streaming engine, and only its ownership is under test here.
    now = time.time()
    with env.server.store() as store, store.db.begin() as conn:
        conn.execute(
            stream_jobs.insert().values(
                name="alices_stream",
                state="stopped",
                owner="alice",
                sql="CREATE STREAM r USING rate; SAVE STREAM r TO noop",
                conf={},
                revision=1,
                failures=0,
                restarts=0,
                version=1,
                created_at=now,
                updated_at=now,
            )
        )
    # And a stopped streaming query of her session, as SAVE STREAM would have left it.
    with env.server.store() as store:
        saved = store.stream_queries.add_for_session(
            session["id"],
            "alices_query",
            now=now,
            spec=QuerySpec(name="alices_query", view="v", format="noop"),
            checkpoint=None,
        )
        with store.db.begin() as conn:
            stopped = stream_queries.update().where(stream_queries.c.id == saved.id)
            conn.execute(stopped.values(state="stopped", finished_at=now))
    return {
        "session": session["id"],
        "query": query["id"],
        "session_stream": saved.id,
        "batch": batch_query["session_id"],
        "token": token["id"],
        "deployment": deployment.json().get("id"),
        "stream": "alices_stream",
        "saved": saved_query.json()["id"],
    }


# -- the route table: a new route cannot forget authentication or ownership ----------------


# Deliberately open: liveness, the API's description, the dashboard's sign-in and its style.
_PUBLIC = {
    "/healthz",
    "/openapi.json",
    "/docs",
    "/ui/login",
    "/ui/logout",
    "/ui/highlight.css",
}


def _routes() -> list[tuple[str, str]]:
    """Every (method, path) the app serves, from its router: the described ones and the
    hidden ones (the dashboard's pages, the docs), whatever FastAPI does inside."""
    from sparkgate.server import create_app

    app = create_app(Settings(home=Path("/nonexistent")))
    found: list[tuple[str, str]] = []
    for context in iter_route_contexts(list(app.routes)):
        if isinstance(context.original_route, Mount):  # static files: public by design
            continue
        path = context.path_format
        assert path is not None, context
        found.extend((m, path) for m in sorted(context.methods or ()) if m != "HEAD")
    return found


def test_every_route_but_the_public_ones_answers_401_without_credentials(env: Env) -> None:
    """The route walk, from the app's router: it holds the routes the OpenAPI schema hides
    (HiveServer2's /cliservice, the dashboard, /metrics, the engines' UI proxy). Every call of
    /cliservice itself, and of the binary port, is walked in test_hive2.py; every Spark
    Connect method in test_connect.py."""
    routes = _routes()
    paths = {path for _, path in routes}
    hidden = {
        "/cliservice",
        "/metrics",
        "/ui/queries",
        "/ui/streams",
        "/v1/engines/{engine_id}/ui",
        "/v1/engines/{engine_id}/ui/{path}",
    }
    assert len(routes) > 80 and hidden <= paths, sorted(hidden - paths)
    # The dashboard's own scripts send HX-Request: their 401 is an answer, not a redirect.
    with httpx.Client(base_url=env.url, timeout=30, headers={"HX-Request": "true"}) as anonymous:
        for method, path in routes:
            concrete = re.sub(r"\{[^}]+\}", "1", path)
            answer = anonymous.request(method, concrete, json={} if method == "POST" else None)
            if path in _PUBLIC:
                # Open, but not empty-handed: a sign-in without credentials is refused.
                assert answer.status_code != 401 or path == "/ui/login", (method, path)
                continue
            assert answer.status_code == 401, (method, path, answer.status_code, answer.text)
            if not path.startswith("/ui"):
                assert "Basic" in answer.headers["WWW-Authenticate"]
                assert "Bearer" in answer.headers["WWW-Authenticate"]


# Team-wide (jobs from manifests) or not owned (engines, the caller's own identity): not part
# of the ownership walk; their access is by right (tested below).
_NOT_OWNED = (
    "/v1/jobs",
    "/v1/engines",
    "/v1/whoami",
    "/v1/audit",
    "/v1/tables",  # shared catalog objects, not owned ids: a table's grants are its owner's
    "/ui/tables",  # the catalog's pages: the same objects
    "/version",
    "/metrics",
    "/ui/jobs",
    "/ui/engines",
)


def _fill(path: str, ids: dict[str, Any]) -> str:
    values = {
        "session_id": ids["session"],
        "batch_id": ids["batch"],
        "query_id": ids["query"],
        "statement_id": 0,
        "token_id": ids["token"],
        "deployment_id": ids["deployment"],
        "name": ids["stream"],
        "stream_id": ids["session_stream"],
        "saved_id": ids["saved"],
    }
    return re.sub(r"\{([^}:]+)(:[^}]*)?\}", lambda m: str(values[m.group(1)]), path)


def test_another_users_ids_answer_404_on_every_route(
    env: Env, alice_objects: dict[str, Any]
) -> None:
    checked = 0
    with env.client("alice") as alice, env.client(token=env.issuer.token("erin")) as erin:
        for method, path in _routes():
            if "{" not in path or path.startswith(_NOT_OWNED):
                continue
            concrete = _fill(path, alice_objects)
            if method == "DELETE" or path.endswith(("/cancel", "/stop", "/start")):
                body = None
            elif method == "PUT":  # a valid change, so that only ownership can refuse it
                body = {"name": "erin's now"}
            else:
                body = {"code": "1 + 1", "kind": "pyspark"}
            other = erin.request(method, concrete, json=body)
            assert other.status_code == 404, (method, concrete, other.status_code, other.text)
            checked += 1
            if method == "GET":
                # ... while alice herself sees it: the 404 is about ownership, not the id.
                assert alice.get(concrete).status_code == 200, (concrete, alice.get(concrete))
    assert checked >= 30
    # Lists hold only one's own.
    with env.client(token=env.issuer.token("erin")) as erin:
        assert erin.get("/v1/sessions").json()["sessions"] == []
        assert erin.get("/v1/queries").json()["queries"] == []
        assert erin.get("/sessions").json()["sessions"] == []
        assert erin.get("/batches").json()["sessions"] == []
        assert erin.get("/v1/tokens").json()["tokens"] == []
        assert erin.get("/v1/streams").json()["streams"] == []
        assert erin.get("/v1/deployments").json()["deployments"] == []
        assert erin.get("/v1/saved-queries").json()["saved_queries"] == []
    with env.client("carol") as carol:  # an admin sees everyone's, or one owner's
        owners = {s["owner"] for s in carol.get("/v1/sessions").json()["sessions"]}
        assert "alice" in owners
        only = carol.get("/v1/sessions", params={"owner": "nobody"}).json()
        assert only["sessions"] == []
        assert carol.get(f"/v1/queries/{alice_objects['query']}/result").status_code == 200


# -- authentication ---------------------------------------------------------------------------


def test_wrong_password_and_unknown_user_get_the_same_answer(env: Env) -> None:
    with httpx.Client(base_url=env.url, timeout=30) as client:
        wrong = client.get("/v1/whoami", auth=("alice", "not-her-password"))
        unknown = client.get("/v1/whoami", auth=("mallory", "whatever"))
        garbage = client.get("/v1/whoami", headers={"Authorization": "Basic !!!"})
    assert wrong.status_code == unknown.status_code == garbage.status_code == 401
    assert wrong.json() == unknown.json() == garbage.json()
    with env.client("carol") as carol:
        failed = carol.get("/v1/audit", params={"action": "login", "outcome": "failed"}).json()
    claimed = {e["detail"].get("user") for e in failed["events"]}
    assert {"alice", "mallory"} <= claimed
    assert all(e["user"] is None for e in failed["events"])
    assert not any("not-her-password" in str(e) for e in failed["events"])


def test_password_jwt_and_ldap_users_are_who_they_say(env: Env) -> None:
    with env.client("bob") as bob:
        me = bob.get("/v1/whoami").json()
    assert me == {
        "user": "bob",
        "groups": ["analysts"],
        "admin": False,
        "rights": ["sql"],
        "via": "password",
    }
    token = env.issuer.token("erin", groups=["platform"])
    with env.client(token=token) as erin:
        me = erin.get("/v1/whoami").json()
    assert me["user"] == "erin" and me["groups"] == ["platform"] and me["via"] == "jwt"
    assert me["rights"] == ["code", "jobs", "sql", "streams"]
    if not env.ldap:
        pytest.skip(f"LDAP part skipped: {slapd_unavailable()}")
    with env.client("dave") as dave:
        me = dave.get("/v1/whoami").json()
    # dave's group comes from the directory, and the access rules apply to it.
    assert me["user"] == "dave" and "analysts" in me["groups"] and me["via"] == "ldap"
    assert me["rights"] == ["sql"]


def test_expired_or_wrongly_signed_jwts_are_refused(env: Env) -> None:
    expired = env.issuer.token("erin", expires_in=-3600)
    forged = env.issuer.forged("erin")
    other = JwtIssuer(kid="someone-else").token("erin")
    for token in (expired, forged, other, "not.a.jwt"):
        with env.client(token=token) as client:
            assert client.get("/v1/whoami").status_code == 401, token


def test_personal_access_tokens_work_as_bearer_and_as_basic_password(env: Env) -> None:
    with env.client("alice") as alice:
        created = alice.post("/v1/tokens", json={"name": "ci", "expires_in": 3600})
        assert created.status_code == 201, created.text
        token = created.json()
        secret = token["token"]
        assert secret.startswith("sgp_")
        listed = alice.get("/v1/tokens").json()["tokens"]
        assert token["id"] in [t["id"] for t in listed]
        assert all("token" not in t and "secret_hash" not in t for t in listed)
    with env.client(token=secret) as by_token:
        assert by_token.get("/v1/whoami").json()["via"] == "token"
        # A token cannot mint another token.
        assert by_token.post("/v1/tokens", json={}).status_code == 403
    with httpx.Client(base_url=env.url, auth=("alice", secret), timeout=30) as basic:
        assert basic.get("/v1/whoami").json()["user"] == "alice"
    with httpx.Client(base_url=env.url, auth=("bob", secret), timeout=30) as wrong_user:
        assert wrong_user.get("/v1/whoami").status_code == 401
    with env.client("alice") as alice:
        revoked = alice.delete(f"/v1/tokens/{token['id']}")
        assert revoked.status_code == 200 and revoked.json()["revoked_at"] is not None
    with env.client(token=secret) as by_token:
        assert by_token.get("/v1/whoami").status_code == 401
    with env.client("carol") as carol:
        events = carol.get("/v1/audit", params={"user": "alice", "action": "token"}).json()
    actions = [e["action"] for e in events["events"] if e["target"] == f"token:{token['id']}"]
    assert actions == ["token.revoke", "token.create"]


def test_the_password_file_and_the_access_file_are_reread_without_restart(env: Env) -> None:
    with httpx.Client(base_url=env.url, auth=("frank", "frank-pw"), timeout=30) as frank:
        assert frank.get("/v1/whoami").status_code == 401
        PasswordFile(env.password_file).set("frank", "frank-pw")
        assert frank.get("/v1/whoami").json()["user"] == "frank"
        original = env.access_file.read_text()
        try:
            env.access_file.write_text(
                original.replace("groups: {analysts: [bob]}", "groups: {analysts: [bob, frank]}")
            )
            assert frank.get("/v1/whoami").json()["rights"] == ["sql"]
            # A changed password: the old one, verified and cached a moment ago, is refused on
            # the very next request, and the new one works.
            PasswordFile(env.password_file).set("frank", "frank-new")
            assert frank.get("/v1/whoami").status_code == 401
            with httpx.Client(base_url=env.url, auth=("frank", "frank-new"), timeout=30) as new:
                assert new.get("/v1/whoami").json()["user"] == "frank"
                PasswordFile(env.password_file).remove("frank")
                assert new.get("/v1/whoami").status_code == 401  # removed: no cache keeps him
        finally:
            env.access_file.write_text(original)


# -- rights, settings, impersonation ---------------------------------------------------------


def _made(carol: httpx.Client) -> tuple[int, list[int]]:
    """How many sessions there are, and which engines (an admin's view: everyone's)."""
    sessions = carol.get("/v1/sessions", params={"one_off": True}).json()["total"]
    engines = carol.get("/v1/engines", params={"all": True}).json()["engines"]
    return sessions, [e["id"] for e in engines]


def test_a_sql_only_user_cannot_run_code_or_streams_and_nothing_runs(env: Env) -> None:
    with env.client("bob") as bob, env.client("carol") as carol:
        before = _made(carol)
        # No Python session for him (Livy's kinds for Python, or made for him by an
        # impersonator): refused when asked, not at its first statement, and nothing is made.
        for kind in ("pyspark", "python"):
            refused = bob.post("/sessions", json={"kind": kind})
            assert refused.status_code == 403, refused.text
            assert "'code'" in refused.json()["msg"] and "pyspark session" in refused.text
        with env.client("airflow") as airflow:
            proxied = airflow.post("/sessions", json={"kind": "pyspark", "proxyUser": "bob"})
            assert proxied.status_code == 403 and "'code'" in proxied.json()["msg"]
        assert _made(carol) == before
        session = bob.post("/sessions", json={"kind": "sql"})
        assert session.status_code == 201, session.text
        session_id = session.json()["id"]
        eventually(
            lambda: bob.get(f"/sessions/{session_id}/state").json()["state"] == "idle",
            timeout=240,
            what="bob's session idle",
        )
        code = bob.post(
            f"/sessions/{session_id}/statements", json={"code": "1 + 1", "kind": "pyspark"}
        )
        assert code.status_code == 403, code.text
        assert "'code'" in code.json()["msg"]
        stream = bob.post(
            "/v1/queries",
            json={"query": "CREATE STREAM r USING rate", "session_id": session_id},
        )
        assert stream.status_code == 403 and stream.json()["error"]["right"] == "streams"
        job = bob.post("/v1/streams", json={"name": "bobs", "sql": "CREATE STREAM r USING rate"})
        assert job.status_code == 403
        batch = bob.post("/batches", json={"file": "/tmp/x.py"})
        assert batch.status_code == 403
        # Nothing ran: the session has no statements, and no stream job exists.
        assert bob.get(f"/sessions/{session_id}/statements").json()["total_statements"] == 0
        assert bob.get("/v1/streams/bobs").status_code == 404
        # SQL he may run.
        sql = bob.post(
            f"/sessions/{session_id}/statements", json={"code": "SELECT 42", "kind": "sql"}
        )
        assert sql.status_code == 201, sql.text
        bob.delete(f"/sessions/{session_id}")
    with env.client("carol") as carol:
        denied = carol.get("/v1/audit", params={"user": "bob", "outcome": "denied"}).json()
    rights = {e["detail"].get("right") for e in denied["events"]}
    assert {"code", "streams"} <= rights
    refusals = [e for e in denied["events"] if e["action"] == "session.create"]
    assert [e["detail"]["right"] for e in refusals][:3] == ["code"] * 3, refusals


def test_denied_spark_settings_are_refused_in_conf_and_in_set(env: Env) -> None:
    with env.client("alice") as alice:
        before = alice.get("/v1/sessions").json()["total"]
        refused = alice.post(
            "/v1/sessions",
            json={"kind": "interactive", "conf": {"spark.hadoop.fs.s3a.secret.key": "x"}},
        )
        assert refused.status_code == 403, refused.text
        assert refused.json()["error"]["key"] == "spark.hadoop.fs.s3a.secret.key"
        livy = alice.post(
            "/sessions", json={"kind": "sql", "conf": {"spark.driver.extraJavaOptions": "-X"}}
        )
        assert livy.status_code == 403 and "spark.driver.extraJavaOptions" in livy.json()["msg"]
        assert alice.get("/v1/sessions").json()["total"] == before  # nothing was created
        session_id = alice.get("/v1/sessions", params={"state": "idle"}).json()["sessions"][0]["id"]
        set_master = alice.post(
            "/v1/queries",
            json={"query": "SET spark.master=local[8]", "session_id": session_id},
        )
        assert set_master.status_code == 403
        assert set_master.json()["error"]["key"] == "spark.master"
        allowed = _run(alice, "SET spark.sql.shuffle.partitions=3", session_id)
        assert allowed["state"] == "success", allowed
    with env.client("carol") as carol:  # admins may
        assert (
            carol.post("/v1/queries", json={"query": "SET spark.master=local[1]"}).status_code
            == 201
        )


def test_denied_settings_in_manifests_and_stream_job_scripts_are_refused(env: Env) -> None:
    manifest = "name: denied_job\nmode: batch\ntarget-table: auth_e2e.denied\nsql: SELECT 1\n"
    with env.client("alice") as alice:
        deployments = alice.get("/v1/deployments").json()["total"]
        jobs = alice.get("/v1/jobs").json()

        def deploy(text: str) -> httpx.Response:
            body = {"manifests": [{"path": "denied.yaml", "content": text}]}
            return alice.post("/v1/deployments", json=body)

        properties = deploy(manifest + "properties: {spark.driver.extraJavaOptions: -X}\n")
        assert properties.status_code == 403, properties.text
        error = properties.json()["error"]
        assert error["code"] == "SETTING_DENIED"
        assert error["key"] == "spark.driver.extraJavaOptions"
        assert error["where"] == "properties of job denied_job (denied.yaml)"
        # A job's SQL cannot SET at all: sources are definitions (refused, with the line).
        in_sources = deploy(manifest + "sources: ['SET spark.master=local[8]']\n")
        assert in_sources.status_code == 422, in_sources.text
        assert "denied.yaml:5: sources.0: not a definition" in in_sources.text
        assert alice.get("/v1/deployments").json()["total"] == deployments  # nothing deployed
        assert alice.get("/v1/jobs").json() == jobs

        script = "SET spark.master=local[8];\nCREATE STREAM r USING rate;\nSAVE STREAM r TO noop"
        stream = alice.post("/v1/streams", json={"name": "denied_stream", "sql": script})
        assert stream.status_code == 403, stream.text
        error = stream.json()["error"]
        assert (error["key"], error["where"]) == (
            "spark.master",
            "script of stream job denied_stream",
        )
        conf = alice.post(
            "/v1/streams",
            json={
                "name": "denied_stream",
                "sql": "CREATE STREAM r USING rate; SAVE STREAM r TO noop",
                "conf": {"spark.jars.packages": "org.evil:x:1"},
            },
        )
        assert conf.status_code == 403 and conf.json()["error"]["key"] == "spark.jars.packages"
        assert alice.get("/v1/streams/denied_stream").status_code == 404  # nothing made
    with env.client("carol") as carol:
        events = carol.get("/v1/audit", params={"user": "alice", "outcome": "denied"}).json()
    targets = {(e["action"], e["target"]) for e in events["events"]}
    assert ("set spark.driver.extraJavaOptions", "job:denied_job") in targets
    assert ("set spark.master", "stream:denied_stream") in targets
    assert ("set spark.jars.packages", "stream:denied_stream") in targets


def test_a_batch_sql_file_with_a_denied_set_runs_none_of_its_statements(
    env: Env, alice_objects: dict[str, Any]
) -> None:
    """Only the engine reads a batch file, so the engine checks it, before its first
    statement, against the settings denied to its owner when it was submitted."""
    script = env.home / "denied_batch.sql"
    script.write_text(
        "CREATE TABLE denied_batch_marker (x INT) USING parquet;\n"
        "SET spark.sql.shuffle.partitions=3;\n"
        "SET spark.hadoop.fs.defaultFS=file:///elsewhere;\n"
        "SELECT 1\n"
    )
    with env.client("alice") as alice:
        made = alice.post("/batches", json={"file": str(script)})
        assert made.status_code == 201, made.text
        batch_id = made.json()["id"]
        eventually(
            lambda: alice.get(f"/batches/{batch_id}/state").json()["state"] == "dead",
            timeout=240,
            what="the batch ended",
        )
        queries = alice.get("/v1/queries", params={"session_id": batch_id}).json()["queries"]
        assert [q["state"] for q in queries] == ["failed"]
        error = queries[0]["error"]
        assert error["code"] == "SETTING_DENIED", error
        assert error["key"] == "spark.hadoop.fs.defaultFS"
        assert error["where"] == f"{script}, line 3"
        # Its first statement never ran: no table.
        tables = _run(alice, "SHOW TABLES LIKE 'denied_batch_marker'", alice_objects["session"])
        assert tables["state"] == "success" and tables["result"]["row_count"] == 0, tables
    with env.client("carol") as carol:
        events = carol.get(
            "/v1/audit", params={"user": "alice", "action": "set spark.hadoop.fs.defaultFS"}
        ).json()["events"]
    assert [(e["outcome"], e["target"]) for e in events] == [
        ("denied", f"query:{queries[0]['id']}")
    ]


def test_proxy_user_is_honoured_only_for_impersonators(env: Env) -> None:
    with env.client("bob") as bob:
        refused = bob.post("/sessions", json={"kind": "sql", "proxyUser": "alice"})
        assert refused.status_code == 403 and "proxyUser" in refused.json()["msg"]
    with env.client("airflow") as airflow:
        made = airflow.post("/sessions", json={"kind": "sql", "proxyUser": "alice"})
        assert made.status_code == 201, made.text
        session = made.json()
        assert session["owner"] == "alice" and session["proxyUser"] == "alice"
        # The impersonator can follow what it started.
        assert airflow.get(f"/sessions/{session['id']}").status_code == 200
    with env.client("alice") as alice:
        assert alice.get(f"/sessions/{session['id']}").status_code == 200
        alice.delete(f"/sessions/{session['id']}")
    with env.client("carol") as carol:
        events = carol.get("/v1/audit", params={"action": "impersonate"}).json()["events"]
    outcomes = {(e["user"], e["outcome"]) for e in events}
    assert ("airflow", "ok") in outcomes and ("bob", "denied") in outcomes


def test_lists_show_what_an_impersonator_made_for_another_user(env: Env) -> None:
    with env.client("airflow") as airflow:
        made = airflow.post("/sessions", json={"kind": "sql", "proxyUser": "bob"})
        assert made.status_code == 201, made.text
        session_id = made.json()["id"]
        try:
            # Every page of airflow's list, one session a page: keyset paging finds it.
            listed: list[int] = []
            after = None
            while True:
                params: dict[str, Any] = {"limit": 1, **({"after": after} if after else {})}
                page = airflow.get("/v1/sessions", params=params).json()
                assert len(page["sessions"]) <= 1, page
                listed += [s["id"] for s in page["sessions"]]
                after = page.get("next")
                if not after:
                    break
            assert session_id in listed
            livy = airflow.get("/sessions", params={"size": 1000}).json()["sessions"]
            assert session_id in [s["id"] for s in livy]
            with env.client("bob") as bob:
                bobs = bob.get("/v1/sessions", params={"limit": 1000}).json()["sessions"]
                assert session_id in [s["id"] for s in bobs]
            with env.client("alice") as alice:  # neither its owner nor its maker
                alices = alice.get("/v1/sessions", params={"limit": 1000}).json()["sessions"]
                assert session_id not in [s["id"] for s in alices]
                livy = alice.get("/sessions", params={"size": 1000}).json()["sessions"]
                assert session_id not in [s["id"] for s in livy]
                assert alice.get(f"/v1/sessions/{session_id}").status_code == 404
        finally:
            airflow.delete(f"/v1/sessions/{session_id}")


def test_two_users_sessions_never_share_an_engine(env: Env, alice_objects: dict[str, Any]) -> None:
    with env.client("bob") as bob:
        session = bob.post("/v1/sessions", json={"kind": "interactive"}).json()
        bobs = _wait_idle(bob, session["id"])
    with env.client("alice") as alice:
        alices = alice.get(f"/v1/sessions/{alice_objects['session']}").json()
        second = alice.post("/v1/sessions", json={"kind": "interactive"}).json()
        alices_second = _wait_idle(alice, second["id"])
        alice.delete(f"/v1/sessions/{second['id']}")
    assert bobs["engine_id"] != alices["engine_id"]
    assert alices_second["engine_id"] == alices["engine_id"]  # her own share one
    with env.server.store() as store:
        assert store.engines.get(bobs["engine_id"]).share_key == "user:bob"
        assert store.engines.get(alices["engine_id"]).share_key == "user:alice"
    with env.client("bob") as bob:
        bob.delete(f"/v1/sessions/{session['id']}")


def test_the_livy_client_works_with_basic_auth(env: Env) -> None:
    with LivySession.create(
        env.url, auth=("alice", PASSWORDS["alice"]), kind=LivyKind.PYSPARK, echo=False
    ) as session:
        session.run("df = spark.range(5).selectExpr('id * 2 AS twice')")
        frame = session.download("df")
    assert list(frame["twice"]) == [0, 2, 4, 6, 8]
    with env.client("carol") as carol:
        events = carol.get("/v1/audit", params={"user": "alice", "action": "query"}).json()
    assert any(e["detail"].get("kind") == "pyspark" for e in events["events"])


def test_usage_is_ones_own_and_admins_see_everyones(
    env: Env, alice_objects: dict[str, Any]
) -> None:
    with env.client("alice") as alice:
        mine = alice.get("/v1/usage").json()["rows"]
        asked = alice.get("/v1/usage", params={"user": "carol", "bucket": "day"}).json()["rows"]
        by_tag = alice.get("/v1/usage", params={"group_by": "tag:team"})
        unknown = alice.get("/v1/usage", params={"group_by": "team"})
        backwards = alice.get("/v1/usage", params={"since": 100, "until": 50})
    assert [r["user"] for r in mine] == ["alice"] and mine[0]["cost"]["tasks"] > 0, mine
    assert {r["user"] for r in asked} == {"alice"}  # another's: one's own, as every list
    # her queries carry no team tag: one row, under no key, with all of her costs
    assert [(r["key"], r["user"]) for r in by_tag.json()["rows"]] == [(None, None)], by_tag.text
    assert by_tag.json()["rows"][0]["cost"] == mine[0]["cost"]
    assert unknown.status_code == 422 and "group_by" in unknown.text
    assert backwards.status_code == 422 and "until" in backwards.text
    with env.client("carol") as carol:
        everyone = {r["user"] for r in carol.get("/v1/usage").json()["rows"]}
        alices = carol.get("/v1/usage", params={"user": "alice"}).json()["rows"]
    assert "alice" in everyone
    assert [r["user"] for r in alices] == ["alice"]


def test_only_admins_stop_engines_read_their_logs_and_the_whole_audit(
    env: Env, alice_objects: dict[str, Any]
) -> None:
    with env.client("alice") as alice:
        engines = alice.get("/v1/engines").json()["engines"]
        assert engines
        assert alice.post(f"/v1/engines/{engines[0]['id']}/stop").status_code == 403
        # An engine's log names every session's work it ran: admins only.
        assert alice.get(f"/v1/engines/{engines[0]['id']}/log").status_code == 403
        with env.client("carol") as carol:
            log = carol.get(f"/v1/engines/{engines[0]['id']}/log", params={"tail": 5})
            assert log.status_code == 200, log.text
            assert 0 < len(log.json()["log"].splitlines()) <= 5
            assert carol.get("/v1/engines/999999/log").status_code == 404
        # The audit log: her own events only (admins read it whole).
        own = alice.get("/v1/audit", params={"limit": 1000})
        assert own.status_code == 200, own.text
        assert {e["user"] for e in own.json()["events"]} == {"alice"}
        assert alice.get("/v1/audit", params={"user": "carol"}).json()["events"] == []
        assert alice.get(f"/v1/engines/{engines[0]['id']}/ui/").status_code == 403


def _engines_of_sessions(client: httpx.Client) -> set[int]:
    """The engines that ran the caller's sessions, one-off queries' too, as the sessions say."""
    page = client.get("/v1/sessions", params={"one_off": True, "limit": 1000}).json()
    assert not page.get("next"), page
    return {s["engine_id"] for s in page["sessions"] if s["engine_id"] is not None}


_PROCESS = ("host", "pid", "app_id", "spark_ui", "log_path")


def _sees_only_their_engines(
    client: httpx.Client, user: str, owners: dict[str, int], every: dict[int, dict[str, Any]]
) -> None:
    """``user`` sees, in the API and on the Engines page, only engines their own sessions ran
    on and nothing of any engine's process; ``owners``' other engines are absent by id."""
    seen = client.get("/v1/engines", params={"all": True}).json()["engines"]
    live = client.get("/v1/engines").json()["engines"]
    page = client.get("/ui/engines", params={"all": True}).text
    ran = _engines_of_sessions(client)
    assert {e["id"] for e in seen} <= ran, (user, seen, ran)
    assert {e["id"] for e in live} <= {e["id"] for e in seen}
    for engine in seen:
        assert [engine[key] for key in _PROCESS] == [None] * 5, (user, engine)
    own = owners.get(user)
    if own is not None:
        assert own in {e["id"] for e in seen}
        assert f'data-engine-id="{own}"' in page
        assert client.get(f"/v1/engines/{own}").json()["host"] is None
    for engine_id in set(owners.values()) - {own}:
        assert f'data-engine-id="{engine_id}"' not in page
        hidden = client.get(f"/v1/engines/{engine_id}")
        unknown = client.get("/v1/engines/999999")
        # As absent as an id that does not exist, word for word but the id.
        assert hidden.status_code == unknown.status_code == 404, hidden.text
        message = unknown.json()["error"]["message"].replace("999999", str(engine_id))
        assert hidden.json()["error"]["message"] == message
        assert client.post(f"/v1/engines/{engine_id}/stop").status_code == 403
    for engine in every.values():
        # Its host as the table's cell shows it (a host name may be a short word).
        assert engine["host"] is None or f"<td>{engine['host']}" not in page, user
        for value in (engine["app_id"], engine["log_path"]):
            assert value is None or value not in page, (user, value)


def test_a_user_sees_only_the_engines_of_their_work_and_not_where_they_run(
    env: Env, alice_objects: dict[str, Any]
) -> None:
    """bob (sql only), alice (every right) and erin (a JWT) against carol (admin): the
    engine list, one engine by id, the Engines page and Livy's view of a session."""
    with env.client("alice") as alice:
        alices = alice.get(f"/v1/sessions/{alice_objects['session']}").json()["engine_id"]
    with env.client("bob") as bob:
        session = bob.post("/v1/sessions", json={"kind": "interactive"}).json()
    try:
        with env.client("bob") as bob:
            bobs = _wait_idle(bob, session["id"])["engine_id"]
        assert alices is not None and bobs is not None and alices != bobs
        with env.client("carol") as carol:
            listed = carol.get("/v1/engines", params={"all": True}).json()["engines"]
            every = {e["id"]: e for e in listed}
            admins_page = carol.get("/ui/engines", params={"all": True}).text
            admins_livy = carol.get(f"/sessions/{session['id']}").json()
            admins_log = carol.get(f"/sessions/{session['id']}/log").json()["log"]
            one = carol.get(f"/v1/engines/{alices}").json()
        # The admin sees every engine, and where each runs.
        assert {alices, bobs} <= set(every)
        process = every[bobs]
        # (Its Spark UI only when engines serve one: SPARKGATE_SPARK_UI.)
        assert all(process[key] for key in ("host", "pid", "app_id", "log_path")), process
        assert one["pid"] == every[alices]["pid"] and one["host"]
        assert f"<td>{process['host']} · {process['pid']}</td>" in admins_page
        assert process["app_id"] in admins_page
        assert admins_livy["appId"] == process["app_id"]
        assert any(process["app_id"] in line for line in admins_log)
        for user, client in (
            ("bob", env.client("bob")),
            ("alice", env.client("alice")),
            ("erin", env.client(token=env.issuer.token("erin"))),
        ):
            with client:
                _sees_only_their_engines(client, user, {"bob": bobs, "alice": alices}, every)
        with env.client("bob") as bob:
            # Livy's view of his own session: no application id, nor host, in it or its log.
            livy = bob.get(f"/sessions/{session['id']}").json()
            log = bob.get(f"/sessions/{session['id']}/log").json()["log"]
        assert livy["appId"] is None and livy["owner"] == "bob"
        where = (process["app_id"], f"host {process['host']}")
        assert not any(value in line for value in where for line in log), log
        assert any(f"host {process['host']}" in line for line in admins_log), admins_log
        assert any(f"engine {bobs}" in line for line in log), log
    finally:
        with env.client("bob") as bob:
            bob.delete(f"/v1/sessions/{session['id']}")


def test_limits_and_body_size(env: Env) -> None:
    with env.client("alice") as alice:
        huge = alice.post(
            "/v1/queries",
            content=b'{"query": "' + b"x" * (9 * 1024 * 1024) + b'"}',
            headers={"content-type": "application/json"},
        )
        assert huge.status_code == 413 and str(8 * 1024 * 1024) in huge.json()["error"]["message"]
    original = env.access_file.read_text()
    try:
        env.access_file.write_text(
            original.replace("sessions_per_user: 10", "sessions_per_user: 1")
        )
        with env.client("alice") as alice:
            refused = alice.post("/v1/sessions", json={"kind": "interactive"})
        assert (
            refused.status_code == 429 and "sessions_per_user" in refused.json()["error"]["message"]
        )
    finally:
        env.access_file.write_text(original)


def test_the_cli_logs_in_with_a_token_and_out(env: Env, tmp_path: Path) -> None:
    import json
    import os
    import subprocess
    import sys

    base = {k: v for k, v in os.environ.items() if not k.startswith("SPARKGATE_")}
    cli_env = {**base, "XDG_CONFIG_HOME": str(tmp_path / "config"), "SPARKGATE_SERVER": env.url}

    def sparkgate(*args: str, stdin: str = "") -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [sys.executable, "-m", "sparkgate.cli.main", *args],
            check=False,
            input=stdin,
            capture_output=True,
            text=True,
            env=cli_env,
            timeout=120,
        )

    refused = sparkgate("whoami")
    assert refused.returncode != 0 and "login" in refused.stderr
    wrong = sparkgate("login", "--user", "alice", "--password-stdin", stdin="nope\n")
    assert wrong.returncode != 0
    logged = sparkgate("login", "--user", "alice", "--password-stdin", stdin="alice-secret\n")
    assert logged.returncode == 0, logged.stderr
    stored = tmp_path / "config" / "sparkgate" / "credentials.json"
    assert stored.stat().st_mode & 0o777 == 0o600
    me = json.loads(sparkgate("whoami", "--json").stdout)
    assert me["user"] == "alice" and me["via"] == "token"
    listed = sparkgate("sessions", "list", "--json")
    assert listed.returncode == 0, listed.stderr
    assert sparkgate("logout").returncode == 0
    assert sparkgate("whoami").returncode != 0  # logged out; the token is revoked too
    secret = json.loads(stored.read_text()) if stored.exists() else {}
    assert env.url not in secret


def test_the_cli_takes_the_connection_options_before_or_after_the_command(
    env: Env, tmp_path: Path
) -> None:
    import json
    import os
    import subprocess
    import sys

    base = {k: v for k, v in os.environ.items() if not k.startswith("SPARKGATE_")}
    cli_env = {**base, "XDG_CONFIG_HOME": str(tmp_path / "config"), "SPARKGATE_PASSWORD": "af"}

    def sparkgate(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [sys.executable, "-m", "sparkgate.cli.main", *args],
            check=False,
            capture_output=True,
            text=True,
            env=cli_env,
            timeout=120,
        )

    with env.client("airflow") as airflow:
        expected = [s["id"] for s in airflow.get("/v1/sessions").json()["sessions"]]
    for args in (
        ("--server", env.url, "--user", "airflow", "sessions", "list", "--json"),
        ("sessions", "list", "--server", env.url, "--user", "airflow", "--json"),
        ("--user", "airflow", "sessions", "list", "--json", "--server", env.url),
    ):
        done = sparkgate(*args)
        assert done.returncode == 0, (args, done.stderr)
        assert [s["id"] for s in json.loads(done.stdout)["sessions"]] == expected, args
    me = sparkgate("whoami", "--server", env.url, "--user", "airflow", "--json")
    assert me.returncode == 0 and json.loads(me.stdout)["user"] == "airflow", me.stderr
    # Nothing reached the server with the wrong password: 401 and the hint, in one line.
    wrong = sparkgate("whoami", "--server", env.url, "--user", "alice")
    assert wrong.returncode == 1 and "sparkgate login --server" in wrong.stderr, wrong.stderr
    host_only = env.url.removeprefix("http://")
    bad = sparkgate("sessions", "list", "--server", host_only, "--user", "airflow")
    assert bad.returncode == 2, bad.stderr
    assert f"'{host_only}' is not a server URL" in " ".join(bad.stderr.split())
    assert "Traceback" not in bad.stderr
