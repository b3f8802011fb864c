"""The ``sparkgate`` command against a running server, as a user runs it."""

from __future__ import annotations

import json
import subprocess
import sys

from sparkgate_dev import ServerProcess, eventually


def sparkgate(server: ServerProcess, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "sparkgate.cli.main", *args, "--server", server.url],
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )


def test_sql_prints_a_table(server: ServerProcess) -> None:
    done = sparkgate(server, "sql", "SELECT id, concat('v', id) AS label FROM range(3)")
    assert done.returncode == 0, done.stderr
    assert "label" in done.stdout and "v2" in done.stdout
    assert "3 rows" in done.stderr


def tsv(done: subprocess.CompletedProcess[str]) -> list[dict[str, str]]:
    """A piped command's table: a header line, then rows, tab-separated, each whole."""
    assert done.returncode == 0, done.stderr
    header, *rows = done.stdout.splitlines()
    names = header.split("\t")
    assert all(len(row.split("\t")) == len(names) for row in rows), done.stdout
    return [dict(zip(names, row.split("\t"), strict=True)) for row in rows]


def test_piped_tables_are_tsv_and_one_off_sessions_are_listed_on_request(
    server: ServerProcess,
) -> None:
    """Piped, nothing is cut to 80 columns. Each one-off query ran in a session of its own,
    which the sessions list leaves out unless asked."""
    long = "v" * 200
    query = f"SELECT '{long}' AS a_rather_long_column_name, 'x' AS started_at_as_well"
    rows = tsv(sparkgate(server, "sql", query))
    assert rows == [{"a_rather_long_column_name": long, "started_at_as_well": "x"}]
    ours = tsv(sparkgate(server, "queries", "list", "--limit", "5"))[0]
    assert ours["query"] == query and ours["state"] == "success"
    assert len(ours["created"]) >= len("2026-01-01T00:00:00Z")  # whole: 2026-...Z
    before = str(int(ours["session"]) - 1)  # a page starting at its session
    listed = tsv(sparkgate(server, "sessions", "list", "--after", before))
    assert ours["session"] not in [s["id"] for s in listed]
    with_one_off = tsv(sparkgate(server, "sessions", "list", "--after", before, "--one-off"))
    one_off = next(s for s in with_one_off if s["id"] == ours["session"])
    assert one_off["kind"] == "batch" and one_off["created"].endswith("Z"), one_off


def test_sql_failure_exits_non_zero_with_the_message(server: ServerProcess) -> None:
    done = sparkgate(server, "sql", "SELECT nope FROM range(1)")
    assert done.returncode == 1
    assert "UNRESOLVED_COLUMN" in done.stderr and "line 1, position 8" in done.stderr


def test_sql_in_a_session_and_json(server: ServerProcess) -> None:
    with server.client() as sg:
        session = sg.create_session()
        sg.wait_session(session.id, {"idle"}, timeout=240)
    sid = str(session.id)
    assert (
        sparkgate(
            server, "sql", "--session", sid, "CREATE TEMPORARY VIEW cli_v AS SELECT 5 AS x"
        ).returncode
        == 0
    )
    done = sparkgate(server, "sql", "--session", sid, "--json", "SELECT x FROM cli_v")
    assert done.returncode == 0, done.stderr
    body = json.loads(done.stdout)
    assert body["rows"] == [[5]] and body["query"]["session_id"] == session.id

    listed = json.loads(sparkgate(server, "queries", "list", "--session", sid, "--json").stdout)
    assert [q["query"] for q in listed["queries"]][:1] == ["SELECT x FROM cli_v"]
    shown = json.loads(
        sparkgate(server, "queries", "show", str(listed["queries"][0]["id"]), "--json").stdout
    )
    assert shown["state"] == "success"
    assert "success" in sparkgate(server, "queries", "show", str(shown["id"])).stdout
    counted = sparkgate(
        server, "sql", "--session", sid, "--json", "SELECT count(*) FROM range(900)"
    )
    query_id = json.loads(counted.stdout)["query"]["id"]
    shown_text = sparkgate(server, "queries", "show", str(query_id)).stdout
    assert "B (900 rows) read" in shown_text, shown_text  # what its Spark tasks cost
    report = json.loads(sparkgate(server, "usage", "--json").stdout)
    assert report["group_by"] == "user" and report["rows"][0]["cost"]["tasks"] >= 1, report
    daily = sparkgate(server, "usage", "--by-day", "--since", "7d")
    ended_on = json.loads(counted.stdout)["query"]["finished_at"][:10]
    assert daily.returncode == 0 and ended_on in daily.stdout, daily.stdout
    assert "--since" in sparkgate(server, "usage", "--since", "soon").stderr

    sessions = json.loads(sparkgate(server, "sessions", "list", "--state", "idle", "--json").stdout)
    assert session.id in [s["id"] for s in sessions["sessions"]]
    assert (
        json.loads(sparkgate(server, "sessions", "show", sid, "--json").stdout)["state"] == "idle"
    )
    killed = sparkgate(server, "sessions", "kill", sid)
    assert killed.returncode == 0 and "killed" in killed.stdout


def test_queries_cancel(server: ServerProcess) -> None:
    with server.client() as sg:
        session = sg.create_session()
        sg.wait_session(session.id, {"idle"}, timeout=240)
        submitted = sg.submit("SELECT sum(id % 7) FROM range(100000000000)", session_id=session.id)
        eventually(lambda: sg.query(submitted.id).state == "running", timeout=60)
        done = sparkgate(server, "queries", "cancel", str(submitted.id))
        assert done.returncode == 0 and ("cancelling" in done.stdout or "cancelled" in done.stdout)
        assert sg.wait(submitted.id, timeout=60).state == "cancelled"
        sg.kill_session(session.id)


def test_unknown_ids_and_unreachable_servers_fail_in_one_line(server: ServerProcess) -> None:
    missing = sparkgate(server, "queries", "show", "987654")
    assert missing.returncode == 1 and "QUERY_NOT_FOUND" in missing.stderr
    unreachable = subprocess.run(
        [
            sys.executable,
            "-m",
            "sparkgate.cli.main",
            "sessions",
            "list",
            "--server",
            "http://127.0.0.1:9",
        ],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert unreachable.returncode == 1
    assert "UNREACHABLE" in unreachable.stderr and "Traceback" not in unreachable.stderr
    assert len(unreachable.stderr.strip().splitlines()) <= 2
