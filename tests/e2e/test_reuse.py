"""Result reuse end to end, on a real server with table rules: a repeat of a read-only query is
answered from the earlier result (``reused_from``) through REST, the CLI, HiveServer2 (PyHive)
and Livy; it is recomputed after a write through sparkgate (INSERT, INSERT OVERWRITE, a load,
DROP and CREATE again), after files written by path outside sparkgate, for a query that is not
deterministic, with ``?reuse=false`` and ``SET use_cached_result = false``, past its time to
live, and for a user whose rules differ; users with the same rules share a result; the access
history and usage record the reused query as its user's.

One server and one shared engine for the module; every table in schema ``reuse_t``.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from pyhive import hive

from sparkgate_dev import (
    ServerProcess,
    free_port,
    kill_engines,
    local_test_settings,
    user_files,
    wait_final,
)

pytestmark = [pytest.mark.spark, pytest.mark.timeout(900)]

PASSWORDS = {"alice": "alice-pw", "bob": "bob-pw", "dave": "dave-pw", "carol": "carol-pw"}
ACCESS = """
admins: [carol]
groups: {analysts: [bob, dave]}
rules:
  - {users: ["*"], allow: [sql, code, streams]}
tables:
  - {user: alice, schema: reuse_t, privileges: [SELECT, INSERT, DELETE, UPDATE, OWNERSHIP]}
  - group: analysts
    schema: reuse_t
    table: sales
    privileges: [SELECT]
    filter: "region = 'EU'"
schemas:
  - {user: alice, schema: reuse_t, owner: true}
"""
TTL = 20.0  # seconds a result is kept for reuse on this server: more than a BI refresh takes

AGG = "SELECT region, sum(amount) AS total FROM reuse_t.sales GROUP BY region ORDER BY region"


class Env:
    def __init__(self, server: ServerProcess, thrift_port: int) -> None:
        self.server = server
        self.url = server.url
        self.thrift_port = thrift_port
        self.warehouse = server.settings.resolved_warehouse_dir

    def api(self, user: str) -> httpx.Client:
        return httpx.Client(base_url=self.url, auth=(user, PASSWORDS[user]), timeout=120)

    def run(
        self, user: str, sql: str, *, session_id: int | None = None, **params: Any
    ) -> dict[str, Any]:
        """One query as ``user``, waited for: its record, with ``rows`` when it succeeded."""
        body: dict[str, Any] = {"query": sql}
        if session_id is not None:
            body["session_id"] = session_id
        with self.api(user) as api:
            answer = api.post("/v1/queries", json=body, params={"wait": 60, **params})
            assert answer.status_code in (200, 201), answer.text
            ended = wait_final(api, answer.json(), timeout=240)
            query: dict[str, Any] = api.get(f"/v1/queries/{ended['id']}").json()  # the whole record
            if query["state"] == "success":
                page = api.get(f"/v1/queries/{query['id']}/result")
                query["rows"] = page.json()["rows"] if page.status_code == 200 else None
            return query

    def ok(self, user: str, sql: str, **kwargs: Any) -> dict[str, Any]:
        query = self.run(user, sql, **kwargs)
        assert query["state"] == "success", query["error"]
        return query

    def session(self, user: str) -> int:
        with self.api(user) as api:
            made = api.post("/v1/sessions", json={"kind": "interactive"})
            assert made.status_code == 201, made.text
            session_id: int = made.json()["id"]
            deadline = time.monotonic() + 240
            while api.get(f"/v1/sessions/{session_id}").json()["state"] != "idle":
                assert time.monotonic() < deadline
                time.sleep(0.2)
            return session_id

    def query(self, user: str, query_id: int) -> dict[str, Any]:
        with self.api(user) as api:
            found: dict[str, Any] = api.get(f"/v1/queries/{query_id}").json()
            return found

    def newest(self, user: str) -> dict[str, Any]:
        with self.api(user) as api:
            listed = api.get("/v1/queries", params={"limit": 1}).json()["queries"]
            return self.query(user, listed[0]["id"])

    def hive(self, user: str) -> Any:
        return hive.connect(
            "127.0.0.1",
            port=self.thrift_port,
            username=user,
            password=PASSWORDS[user],
            auth="CUSTOM",
        )


@pytest.fixture(scope="module")
def env(tmp_path_factory: pytest.TempPathFactory, metastore_uri: str) -> Iterator[Env]:
    home = tmp_path_factory.mktemp("reuse-home")
    thrift_port = free_port()
    settings = local_test_settings(
        home,
        metastore_uri=metastore_uri,
        auth="password",
        **user_files(home, PASSWORDS, ACCESS),
        thrift_port=thrift_port,
        warm_engines=0,
        engine_share_level="server",  # every user's sessions on the one shared engine
        reuse_ttl=TTL,
    )
    server = ServerProcess(settings).start()
    try:
        server.wait_engines_running()
        env = Env(server, thrift_port)
        env.ok("alice", "CREATE SCHEMA IF NOT EXISTS reuse_t")
        env.ok("alice", "DROP TABLE IF EXISTS reuse_t.sales")
        env.ok(
            "alice",
            "CREATE TABLE reuse_t.sales USING parquet AS SELECT * FROM VALUES "
            "('EU', 10), ('EU', 5), ('US', 7) AS t(region, amount)",
        )
        yield env
    finally:
        server.stop()
        kill_engines(settings, signal.SIGKILL)


def _epoch(iso: str) -> float:
    from datetime import datetime

    return datetime.fromisoformat(iso.replace("Z", "+00:00")).timestamp()


def fresh_table(env: Env, name: str) -> str:
    """A table of alice's own for a test that changes it."""
    table = f"reuse_t.{name}"
    env.ok("alice", f"DROP TABLE IF EXISTS {table}")
    env.ok(
        "alice",
        f"CREATE TABLE {table} USING parquet AS SELECT * FROM VALUES (1, 'a'), (2, 'b') AS t(k, v)",
    )
    return table


