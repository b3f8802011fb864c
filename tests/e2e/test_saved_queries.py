"""Saved queries and history search, end to end: one real server with authentication on, REST
through httpx and the ``sparkgate`` command (in process, over HTTP), one real query on one
engine (a saved query run from the CLI), searched for in the history.

Users: alice and bob (group analysts), dave (no group), carol (admin).
"""

from __future__ import annotations

import json
import shlex
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from typer.testing import CliRunner, Result

from sparkgate.cli.main import app
from sparkgate_dev import ServerProcess, kill_engines, local_test_settings, user_files

pytestmark = [pytest.mark.spark, pytest.mark.timeout(600)]

PASSWORDS = {"alice": "alice-pw", "bob": "bob-pw", "carol": "carol-pw", "dave": "dave-pw"}
ACCESS = """
admins: [carol]
groups: {analysts: [alice, bob]}
rules:
  - {users: ["*"], allow: [sql]}
"""
# Text no other query of the run holds: what the history search looks for.
MARKER = "h3_Saved_Marker"


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory, metastore_uri: str) -> Iterator[ServerProcess]:
    home = tmp_path_factory.mktemp("saved-home")
    settings = local_test_settings(
        home,
        metastore_uri=metastore_uri,
        auth="password",
        **user_files(home, PASSWORDS, ACCESS),
        # No engine until the one query runs; then one for every user.
        warm_engines=0,
        engine_share_level="server",
    )
    server = ServerProcess(settings).start()
    try:
        yield server
    finally:
        server.stop()
        kill_engines(settings)


def _api(server: ServerProcess, user: str) -> httpx.Client:
    return httpx.Client(base_url=server.url, auth=(user, PASSWORDS[user]), timeout=60)


def _cli(server: ServerProcess, user: str, *args: str) -> Result:
    words = [word for arg in args for word in shlex.split(arg)]
    env = {
        "SPARKGATE_SERVER": server.url,
        "SPARKGATE_USER": user,
        "SPARKGATE_PASSWORD": PASSWORDS[user],
    }
    return CliRunner().invoke(app, words, env=env)


def _save(client: httpx.Client, **body: Any) -> dict[str, Any]:
    answer = client.post("/v1/saved-queries", json=body)
    assert answer.status_code == 201, answer.text
    saved: dict[str, Any] = answer.json()
    return saved


def _names(client: httpx.Client, **params: Any) -> list[str]:
    answer = client.get("/v1/saved-queries", params=params)
    assert answer.status_code == 200, answer.text
    return [s["name"] for s in answer.json()["saved_queries"]]


