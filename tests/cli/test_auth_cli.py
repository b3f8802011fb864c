"""``sparkgate users|login|logout|whoami|tokens|audit`` and the server's refusal to listen
openly without auth; the server side of login is a small fake speaking the same HTTP."""

from __future__ import annotations

import base64
import json
import logging
import shlex
import stat
import sys
import threading
import types
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner, Result

from sparkgate import credentials
from sparkgate.auth.passwords import check_password
from sparkgate.cli import server as server_cli
from sparkgate.cli.main import app
from sparkgate.credentials import CredentialsError
from sparkgate.settings import Settings

runner = CliRunner()


def run(*args: str, input: str | None = None, **env: str) -> Result:
    """``run("users add alice", "--password-file", path)``: each argument split as a shell would."""
    return runner.invoke(
        app, [word for arg in args for word in shlex.split(arg)], input=input, env=env
    )


def said(result: Result) -> str:
    """stdout and stderr with Rich's line wrapping undone."""
    return " ".join(result.output.split())


@pytest.fixture(autouse=True)
def clean_env(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    for name in (
        "SPARKGATE_TOKEN",
        "SPARKGATE_USER",
        "SPARKGATE_PASSWORD",
        "SPARKGATE_SERVER",
        "SPARKGATE_AUTH",
        "SPARKGATE_AUTH_PASSWORD_FILE",
        "SPARKGATE_INSECURE",
        "SPARKGATE_SSL_CERTFILE",
        "SPARKGATE_SSL_KEYFILE",
        "SPARKGATE_HOST",
    ):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "config"))


# -- users -----------------------------------------------------------------------------


def test_users_add_list_remove(tmp_path: Path) -> None:
    file = tmp_path / "passwords"
    added = run(f"users add alice --password-file {file} --password-stdin", input="wonder land\n")
    assert added.exit_code == 0, added.output
    from_env = run(
        "users add bob --password-stdin", input="b0b\n", SPARKGATE_AUTH_PASSWORD_FILE=str(file)
    )
    assert from_env.exit_code == 0, from_env.output
    hashes = dict(line.split(":", 1) for line in file.read_text().splitlines())
    assert check_password("wonder land", hashes["alice"]) and check_password("b0b", hashes["bob"])
    assert stat.S_IMODE(file.stat().st_mode) == 0o600

    listed = run("users", "list", "--password-file", str(file))
    assert listed.exit_code == 0 and listed.stdout.split() == ["alice", "bob"]
    assert "$2" not in listed.output
    as_json = run("users", "list", "--password-file", str(file), "--json")
    assert json.loads(as_json.stdout) == ["alice", "bob"]

    changed = run(f"users add alice --password-file {file} --password-stdin", input="new\n")
    assert "password changed for alice" in said(changed)
    assert check_password("new", file.read_text().split("alice:")[1].split()[0])

    assert run("users", "remove", "bob", "--password-file", str(file)).exit_code == 0
    assert run("users", "list", "--password-file", str(file)).stdout.split() == ["alice"]
    missing = run("users", "remove", "bob", "--password-file", str(file))
    assert missing.exit_code == 1 and "no user 'bob'" in said(missing)