def reused(first: dict[str, Any], again: dict[str, Any]) -> bool:
    return again["reused_from"] is not None and again["reused_from"] in {
        first["id"],
        first["reused_from"],
    }


def test_a_repeat_is_answered_from_the_earlier_result(env: Env) -> None:
    first = env.ok("alice", AGG)
    assert first["reused_from"] is None
    again = env.ok(
        "alice",
        "select REGION, SUM(amount) as total\n  FROM reuse_t.sales -- again\n"
        " GROUP BY region ORDER BY region",
    )
    assert again["reused_from"] == first["id"], again
    assert again["rows"] == first["rows"] == [["EU", 15], ["US", 7]]
    assert again["reuse_saved"]["run_seconds"] >= 0
    # A query of its own: its state, user, no Spark cost, and the reads in its access history.
    assert again["owner"] == "alice" and again["state"] == "success"
    assert again["cost"]["tasks"] == 0 and again["cost"]["executor_cpu_time_ns"] == 0
    assert again["id"] != first["id"]
    with env.api("carol") as api:
        history = api.get(
            "/v1/audit", params={"object": "spark_catalog.reuse_t.sales", "action": "table.select"}
        )
        assert history.status_code == 200, history.text
        events = history.json()["events"]
    mine = [e for e in events if e["query_id"] == again["id"]]
    assert mine and all(e["user"] == "alice" and e["door"] == "rest" for e in mine), events
    # Usage counts it, at no cost: one query more, the same CPU.
    since = again["created_at"]
    with env.api("alice") as api:
        usage = api.get("/v1/usage", params={"since": _epoch(since) - 0.001}).json()
    (row,) = usage["rows"]
    assert row["queries"] >= 1 and row["cost"]["executor_cpu_time_ns"] == 0, usage