def test_own_shared_and_others_saved_queries(server: ServerProcess, client_env: None) -> None:
    with (
        _api(server, "alice") as alice,
        _api(server, "bob") as bob,
        _api(server, "dave") as dave,
        _api(server, "carol") as carol,
    ):
        shared = _save(
            alice,
            name="Team revenue",
            sql="SELECT 1 AS revenue",
            group="analysts",
            description="for the team",
            tags={"team": "finance"},
        )
        assert set(shared) >= {
            "id",
            "name",
            "sql",
            "description",
            "owner",
            "group",
            "created_at",
            "updated_at",
        }
        assert (shared["owner"], shared["group"], shared["tags"]) == (
            "alice",
            "analysts",
            {"team": "finance"},
        )
        private = _save(alice, name="alice only", sql="SELECT 2")
        assert private["group"] is None
        bobs = _save(bob, name="bob's own", sql="SELECT 3 AS Revenue")

        # Own and shared, newest change first; others' private ones are absent.
        assert _names(bob) == ["bob's own", "Team revenue"]
        assert _names(alice) == ["alice only", "Team revenue"]
        assert _names(dave) == []
        assert _names(bob, q="REVENUE") == ["bob's own", "Team revenue"]
        assert _names(bob, q="team") == ["Team revenue"]
        # An admin lists as a user does, and anyone's with ?owner=.
        assert _names(carol) == []
        assert _names(carol, owner="alice") == ["alice only", "Team revenue"]
        assert _names(bob, owner="alice") == ["Team revenue"]  # only what bob may see

        # Someone who cannot see it meets it as absent, like an id that never was.
        for client, saved_id in ((bob, private["id"]), (dave, shared["id"]), (dave, 999_999)):
            for method in ("GET", "PUT", "DELETE"):
                body = {"sql": "SELECT 4"} if method == "PUT" else None
                answer = client.request(method, f"/v1/saved-queries/{saved_id}", json=body)
                assert answer.status_code == 404, (method, saved_id, answer.text)
                assert answer.json()["error"]["code"] == "SAVED_QUERY_NOT_FOUND"
        assert bob.get(f"/v1/saved-queries/{shared['id']}").json()["sql"] == "SELECT 1 AS revenue"

        # A group member who is not the owner sees it but may not change or delete it.
        for method in ("PUT", "DELETE"):
            body = {"sql": "SELECT 4"} if method == "PUT" else None
            answer = bob.request(method, f"/v1/saved-queries/{shared['id']}", json=body)
            assert answer.status_code == 403, answer.text
            assert "only its owner" in answer.json()["error"]["message"]
        # Nor may an admin change it: only delete it.
        assert carol.put(f"/v1/saved-queries/{shared['id']}", json={"sql": "x"}).status_code == 403

        # A repeat name is refused; another user may use it.
        again = alice.post("/v1/saved-queries", json={"name": "Team revenue", "sql": "SELECT 5"})
        assert again.status_code == 409 and again.json()["error"]["code"] == "SAVED_QUERY_EXISTS"
        _save(bob, name="Team revenue", sql="SELECT 6")
        renamed = alice.put(f"/v1/saved-queries/{private['id']}", json={"name": "Team revenue"})
        assert renamed.status_code == 409, renamed.text

        # A group one is not in is refused; an admin may name any.
        foreign = bob.post(
            "/v1/saved-queries", json={"name": "x", "sql": "SELECT 1", "group": "hr"}
        )
        assert foreign.status_code == 403 and "not a member" in foreign.text
        assert _save(carol, name="for hr", sql="SELECT 1", group="hr")["group"] == "hr"

        # The owner changes what they give, and unshares it with group null.
        changed = alice.put(
            f"/v1/saved-queries/{shared['id']}", json={"sql": "SELECT 7", "group": None}
        )
        assert changed.status_code == 200, changed.text
        assert (changed.json()["sql"], changed.json()["group"]) == ("SELECT 7", None)
        assert changed.json()["description"] == "for the team"
        assert changed.json()["updated_at"] > shared["updated_at"]
        assert bob.get(f"/v1/saved-queries/{shared['id']}").status_code == 404
        assert _names(alice)[0] == "Team revenue"  # changed last: first

        # The owner deletes; an admin deletes anyone's.
        assert alice.delete(f"/v1/saved-queries/{private['id']}").status_code == 200
        assert carol.delete(f"/v1/saved-queries/{bobs['id']}").json()["owner"] == "bob"
        assert alice.get(f"/v1/saved-queries/{private['id']}").status_code == 404

        # Every change is audited, refusals too.
        events = carol.get("/v1/audit", params={"limit": 1000}).json()["events"]
        actions = {(e["user"], e["action"], e["outcome"]) for e in events}
        assert {
            ("alice", "saved_query.create", "ok"),
            ("alice", "saved_query.update", "ok"),
            ("alice", "saved_query.delete", "ok"),
            ("bob", "saved_query.update", "denied"),
            ("bob", "saved_query.create", "denied"),
            ("carol", "saved_query.delete", "ok"),
        } <= actions


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({"sql": "SELECT 1"}, "name"),
        ({"name": "", "sql": "SELECT 1"}, "name"),
        ({"name": "x" * 201, "sql": "SELECT 1"}, "name"),
        ({"name": "tab\there", "sql": "SELECT 1"}, "name"),
        ({"name": "   ", "sql": "SELECT 1"}, "name"),
        ({"name": "n"}, "sql"),
        ({"name": "n", "sql": "  \n"}, "sql"),
        ({"name": "n", "sql": "-- " + "é" * 600_000}, "sql"),  # 1.2 MB in UTF-8
        ({"name": "n", "sql": "SELECT 1", "group": ""}, "group"),
        ({"name": "n", "sql": "SELECT 1", "owner": "bob"}, "owner"),
        ({"name": "n", "sql": "SELECT 1", "tags": {"bad key": "v"}}, "tags"),
        ({"name": 3, "sql": "SELECT 1"}, "name"),
        # What PostgreSQL's text cannot hold, and a lone surrogate no store encodes.
        ({"name": "n", "sql": "SELECT '\x00'"}, "sql"),
        ({"name": "n", "sql": "SELECT 1", "description": "a\x00"}, "description"),
        ({"name": "n", "sql": "SELECT 1", "tags": {"k": "\x00"}}, "tags"),
        ({"name": "n", "sql": "SELECT '\ud800'"}, "sql"),
    ],
)
def test_bad_bodies_answer_422_naming_the_field(
    server: ServerProcess, body: dict[str, Any], field: str
) -> None:
    with _api(server, "dave") as dave:
        # Encoded here: JSON's \u escapes carry a lone surrogate, which httpx would not encode.
        content = json.dumps(body).encode()
        headers = {"Content-Type": "application/json"}
        answer = dave.post("/v1/saved-queries", content=content, headers=headers)
        assert answer.status_code == 422, answer.text
        assert field in answer.text
        assert "n" not in _names(dave)