def test_users_add_prompts_twice_on_a_terminal(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr("sparkgate.cli.users.stdin_is_tty", lambda: True)
    file = tmp_path / "passwords"
    added = run("users", "add", "carol", "--password-file", str(file), input="pw1\npw1\n")
    assert added.exit_code == 0, added.output
    assert "pw1" not in added.output  # hidden
    assert check_password("pw1", file.read_text().split(":", 1)[1].strip())


def test_users_add_fails_clearly(tmp_path: Path) -> None:
    no_file = run("users", "add", "alice", "--password-stdin", input="x\n")
    assert no_file.exit_code == 1
    assert "pass --password-file or set SPARKGATE_AUTH_PASSWORD_FILE" in said(no_file)
    file = str(tmp_path / "passwords")
    no_terminal = run("users", "add", "alice", "--password-file", file)
    assert no_terminal.exit_code == 1 and "--password-stdin" in said(no_terminal)
    empty = run("users", "add", "alice", "--password-file", file, "--password-stdin", input="\n")
    assert empty.exit_code == 1 and "empty password" in said(empty)
    bad_name = run("users", "add", "a:b", "--password-file", file, "--password-stdin", input="x\n")
    assert bad_name.exit_code == 1 and "no colons or spaces" in said(bad_name)
    assert "Traceback" not in bad_name.output


# -- the credentials file ------------------------------------------------------------------


def test_credentials_round_trip_private_and_forget(tmp_path: Path) -> None:
    assert credentials.load("http://h:1") is None
    where = credentials.save("http://h:1/", "alice", "sgp_secret", 12)
    assert where == tmp_path / "config" / "sparkgate" / "credentials.json"
    assert stat.S_IMODE(where.stat().st_mode) == 0o600
    assert stat.S_IMODE(where.parent.stat().st_mode) == 0o700
    credentials.save("http://other:2", None, "sgp_other", None)
    stored = credentials.load("http://h:1")
    assert stored == credentials.StoredCredentials("alice", "sgp_secret", "12")
    assert json.loads(where.read_text())["http://h:1"]["token"] == "sgp_secret"

    assert credentials.forget("http://h:1") and not credentials.forget("http://h:1")
    assert credentials.load("http://h:1") is None
    assert credentials.load("http://other:2") == credentials.StoredCredentials(
        None, "sgp_other", None
    )
    assert stat.S_IMODE(where.stat().st_mode) == 0o600
    assert [p.name for p in where.parent.iterdir()] == ["credentials.json"]


def test_credentials_rewrite_fixes_a_readable_file(tmp_path: Path) -> None:
    where = credentials.path()
    where.parent.mkdir(parents=True)
    where.write_text("{}")
    where.chmod(0o644)
    credentials.save("http://h:1", "alice", "sgp_x", "1")
    assert stat.S_IMODE(where.stat().st_mode) == 0o600


def test_credentials_home_default(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.delenv("XDG_CONFIG_HOME")
    monkeypatch.setenv("HOME", str(tmp_path))
    assert credentials.path() == tmp_path / ".config" / "sparkgate" / "credentials.json"


def test_a_broken_credentials_file_is_one_clear_line() -> None:
    where = credentials.path()
    where.parent.mkdir(parents=True)
    where.write_text("{not json")
    with pytest.raises(CredentialsError, match="not valid JSON"):
        credentials.load("http://h:1")
    done = run("whoami", "--server", "http://127.0.0.1:9")
    assert done.exit_code == 1 and "not valid JSON" in said(done)
    assert "Traceback" not in done.output


# -- login, whoami, tokens, logout, audit against a fake server ----------------------------


class FakeServer:
    """Just enough of the server's auth API: alice/pw, tokens, whoami, audit, answered as the
    server answers them (the client reads each into its model). Tokens are kept by id."""

    def __init__(self) -> None:
        self.tokens: dict[str, dict[str, Any]] = {}
        self.secrets: dict[str, str] = {}
        self.seen: list[str] = []  # Authorization headers, in order
        fake = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, format: str, *args: Any) -> None:
                pass

            def do_GET(self) -> None:
                fake.handle(self)

            def do_POST(self) -> None:
                fake.handle(self)

            def do_DELETE(self) -> None:
                fake.handle(self)

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}"

    def user(self, header: str) -> str | None:
        kind, _, value = header.partition(" ")
        if kind == "Basic":
            name, _, password = base64.b64decode(value).decode().partition(":")
            return name if (name, password) == ("alice", "pw") else None
        token_id = self.secrets.get(value) if kind == "Bearer" else None
        if token_id is None or self.tokens[token_id]["revoked_at"]:
            return None
        return str(self.tokens[token_id]["owner"])

    def handle(self, request: BaseHTTPRequestHandler) -> None:
        header = request.headers.get("Authorization", "")
        self.seen.append(header)
        user = self.user(header)
        if user is None:
            message = {"code": "UNAUTHENTICATED", "message": "Credentials needed."}
            return self.answer(request, 401, {"error": message})
        path = request.path.split("?")[0]
        if path == "/v1/whoami":
            via = "password" if header.startswith("Basic") else "token"
            me = {"user": user, "groups": ["eng"], "admin": True, "rights": ["sql"], "via": via}
            return self.answer(request, 200, me)
        if request.command == "POST" and path == "/v1/tokens" and header.startswith("Bearer"):
            message = {"code": "FORBIDDEN", "message": "Not with another token."}
            return self.answer(request, 403, {"error": message})
        if request.command == "POST" and path == "/v1/tokens":
            body = json.loads(request.rfile.read(int(request.headers["Content-Length"])))
            token_id = str(len(self.tokens) + 1)
            secret = f"sgp_secret{len(self.tokens) + 1}"
            self.tokens[token_id] = {
                "id": int(token_id),
                "name": body["name"],
                "owner": user,
                "prefix": secret[:10],  # as the server's: "sgp_" and six more
                "created_at": "2026-01-01T00:00:00.000Z",
                "expires_at": None if body["expires_in"] is None else f"+{body['expires_in']}s",
                "last_used_at": None,
                "revoked_at": None,
            }
            self.secrets[secret] = token_id
            return self.answer(request, 201, {**self.tokens[token_id], "token": secret})
        if path == "/v1/tokens":
            return self.answer(request, 200, {"tokens": list(self.tokens.values())})
        if request.command == "DELETE" and path.startswith("/v1/tokens/"):
            token = self.tokens[path.rsplit("/", 1)[1]]
            token["revoked_at"] = "2026-01-02T00:00:00.000Z"
            return self.answer(request, 200, token)
        if path == "/v1/audit":
            events = [
                {
                    "id": i,
                    "at": f"2026-01-0{i}T00:00:00Z",
                    "user": user,
                    "address": "127.0.0.1",
                    "action": "login",
                    "target": None,
                    "outcome": "ok",
                    "detail": {"n": i},
                }
                for i in (2, 1)
            ]
            return self.answer(
                request,
                200,
                {"events": events, "next": None, "total": 2, "offset": 0, "limit": 50},
            )
        return self.answer(request, 404, {"error": {"code": "NOT_FOUND", "message": path}})

    def answer(self, request: BaseHTTPRequestHandler, status: int, body: Any) -> None:
        data = json.dumps(body).encode()
        request.send_response(status)
        request.send_header("Content-Type", "application/json")
        request.send_header("Content-Length", str(len(data)))
        request.end_headers()
        request.wfile.write(data)