def test_a_session_reuses_and_its_context_decides(env: Env) -> None:
    session_id = env.session("alice")
    first = env.ok("alice", "SELECT count(*) FROM reuse_t.sales", session_id=session_id)
    again = env.ok("alice", "SELECT count(*) FROM reuse_t.sales", session_id=session_id)
    assert reused(first, again), again
    # Another session of the same settings reuses it too.
    other = env.session("alice")
    third = env.ok("alice", "SELECT count(*) FROM reuse_t.sales", session_id=other)
    assert reused(first, third), third
    # A setting that changes answers is part of the context: recomputed.
    env.ok("alice", "SET spark.sql.session.timeZone = Asia/Tokyo", session_id=other)
    zoned = env.ok("alice", "SELECT count(*) FROM reuse_t.sales", session_id=other)
    assert zoned["reused_from"] is None
    # The user's off switch, in a session (Databricks' name).
    env.ok("alice", "SET use_cached_result = false", session_id=session_id)
    off = env.ok("alice", "SELECT count(*) FROM reuse_t.sales", session_id=session_id)
    assert off["reused_from"] is None


def test_reuse_false_recomputes(env: Env) -> None:
    first = env.ok("alice", "SELECT max(amount) FROM reuse_t.sales")
    forced = env.ok("alice", "SELECT max(amount) FROM reuse_t.sales", reuse="false")
    assert forced["reused_from"] is None and forced["cost"]["tasks"] > 0
    again = env.ok("alice", "SELECT max(amount) FROM reuse_t.sales")
    assert again["reused_from"] in {first["id"], forced["id"]}


@pytest.mark.parametrize(
    "sql",
    [
        "SELECT k, rand() FROM {t}",
        "SELECT k, uuid() FROM {t}",
        "SELECT k, current_timestamp() FROM {t}",
        "SELECT k, current_user() FROM {t}",
        "SELECT k FROM {t} WHERE k < 10 * rand() + 10",
    ],
)
def test_queries_that_are_not_deterministic_recompute(env: Env, sql: str) -> None:
    table = "reuse_t.sales_nd"
    if env.run("alice", f"SELECT 1 FROM {table} LIMIT 1")["state"] != "success":
        fresh_table(env, "sales_nd")
    text = sql.format(t=table)
    env.ok("alice", text)
    again = env.ok("alice", text)
    assert again["reused_from"] is None


def test_writes_through_sparkgate_recompute(env: Env) -> None:
    table = fresh_table(env, "sales_w")
    count = f"SELECT count(*) AS n FROM {table}"
    assert env.ok("alice", count)["rows"] == [[2]]
    assert env.ok("alice", count)["reused_from"] is not None
    env.ok("alice", f"INSERT INTO {table} VALUES (3, 'c')")
    after_insert = env.ok("alice", count)
    assert after_insert["reused_from"] is None and after_insert["rows"] == [[3]]
    assert env.ok("alice", count)["reused_from"] == after_insert["id"]
    env.ok("alice", f"INSERT OVERWRITE {table} VALUES (9, 'z')")
    after_overwrite = env.ok("alice", count)
    assert after_overwrite["reused_from"] is None and after_overwrite["rows"] == [[1]]
    # Dropped and made again with the same name and shape.
    env.ok("alice", f"DROP TABLE {table}")
    env.ok("alice", f"CREATE TABLE {table} USING parquet AS SELECT 9 AS k, 'z' AS v")
    recreated = env.ok("alice", count)
    assert recreated["reused_from"] is None and recreated["rows"] == [[1]]


def test_a_load_recomputes(env: Env, tmp_path: Path) -> None:
    table = fresh_table(env, "sales_l")
    count = f"SELECT count(*) FROM {table}"
    env.ok("alice", count)
    assert env.ok("alice", count)["reused_from"] is not None
    csv = tmp_path / "more.csv"
    csv.write_text("k,v\n5,e\n6,f\n")
    with env.api("alice") as api:
        loaded = api.post(
            "/v1/tables/reuse_t.sales_l/data",
            params={"format": "csv", "mode": "append", "header": "true", "wait": 60},
            content=csv.read_bytes(),
        )
        assert loaded.status_code in (200, 201), loaded.text
        load_id = loaded.json()["id"]
        deadline = time.monotonic() + 240
        while (state := api.get(f"/v1/queries/{load_id}").json()["state"]) not in {
            "success",
            "failed",
        }:
            assert time.monotonic() < deadline
            time.sleep(0.2)
        assert state == "success"
    after = env.ok("alice", count)
    assert after["reused_from"] is None and after["rows"] == [[4]]