def test_bad_changes_and_parameters_answer_422(server: ServerProcess) -> None:
    with _api(server, "dave") as dave:
        saved = _save(dave, name="dave's", sql="SELECT 1")
        path = f"/v1/saved-queries/{saved['id']}"
        for body in ({}, {"name": None}, {"sql": None}, {"sql": ""}, {"id": 3}):
            assert dave.put(path, json=body).status_code == 422, body
        assert dave.get(path).json()["sql"] == "SELECT 1"
        for params in ({"q": "x" * 1001}, {"q": "a\x00"}, {"after": "nonsense"}, {"limit": 0}):
            assert dave.get("/v1/saved-queries", params=params).status_code == 422, params
            assert dave.get("/v1/queries", params=params).status_code == 422, params
        assert dave.get("/v1/saved-queries/9223372036854775808").status_code == 422
        # The longest search is fine; an empty one (a blank search box) finds everything.
        assert dave.get("/v1/queries", params={"q": "x" * 1000}).status_code == 200
        assert "dave's" in _names(dave, q="") == _names(dave)


def test_paging_newest_change_first(server: ServerProcess) -> None:
    with _api(server, "dave") as dave:
        made = [_save(dave, name=f"paged {i}", sql="SELECT 1")["name"] for i in range(5)]
        seen: list[str] = []
        params: dict[str, Any] = {"q": "paged", "limit": 2}
        while True:
            page = dave.get("/v1/saved-queries", params=params).json()
            seen += [s["name"] for s in page["saved_queries"]]
            if page["next"] is None:
                break
            params["after"] = page["next"]
        assert seen == list(reversed(made))


def test_the_cli_saves_runs_and_searches_the_history(
    server: ServerProcess, client_env: None, tmp_path: Path
) -> None:
    script = tmp_path / "marker.sql"
    script.write_text(f"SELECT '{MARKER}' AS m, 41 + 1 AS answer\n")
    added = _cli(server, "alice", f"saved add 'marker query' --file {script} --group analysts")
    assert added.exit_code == 0, added.output
    assert "shared with analysts" in added.output
    saved_id = int(added.output.split()[2].rstrip(":"))

    listed = _cli(server, "bob", "saved list --search 'MARKER query' --json")
    assert listed.exit_code == 0, listed.output
    assert '"marker query"' in listed.output and '"owner": "alice"' in listed.output
    shown = _cli(server, "bob", f"saved show {saved_id}")
    assert shown.exit_code == 0 and MARKER in shown.output
    refused = _cli(server, "bob", f"saved update {saved_id} --sql 'SELECT 1'")
    assert refused.exit_code != 0 and "only its owner" in refused.output
    hidden = _cli(server, "dave", f"saved show {saved_id}")
    assert hidden.exit_code != 0 and "does not exist" in hidden.output
    both = _cli(server, "alice", f"saved update {saved_id} --sql 'SELECT 1' --file {script}")
    assert both.exit_code != 0 and "not both" in both.output

    # Run as `sparkgate sql` runs a query: the one query of this module (one engine).
    ran = _cli(server, "bob", f"saved run {saved_id}")
    assert ran.exit_code == 0, ran.output
    assert MARKER in ran.output and "42" in ran.output

    # History search: bob's query holds the marker; alice ran none; any case matches.
    with _api(server, "bob") as bob, _api(server, "alice") as alice:
        hits = bob.get("/v1/queries", params={"q": MARKER.upper()}).json()["queries"]
        assert [q["query"] for q in hits] == [script.read_text()]
        assert bob.get("/v1/queries", params={"q": MARKER + "!"}).json()["queries"] == []
        assert alice.get("/v1/queries", params={"q": MARKER}).json()["queries"] == []
    searched = _cli(server, "bob", f"queries list --search {MARKER.lower()} --json")
    assert searched.exit_code == 0, searched.output
    assert f'"id": {hits[0]["id"]}' in searched.output
    none = _cli(server, "bob", "queries list --search no-such-text --json")
    assert '"queries": []' in none.output

    renamed = _cli(server, "alice", f"saved update {saved_id} --name 'marker, renamed' --private")
    assert renamed.exit_code == 0, renamed.output
    gone = _cli(server, "bob", f"saved run {saved_id}")
    assert gone.exit_code != 0 and "does not exist" in gone.output
    deleted = _cli(server, "alice", f"saved delete {saved_id}")
    assert deleted.exit_code == 0 and "deleted" in deleted.output