@pytest.fixture
def fake() -> Iterator[FakeServer]:
    server = FakeServer()
    thread = threading.Thread(target=server.httpd.serve_forever, daemon=True)
    thread.start()
    try:
        yield server
    finally:
        server.httpd.shutdown()
        server.httpd.server_close()
        thread.join()


def test_login_whoami_tokens_logout(fake: FakeServer) -> None:
    unauthenticated = run("whoami", "--server", fake.url)
    assert unauthenticated.exit_code == 1
    assert "UNAUTHENTICATED" in said(unauthenticated) and "sparkgate login" in said(unauthenticated)

    wrong = run(f"login --server {fake.url} --user alice --password-stdin", input="nope\n")
    assert wrong.exit_code == 1 and "UNAUTHENTICATED" in said(wrong)
    assert credentials.load(fake.url) is None

    done = run(
        f"login --server {fake.url} --user alice --password-stdin --name laptop --expires 30d",
        input="pw\n",
    )
    assert done.exit_code == 0, done.output
    assert "as alice" in said(done) and str(credentials.path()) in said(done)
    assert fake.tokens["1"]["expires_at"] == "+2592000s" and fake.tokens["1"]["name"] == "laptop"
    assert credentials.load(fake.url) == credentials.StoredCredentials("alice", "sgp_secret1", "1")

    me = run("whoami", "--server", fake.url)
    assert me.exit_code == 0 and "alice (via token; groups: eng; admin: yes)" in said(me)
    assert fake.seen[-1] == "Bearer sgp_secret1"
    assert json.loads(run("whoami", "--server", fake.url, "--json").stdout)["user"] == "alice"

    # the server creates tokens only with a password (or a JWT): the stored user's is asked for
    no_password = run("tokens", "create", "--server", fake.url)
    assert no_password.exit_code == 1 and "SPARKGATE_PASSWORD" in said(no_password)
    created = run("tokens", "create", "--server", fake.url, "--name", "ci", SPARKGATE_PASSWORD="pw")
    assert created.exit_code == 0 and created.stdout.strip() == "sgp_secret2"
    assert fake.seen[-1].startswith("Basic ")
    assert "only time the secret is shown" in " ".join(created.stderr.split())
    listed = run("tokens", "list", "--server", fake.url)
    assert listed.exit_code == 0 and "laptop" in listed.stdout
    assert "sgp_secret1" not in listed.stdout and "sgp_secret2" not in listed.stdout  # prefixes
    as_json = json.loads(run(f"tokens list --server {fake.url} --json").stdout)
    assert [t["id"] for t in as_json] == [1, 2]
    assert run("tokens", "revoke", "2", "--server", fake.url).exit_code == 0
    assert fake.tokens["2"]["revoked_at"]

    # a typed --token or --user beats the stored token
    assert run("--token", "sgp_secret2", "whoami", "--server", fake.url).exit_code == 1
    as_user = run("--user", "alice", "whoami", "--server", fake.url, SPARKGATE_PASSWORD="pw")
    assert as_user.exit_code == 0 and "via password" in said(as_user)
    both = run("--user", "alice", "--token", "x", "whoami", "--server", fake.url)
    assert both.exit_code == 1 and "not both" in said(both)
    no_password = run("--user", "alice", "whoami", "--server", fake.url)
    assert no_password.exit_code == 1 and "SPARKGATE_PASSWORD" in said(no_password)
    anonymous_token = run("tokens", "create", "--server", fake.url, SPARKGATE_TOKEN="sgp_secret1")
    assert anonymous_token.exit_code == 1 and "pass --user NAME" in said(anonymous_token)

    out = run("logout", "--server", fake.url)
    assert out.exit_code == 0 and "logged out" in said(out)
    assert fake.tokens["1"]["revoked_at"] and credentials.load(fake.url) is None
    assert "not logged in" in said(run("logout", "--server", fake.url))