def test_files_written_by_path_outside_sparkgate_recompute(env: Env) -> None:
    table = fresh_table(env, "sales_x")
    count = f"SELECT count(*) FROM {table}"
    env.ok("alice", count)
    assert env.ok("alice", count)["reused_from"] is not None
    # Another Spark (here: pyarrow) adds a file to the table's folder, past sparkgate.
    folder = Path(env.warehouse) / "reuse_t.db" / "sales_x"
    assert folder.is_dir(), sorted(os.listdir(Path(env.warehouse) / "reuse_t.db"))
    pq.write_table(
        pa.table({"k": pa.array([7], pa.int32()), "v": ["g"]}),
        folder / f"part-outside-{uuid.uuid4().hex}.parquet",
    )
    env.ok("alice", f"REFRESH TABLE {table}")  # Spark's own file index, as another writer needs
    after = env.ok("alice", count)
    assert after["reused_from"] is None and after["rows"] == [[3]]


def test_a_user_with_a_row_filter_never_gets_a_result_computed_without_it(env: Env) -> None:
    query = "SELECT region, count(*) FROM reuse_t.sales GROUP BY region ORDER BY region"
    unfiltered = env.ok("alice", query)
    filtered = env.ok("bob", query)
    assert filtered["reused_from"] is None
    assert filtered["rows"] == [["EU", 2]] and unfiltered["rows"] == [["EU", 2], ["US", 1]]
    # dave is under the very same rules (the analysts' filter): he may share bob's result.
    dave = env.ok("dave", query)
    assert dave["reused_from"] == filtered["id"] and dave["rows"] == [["EU", 2]]
    # And alice never gets the filtered one.
    assert env.ok("alice", query)["reused_from"] in {None, unfiltered["id"]}


def test_a_stream_batch_recomputes(env: Env) -> None:
    session_id = env.session("alice")
    env.ok("alice", "DROP TABLE IF EXISTS reuse_t.streamed")
    env.ok("alice", "CREATE TABLE reuse_t.streamed (k BIGINT) USING parquet")
    steps = [
        "CREATE STREAM ticks USING rate OPTIONS ('rowsPerSecond'='20')",
        "CREATE TEMPORARY VIEW ticked AS SELECT value AS k FROM ticks",
    ]
    for step in steps:
        env.ok("alice", step, session_id=session_id)
    save = "SAVE STREAM ticked TO TABLE reuse_t.streamed TRIGGER 1 SECONDS"
    count = "SELECT count(*) FROM reuse_t.streamed"

    def rows() -> int:
        return int(env.ok("alice", count, reuse="false")["rows"][0][0])

    env.ok("alice", save, session_id=session_id)
    deadline = time.monotonic() + 300  # the stream's start and batches, on a busy machine
    while rows() == 0:
        assert time.monotonic() < deadline
        time.sleep(0.5)
    env.ok("alice", "STOP STREAM ticked", session_id=session_id)
    # Once the stopped stream's last batch and progress are in (its version is bumped when
    # its progress is written), a count is reused while nothing writes.
    while True:
        first = env.ok("alice", count)
        if reused(first, env.ok("alice", count)):
            break
        assert time.monotonic() < deadline
        time.sleep(1)
    env.ok("alice", save, session_id=session_id)  # the stream resumes: batches land again
    before = first["rows"][0][0]
    while rows() == before:
        assert time.monotonic() < deadline
        time.sleep(0.5)
    # What was kept before the stream resumed is never served again; a count computed after
    # the latest batch (such as the one just above) may be.
    stale = {first["id"], first["reused_from"]} - {None}
    after = env.ok("alice", count)
    assert after["reused_from"] not in stale and after["rows"][0][0] > before
    env.ok("alice", "STOP STREAM ticked", session_id=session_id)