def test_login_again_revokes_the_previous_token(fake: FakeServer) -> None:
    for _ in range(2):
        done = run(
            f"login --server {fake.url} --password-stdin", input="pw\n", SPARKGATE_USER="alice"
        )
        assert done.exit_code == 0, done.output
    assert fake.tokens["1"]["revoked_at"] and not fake.tokens["2"]["revoked_at"]


def test_logout_when_the_server_is_gone_still_forgets() -> None:
    credentials.save("http://127.0.0.1:9", "alice", "sgp_x", "t1")
    done = run("logout", "--server", "http://127.0.0.1:9")
    assert done.exit_code == 0 and "could not be revoked" in said(done)
    assert credentials.load("http://127.0.0.1:9") is None


def test_bad_expires_is_one_line(fake: FakeServer) -> None:
    done = run("tokens", "create", "--server", fake.url, "--expires", "soon")
    assert done.exit_code == 1 and "is not a duration" in said(done)


def test_audit_newest_first(fake: FakeServer) -> None:
    alice = {"SPARKGATE_USER": "alice", "SPARKGATE_PASSWORD": "pw"}
    done = run(f"audit --server {fake.url} --since 7d", **alice)
    assert done.exit_code == 0, done.output
    assert done.stdout.index("2026-01-02") < done.stdout.index("2026-01-01")
    assert "2 events (1-2 of 2)" in said(done)
    page = json.loads(run(f"audit --server {fake.url} --json", **alice).stdout)
    assert page["total"] == 2 and [e["id"] for e in page["events"]] == [2, 1]