def test_the_dashboard_says_reused(env: Env) -> None:
    query = "SELECT region FROM reuse_t.sales WHERE amount > 6 ORDER BY region"
    first = env.ok("alice", query)
    again = env.ok("alice", query)
    assert again["reused_from"] == first["id"]
    with httpx.Client(base_url=env.url, timeout=60) as browser:
        signed_in = browser.post(
            "/ui/login", data={"name": "alice", "password": PASSWORDS["alice"], "next": "/ui"}
        )
        assert signed_in.status_code == 303, signed_in.text
        page = browser.get(f"/ui/queries/{again['id']}")
        assert page.status_code == 200, page.text
    assert 'data-testid="query-reused"' in page.text
    assert f'href="/ui/queries/{first["id"]}"' in page.text


def test_a_result_past_its_time_to_live_recomputes(env: Env) -> None:
    query = "SELECT min(amount) FROM reuse_t.sales"
    first = env.ok("alice", query)
    assert env.ok("alice", query)["reused_from"] == first["id"]
    time.sleep(TTL + 1)
    assert env.ok("alice", query)["reused_from"] is None


def test_hiveserver2_reuses_across_connections(env: Env) -> None:
    query = "SELECT region, max(amount) FROM reuse_t.sales GROUP BY region ORDER BY region"
    with env.hive("alice") as conn:
        cursor = conn.cursor()
        cursor.execute(query)
        first_rows = cursor.fetchall()
    first = env.newest("alice")
    # A BI tool's next refresh: a new connection, the same query.
    with env.hive("alice") as conn:
        cursor = conn.cursor()
        cursor.execute(query)
        assert cursor.fetchall() == first_rows == [("EU", 10), ("US", 7)]
    again = env.newest("alice")
    assert again["id"] != first["id"] and again["reused_from"] == first["id"], again


def test_livy_sql_statements_reuse(env: Env) -> None:
    query = "SELECT count(DISTINCT region) AS n FROM reuse_t.sales"
    with env.api("alice") as api:
        made = api.post("/sessions", json={"kind": "sql"}, headers={"X-Requested-By": "t"})
        assert made.status_code == 201, made.text
        session_id = made.json()["id"]
        deadline = time.monotonic() + 240
        while api.get(f"/sessions/{session_id}").json()["state"] != "idle":
            assert time.monotonic() < deadline
            time.sleep(0.2)
        ids = []
        for _ in range(2):
            posted = api.post(f"/sessions/{session_id}/statements", json={"code": query})
            assert posted.status_code == 201, posted.text
            statement = posted.json()
            while statement["state"] not in {"available", "error", "cancelled"}:
                assert time.monotonic() < deadline
                time.sleep(0.1)
                statement = api.get(f"/sessions/{session_id}/statements/{statement['id']}").json()
            assert statement["state"] == "available", statement
            ids.append(env.newest("alice"))
    assert ids[1]["reused_from"] == ids[0]["id"], ids[1]


def test_the_cli_says_nothing_new_and_reuses(env: Env) -> None:
    query = "SELECT sum(amount) FROM reuse_t.sales WHERE region = 'US'"
    first = env.ok("alice", query)
    run = subprocess.run(
        [sys.executable, "-m", "sparkgate.cli.main", "sql", query, "--json", "--server", env.url],
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
        env={**os.environ, "SPARKGATE_USER": "alice", "SPARKGATE_PASSWORD": PASSWORDS["alice"]},
        stdin=subprocess.DEVNULL,
    )
    assert run.returncode == 0, run.stderr
    assert env.newest("alice")["reused_from"] == first["id"]
    forced = subprocess.run(
        [
            sys.executable,
            "-m",
            "sparkgate.cli.main",
            "sql",
            query,
            "--no-reuse",
            "--server",
            env.url,
        ],
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
        env={**os.environ, "SPARKGATE_USER": "alice", "SPARKGATE_PASSWORD": PASSWORDS["alice"]},
        stdin=subprocess.DEVNULL,
    )
    assert forced.returncode == 0, forced.stderr
    assert env.newest("alice")["reused_from"] is None