def test_connection_options_before_or_after_the_command(fake: FakeServer) -> None:
    alice = {"SPARKGATE_PASSWORD": "pw"}
    for args in (
        f"--server {fake.url} --user alice whoami --json",
        f"whoami --server {fake.url} --user alice --json",
        f"--user alice whoami --json --server {fake.url}",
        f"--server http://127.0.0.1:9 whoami --server {fake.url} --user alice --json",  # last wins
    ):
        done = run(args, **alice)
        assert done.exit_code == 0, (args, done.output)
        assert json.loads(done.stdout)["user"] == "alice", args
    env = run("whoami --user alice --json", SPARKGATE_SERVER=fake.url, **alice)
    assert env.exit_code == 0 and json.loads(env.stdout)["user"] == "alice", env.output
    # audit's own --user filters events; the connection's goes before the command.
    audit = run(f"--user alice audit --user alice --server {fake.url} --json", **alice)
    assert audit.exit_code == 0 and json.loads(audit.stdout)["total"] == 2, audit.output
    both = run(f"--user alice whoami --token x --server {fake.url}")
    assert both.exit_code == 1 and "not both" in said(both)


def test_an_argument_named_like_a_connection_option_stays_the_commands() -> None:
    """click keeps parsed values by name: an argument called ``user`` (``sparkgate access
    explain USER ...``) must not be read as the --user the root group adds after commands."""
    import typer

    from sparkgate.cli.common import connection
    from sparkgate.cli.connection import Sparkgate, before_command

    tiny = typer.Typer(cls=Sparkgate)
    tiny.callback()(before_command)

    @tiny.command()
    def explain(user: str) -> None:
        typer.echo(f"{user} {connection.user}")

    @tiny.command()
    def other() -> None:
        typer.echo(str(connection.user))

    done = CliRunner().invoke(tiny, ["--user", "carol", "explain", "bob"])
    assert done.exit_code == 0 and done.stdout == "bob carol\n", done.output
    after = CliRunner().invoke(tiny, ["other", "--user", "carol"])
    assert after.exit_code == 0 and after.stdout == "carol\n", after.output


def test_a_bad_server_url_is_a_usage_error_quoting_it(tmp_path: Path) -> None:
    for args, env in (
        ("sessions list --server gw:8998", {}),
        ("--server http:// sql 'SELECT 1'", {}),
        ("whoami --server http://ok:1,ftp://gw", {}),
        ("whoami", {"SPARKGATE_SERVER": "gw.example.org"}),
    ):
        done = run(args, **env)
        assert done.exit_code == 2, (args, done.output)
        assert "is not a server URL" in said(done) and "http(s)://host:port" in said(done), args
        assert "Traceback" not in done.output
    assert "SPARKGATE_SERVER" in said(run("whoami", SPARKGATE_SERVER="gw.example.org"))
    # Commands that talk to no server do not care what it says.
    local = run(f"users list --password-file {tmp_path / 'p'}", SPARKGATE_SERVER="gw.example.org")
    assert local.exit_code == 0, local.output
    assert "ftp://gw" in said(run("whoami --server http://ok:1,ftp://gw"))


# -- sparkgate server ------------------------------------------------------------------


def test_loopback() -> None:
    for host in ("127.0.0.1", "127.3.4.5", "::1", "[::1]", "localhost", "LOCALHOST"):
        assert server_cli.is_loopback(host), host
    for host in ("0.0.0.0", "::", "10.0.0.1", "example.org", ""):
        assert not server_cli.is_loopback(host), host


@pytest.fixture
def no_start(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[dict[str, Any]]]:
    """What the node's HTTP server (``http.serving.serve``, uvicorn's) was called with;
    nothing is started.

    The command's logging setup is undone afterwards: ``logs.configure`` puts a handler on the
    root logger bound to the CliRunner's stderr, which is closed once the command returns, and
    sets the root to INFO. Left there, every later record of the run, from any thread (the
    chaos load's httpx requests), failed on it: "I/O operation on closed file"."""
    root = logging.getLogger()
    level = root.level
    calls: list[dict[str, Any]] = []
    fake_app = types.ModuleType("sparkgate.server")
    fake_app.create_app = lambda settings: ("app", settings)  # type: ignore[attr-defined]
    fake_metastore = types.ModuleType("sparkgate.catalog.metastore")
    fake_metastore.java_executable = lambda: "java"  # type: ignore[attr-defined]
    fake_serving = types.ModuleType("sparkgate.http.serving")
    fake_serving.serve = lambda app, **kwargs: calls.append({"app": app, **kwargs})  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "sparkgate.server", fake_app)
    monkeypatch.setitem(sys.modules, "sparkgate.catalog.metastore", fake_metastore)
    monkeypatch.setitem(sys.modules, "sparkgate.http.serving", fake_serving)
    yield calls
    for handler in [h for h in root.handlers if h.get_name() == "sparkgate"]:
        root.removeHandler(handler)
        handler.close()
    root.setLevel(level)


def test_server_refuses_an_open_address_without_auth(
    tmp_path: Path, no_start: list[dict[str, Any]]
) -> None:
    home = tmp_path / "home"
    done = run("server", "--host", "0.0.0.0", SPARKGATE_HOME=str(home), SPARKGATE_AUTH="none")
    assert done.exit_code == 1
    assert said(done).startswith(
        "error: refusing to listen on 0.0.0.0 with SPARKGATE_AUTH=none: anyone who reaches the "
        "port could run code on the Spark drivers."
    )
    assert "--insecure" in said(done)
    assert no_start == [] and not home.exists()

    assert run("server", "--host", "0.0.0.0", "--insecure").exit_code == 0
    assert run("server", "--host", "0.0.0.0", SPARKGATE_INSECURE="true").exit_code == 0
    assert run("server", "--host", "127.0.0.1").exit_code == 0
    # Spark Connect sends its token in every call: in plain text it needs --insecure.
    connect = run("server", "--host", "0.0.0.0", SPARKGATE_AUTH="password")
    assert connect.exit_code == 1 and "Spark Connect in plain text" in said(connect)
    authed = run(
        "server",
        "--host",
        "0.0.0.0",
        "--connect-port",
        "0",
        "--thrift-port",
        "0",
        SPARKGATE_AUTH="password",
    )
    assert authed.exit_code == 0 and "plain HTTP" in said(authed)
    assert [c["host"] for c in no_start] == ["0.0.0.0", "0.0.0.0", "127.0.0.1", "0.0.0.0"]
    assert all("ssl_certfile" not in c for c in no_start)


def test_server_tls_options(tmp_path: Path, no_start: list[dict[str, Any]]) -> None:
    cert, key = tmp_path / "cert.pem", tmp_path / "key.pem"
    cert.write_text("cert")
    key.write_text("key")
    half = run("server", "--ssl-certfile", str(cert))
    assert half.exit_code == 1 and "both a certificate and its key" in said(half)
    missing = run("server", "--ssl-certfile", str(cert), "--ssl-keyfile", str(tmp_path / "nope"))
    assert missing.exit_code == 1 and "--ssl-keyfile: no such file" in said(missing)
    done = run("server", "--ssl-certfile", str(cert), "--ssl-keyfile", str(key))
    assert done.exit_code == 0, done.output
    assert no_start[-1]["ssl_certfile"] == str(cert) and no_start[-1]["ssl_keyfile"] == str(key)
    assert server_cli.listen_problem(Settings(ssl_keyfile=key)) is not None
