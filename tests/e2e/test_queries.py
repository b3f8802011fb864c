"""Queries through real HTTP, a real server process, real engines and real PySpark."""

from __future__ import annotations

import http.client
import json
import time
import uuid
from dataclasses import asdict
from typing import Any

import httpx
from prometheus_client.parser import text_string_to_metric_families

from sparkgate.client import Client
from sparkgate.schemas.common import iso
from sparkgate.schemas.queries import Query, WaitedQuery
from sparkgate.statement_cost import COST_COLUMNS
from sparkgate_dev import ServerProcess, eventually
from tests.e2e.conftest import OpenSession, livy_output, run, wait_idle


def test_submit_long_poll_and_read(sg: Client, interactive: OpenSession) -> None:
    session = interactive()
    submitted = sg.submit("SELECT id, id * 2 AS twice FROM range(5)", session_id=session.id)
    assert submitted.state == "waiting" and submitted.session_id == session.id
    # One long-poll call returns the final state: no polling loop in the client.
    done = sg.query(submitted.id, wait=120)
    assert done.state == "success", done
    assert done.result is not None
    assert done.result.model_dump(by_alias=True) == {
        "schema": [{"name": "id", "type": "bigint"}, {"name": "twice", "type": "bigint"}],
        "row_count": 5,
    }
    assert done.started_at is not None and done.finished_at is not None
    assert done.created_at <= done.started_at <= done.finished_at
    assert done.error is None and done.progress == 1.0
    page = sg.result(submitted.id)
    assert page.rows == [[i, i * 2] for i in range(5)]
    assert (page.total, page.offset) == (5, 0)
    wait_idle(sg, session.id)  # back to idle after the statement


def test_submit_with_wait_answers_in_one_request(sg: Client, interactive: OpenSession) -> None:
    session = interactive()
    done = sg.submit("SELECT id FROM range(5)", session_id=session.id, wait=120, limit=3)
    assert isinstance(done, WaitedQuery) and done.result is not None, done
    assert done.state == "success" and done.result.row_count == 5, done
    assert done.page.model_dump(by_alias=True) == {
        "schema": [{"name": "id", "type": "bigint"}],
        "rows": [[0], [1], [2]],
        "offset": 0,
        "limit": 3,
        "total": 5,
    }
    failed = sg.submit("SELECT nope", session_id=session.id, wait=120)
    assert isinstance(failed, Query) and not isinstance(failed, WaitedQuery)
    assert failed.state == "failed" and failed.error is not None
    assert failed.error.code.startswith("UNRESOLVED_COLUMN"), failed
    # Not final within the wait: the query as it is, to long-poll as usual.
    slow = sg.submit("SELECT sum(id % 7) FROM range(100000000000)", session_id=session.id, wait=0.5)
    assert slow.state in {"waiting", "running"} and not isinstance(slow, WaitedQuery)
    sg.cancel(slow.id)
    assert sg.wait(slow.id, timeout=120).state == "cancelled"


def test_long_poll_returns_at_timeout_for_a_running_query(
    sg: Client, interactive: OpenSession
) -> None:
    session = interactive()
    submitted = sg.submit("SELECT sum(id % 7) FROM range(100000000000)", session_id=session.id)
    started = time.monotonic()
    current = sg.query(submitted.id, wait=1.5)
    assert current.state in {"waiting", "running"}
    assert time.monotonic() - started >= 1.4
    sg.cancel(submitted.id)


def test_query_without_session_runs_as_a_one_off_on_the_shared_engine(sg: Client) -> None:
    done = run(sg, "SELECT 'one-off' AS kind")
    assert done.state == "success", done
    session = sg.session(done.session_id)
    assert session.kind == "batch" and session.state == "dead"  # ended with its query
    assert sg.result(done.id).rows == [["one-off"]]
    engine = sg._call("GET", f"/v1/engines/{session.engine_id}")
    assert engine["kind"] == "shared"  # no driver of its own

    # A fresh Spark session each: one query's temporary views and settings are gone after it.
    assert run(sg, "CREATE TEMPORARY VIEW one_off_view AS SELECT 1 AS n").state == "success"
    gone = run(sg, "SELECT n FROM one_off_view")
    assert gone.error is not None
    assert gone.state == "failed" and gone.error.code == "TABLE_OR_VIEW_NOT_FOUND"
    assert run(sg, "SET spark.sql.ansi.enabled=false").state == "success"
    strict = run(sg, "SELECT CAST('x' AS INT)")
    assert strict.state == "failed", strict  # ANSI is on again in the next one

    # Runtime SQL settings come with the query; driver settings ask for an engine of its own.
    loose = sg.submit("SELECT CAST('x' AS INT) AS n", conf={"spark.sql.ansi.enabled": "false"})
    assert sg.wait(loose.id, timeout=120).state == "success"
    assert sg.result(loose.id).rows == [[None]]
    own = sg.submit("SELECT 1", isolation="engine")
    assert sg.wait(own.id, timeout=300).state == "success"
    own_engine = sg.session(own.session_id).engine_id
    assert sg._call("GET", f"/v1/engines/{own_engine}")["kind"] == "dedicated"


def test_hundred_thousand_rows_are_paged(sg: Client, interactive: OpenSession) -> None:
    session = interactive()
    done = run(
        sg,
        "SELECT id, concat('row-', id) AS label FROM range(100000) ORDER BY id DESC",
        session.id,
    )
    assert done.result is not None
    assert done.state == "success" and done.result.row_count == 100_000
    ids: list[int] = []
    offset = 0
    while True:
        page = sg.result(done.id, offset=offset, limit=10_000)
        assert page.total == 100_000 and page.limit == 10_000
        if not page.rows:
            break
        ids.extend(row[0] for row in page.rows)
        assert all(row[1] == f"row-{row[0]}" for row in page.rows)
        offset += len(page.rows)
    assert ids == list(range(99_999, -1, -1))


def test_session_reuse_and_isolation(sg: Client, interactive: OpenSession) -> None:
    first, second = interactive(), interactive()
    created = run(sg, "CREATE TEMPORARY VIEW mine AS SELECT 41 + 1 AS answer", first.id)
    assert created.state == "success", created
    seen = run(sg, "SELECT answer FROM mine", first.id)
    assert seen.state == "success" and sg.result(seen.id).rows == [[42]]
    unseen = run(sg, "SELECT answer FROM mine", second.id)
    assert unseen.state == "failed"
    assert unseen.error is not None
    assert unseen.error.code == "TABLE_OR_VIEW_NOT_FOUND"
    # SQL settings are per session too
    run(sg, "SET spark.sql.ansi.enabled=false", second.id)
    lenient = run(sg, "SELECT 1/0 AS x", second.id)
    strict = run(sg, "SELECT 1/0 AS x", first.id)
    assert lenient.state == "success" and strict.state == "failed"


def test_table_created_by_a_batch_is_readable_in_a_session(
    sg: Client, interactive: OpenSession
) -> None:
    table = f"t_{uuid.uuid4().hex[:8]}"
    created = run(sg, f"CREATE TABLE {table} USING parquet AS SELECT id FROM range(1234)")
    assert created.state == "success", created
    assert sg.session(created.session_id).kind == "batch"
    session = interactive()
    counted = run(sg, f"SELECT count(*) AS n FROM {table}", session.id)
    assert counted.state == "success", counted
    assert sg.result(counted.id).rows == [[1234]]
    # Without table rules, what each query read and wrote is recorded all the same, and the
    # catalog lists them as the table's recent queries.
    name = f"spark_catalog.default.{table}"
    assert created.output is not None
    assert created.output["tables"] == {"read": [], "written": [name]}, created.output
    assert counted.output is not None
    assert counted.output["tables"] == {"read": [name], "written": []}, counted.output
    detail = sg.table(table)
    recent = {(q.id, q.access) for q in detail.recent_queries}
    assert {(created.id, "write"), (counted.id, "read")} <= recent, detail
    assert detail.preview is not None
    assert detail.size_bytes is not None and detail.size_bytes > 0, detail
    assert detail.preview.total == 20, detail


def test_sql_errors_carry_class_message_and_position(sg: Client, interactive: OpenSession) -> None:
    session = interactive()
    parse = run(sg, "SELECT 1,\nFROM x WHERE", session.id)
    assert parse.state == "failed"
    assert parse.error is not None
    assert parse.error.code == "PARSE_SYNTAX_ERROR" and parse.error.param("line") == 2
    analysis = run(sg, "SELECT nope FROM range(3)", session.id)
    assert analysis.error is not None
    assert analysis.error.code == "UNRESOLVED_COLUMN.WITH_SUGGESTION"
    assert (analysis.error.param("line"), analysis.error.param("position")) == (1, 8)
    assert "nope" in analysis.error.message
    runtime = run(sg, "SELECT 10 / (id - 3) FROM range(10)", session.id)
    assert runtime.error is not None
    assert runtime.error.code == "DIVIDE_BY_ZERO"
    wait_idle(sg, session.id)  # errors do not hurt the session


def test_cancel_interrupts_a_long_query(sg: Client, interactive: OpenSession) -> None:
    session = interactive()
    submitted = sg.submit("SELECT sum(id % 7) FROM range(100000000000)", session_id=session.id)
    eventually(lambda: sg.query(submitted.id).state == "running", timeout=60)
    time.sleep(1)  # let Spark jobs start, so the cancel has something to interrupt
    response = httpx.post(f"{sg.server}/v1/queries/{submitted.id}/cancel")
    assert response.status_code == 202
    assert response.json()["state"] in {"cancelling", "cancelled"}
    started = time.monotonic()
    done = sg.wait(submitted.id, timeout=60)
    assert done.state == "cancelled", done
    assert time.monotonic() - started < 15
    assert done.error is not None
    assert done.error.code == "CANCELLED"
    # The session goes on: the next query runs at once.
    after = run(sg, "SELECT 1 AS still_here", session.id)
    assert after.state == "success"
    assert httpx.post(f"{sg.server}/v1/queries/{submitted.id}/cancel").status_code == 409


def test_cancel_of_a_waiting_query_is_immediate(sg: Client, interactive: OpenSession) -> None:
    session = interactive()
    blocker = sg.submit("SELECT sum(id % 7) FROM range(100000000000)", session_id=session.id)
    queued = sg.submit("SELECT 1", session_id=session.id)
    assert sg.cancel(queued.id).state == "cancelled"
    sg.cancel(blocker.id)
    assert sg.wait(blocker.id, timeout=60).state == "cancelled"


def test_killing_a_session_cancels_its_running_query(sg: Client, interactive: OpenSession) -> None:
    session = interactive()
    submitted = sg.submit("SELECT sum(id % 7) FROM range(100000000000)", session_id=session.id)
    eventually(lambda: sg.query(submitted.id).state == "running", timeout=60)
    killed = sg.kill_session(session.id)
    assert killed.state == "killed"
    assert sg.wait(submitted.id, timeout=60).state == "cancelled"
    assert sg.kill_session(session.id).state == "killed"  # idempotent


def test_listing_filters_and_pages(sg: Client, interactive: OpenSession) -> None:
    session = interactive()
    ids = [run(sg, f"SELECT {i}", session.id).id for i in range(3)]
    listed = sg.queries(session_id=session.id)
    assert [q.id for q in listed.queries] == ids[::-1] and listed.total == 3
    page = sg.queries(session_id=session.id, offset=1, limit=1)
    assert [q.id for q in page.queries] == [ids[1]]
    failed = sg.queries(session_id=session.id, state=["failed"])
    assert failed.total == 0
    idle = sg.sessions(state=["idle"])
    assert session.id in [s.id for s in idle.sessions]


def test_lists_page_by_cursor(server: ServerProcess, sg: Client, interactive: OpenSession) -> None:
    session = interactive()
    ids = [sg.submit(f"SELECT {i}", session_id=session.id).id for i in range(5)]
    first = sg.queries(session_id=session.id, limit=2)
    assert [q.id for q in first.queries] == ids[:2:-1]
    assert (first.total, first.offset, first.next) == (5, 0, str(ids[3]))
    second = sg.queries(session_id=session.id, limit=2, after=first.next)
    assert [q.id for q in second.queries] == ids[2:0:-1]
    # No count past the first page unless asked; no offset: a cursor page has no position.
    assert (second.total, second.offset) == (None, None)
    # A query arriving meanwhile shifts nothing: the cursor, not a position, marks the page.
    sg.submit("SELECT 5", session_id=session.id)
    last = sg.queries(session_id=session.id, limit=2, after=second.next, total=True)
    assert [q.id for q in last.queries] == ids[:1]
    assert (last.next, last.total) == (None, 6)
    assert run(sg, "SELECT 6", session.id).state == "success"

    seen: list[int] = []
    after = None
    while len(seen) < 3:  # sessions, oldest first, one a page
        page = sg.sessions(limit=1, after=after)
        seen += [s.id for s in page.sessions]
        if page.next is None:
            break
        after = page.next
    assert seen == sorted(set(seen))
    url = f"{server.url}/v1/queries"
    for params, message in (
        ({"after": "abc"}, "not a cursor"),
        ({"after": "3", "offset": "10"}, "not both"),
    ):
        refused = httpx.get(url, params=params)
        assert refused.status_code == 422, refused.text
        error = refused.json()["error"]
        assert error["field"] == "after" and message in error["message"]


def test_bad_requests_get_clear_errors(
    server: ServerProcess, sg: Client, interactive: OpenSession
) -> None:
    url = server.url

    def error(response: httpx.Response) -> dict[str, Any]:
        body: dict[str, Any] = response.json()["error"]
        return body

    missing = httpx.get(f"{url}/v1/queries/987654")
    assert missing.status_code == 404 and error(missing)["code"] == "QUERY_NOT_FOUND"
    missing = httpx.delete(f"{url}/v1/sessions/987654")
    assert missing.status_code == 404 and error(missing)["code"] == "SESSION_NOT_FOUND"
    bad_json = httpx.post(
        f"{url}/v1/queries", content=b"{not json", headers={"content-type": "application/json"}
    )
    assert bad_json.status_code == 422 and "not valid JSON" in error(bad_json)["message"]
    no_query = httpx.post(f"{url}/v1/queries", json={"session_id": 1})
    assert no_query.status_code == 422 and error(no_query)["fields"][0]["field"] == "query"
    unknown_field = httpx.post(f"{url}/v1/queries", json={"query": "SELECT 1", "sesion_id": 1})
    assert unknown_field.status_code == 422 and "sesion_id" in error(unknown_field)["message"]
    bad_kind = httpx.post(f"{url}/v1/sessions", json={"kind": "streaming-ish"})
    assert bad_kind.status_code == 422 and error(bad_kind)["fields"][0]["field"] == "kind"
    blank = httpx.post(f"{url}/v1/queries", json={"query": "   "})
    assert blank.status_code == 422
    bad_page = httpx.get(f"{url}/v1/queries", params={"limit": -1})
    assert bad_page.status_code == 422 and error(bad_page)["fields"][0]["field"] == "query.limit"
    no_session = httpx.post(f"{url}/v1/queries", json={"query": "SELECT 1", "session_id": 987654})
    assert no_session.status_code == 404
    bad_isolation = httpx.post(f"{url}/v1/queries", json={"query": "SELECT 1", "isolation": "vm"})
    assert bad_isolation.status_code == 422
    assert error(bad_isolation)["fields"][0]["field"] == "isolation"

    session = interactive()
    failed = run(sg, "SELECT nope", session.id)
    not_ready = httpx.get(f"{url}/v1/queries/{failed.id}/result")
    assert not_ready.status_code == 409 and error(not_ready)["code"] == "RESULT_NOT_AVAILABLE"
    sg.kill_session(session.id)
    ended = httpx.post(f"{url}/v1/queries", json={"query": "SELECT 1", "session_id": session.id})
    assert ended.status_code == 409 and error(ended)["code"] == "SESSION_NOT_ACTIVE"
    assert httpx.get(f"{url}/no/such/route").status_code == 404


def test_idle_connections_are_kept_longer_than_clients_poll(server: ServerProcess) -> None:
    """Clients that poll every few seconds (the livy client: 5 s) reuse their connection; the
    server must not close it under them (a reset there fails the client's call)."""
    connection = http.client.HTTPConnection("127.0.0.1", server.port, timeout=30)
    try:
        connection.request("GET", "/healthz")
        response = connection.getresponse()
        assert response.status == 200
        response.read()
        time.sleep(6)
        sock = connection.sock
        connection.request("GET", "/healthz")
        assert connection.getresponse().status == 200
        assert connection.sock is sock  # the same connection, not a reconnect
    finally:
        connection.close()


def test_health_and_metrics(sg: Client) -> None:
    health = sg.health()
    assert health.status == "ok" and health.store == "sqlite"
    metrics = httpx.get(f"{sg.server}/metrics")
    assert metrics.status_code == 200
    # The store's figures, labelled as the cluster's (every node serves the same ones).
    engines = {
        (s.labels["scope"], s.labels["kind"], s.labels["state"]): s.value
        for family in text_string_to_metric_families(metrics.text)
        if family.name == "sparkgate_engines"
        for s in family.samples
    }
    assert engines[("cluster", "shared", "running")] == 1
    assert "sparkgate_queries{" in metrics.text and "sparkgate_sessions{" in metrics.text


def test_schemas_are_created_and_dropped(sg: Client, interactive: OpenSession) -> None:
    """dbt drops its schema after every run: an empty one, and one holding tables (CASCADE)."""
    session = interactive().id
    for sql in (
        "CREATE SCHEMA e2e_empty_schema",
        "DROP SCHEMA e2e_empty_schema",
        "CREATE DATABASE IF NOT EXISTS e2e_full_schema",
        "CREATE TABLE e2e_full_schema.t USING parquet AS SELECT 1 AS x",
        "DROP SCHEMA IF EXISTS e2e_full_schema CASCADE",
        "DROP DATABASE IF EXISTS e2e_never_made",
    ):
        done = run(sg, sql, session)
        assert done.state == "success", (sql, done)
    shown = run(sg, "SHOW SCHEMAS LIKE 'e2e_*'", session)
    assert sg.result(shown.id).rows == []


# A Python statement that reads Spark's own figures for a statement's jobs (by its job tag)
# from the driver's status store, as Spark's UI and REST API show them, and prints them.
_SPARKS_OWN_COST = """
import json
context = spark.sparkContext._jsc.sc()
context.listenerBus().waitUntilEmpty()  # the status store's queue has delivered every event
status = context.statusStore()

def items(seq):
    return [seq.apply(i) for i in range(seq.size())]

stage_ids = set()
for job in items(status.jobsList(None)):
    if "sparkgate-statement-%d" in items(job.jobTags()):
        stage_ids.update(items(job.stageIds()))
own = dict.fromkeys(%r, 0)
quantiles = getattr(status, "stageList$default$4")()
for stage in items(status.stageList(None, False, False, quantiles, None)):
    if stage.stageId() not in stage_ids or stage.status().toString() == "SKIPPED":
        continue  # another job of the query ran it
    own["tasks"] += stage.numCompleteTasks() + stage.numFailedTasks() + stage.numKilledTasks()
    own["executor_run_time_ms"] += stage.executorRunTime()
    own["executor_cpu_time_ns"] += stage.executorCpuTime()
    own["input_bytes"] += stage.inputBytes()
    own["input_records"] += stage.inputRecords()
    own["output_bytes"] += stage.outputBytes()
    own["output_records"] += stage.outputRecords()
    own["shuffle_read_bytes"] += stage.shuffleReadBytes()
    own["shuffle_write_bytes"] += stage.shuffleWriteBytes()
    own["memory_bytes_spilled"] += stage.memoryBytesSpilled()
    own["disk_bytes_spilled"] += stage.diskBytesSpilled()
    for task in items(status.taskList(stage.stageId(), stage.attemptId(), 1000000)):
        if task.taskMetrics().isDefined():
            peak = task.taskMetrics().get().peakExecutionMemory()
            own["peak_execution_memory"] = max(own["peak_execution_memory"], peak)
print(json.dumps(own))
"""


def test_an_ended_query_says_what_its_spark_tasks_cost_as_spark_counts_it(
    sg: Client, interactive: OpenSession
) -> None:
    """A query's cost (``GET /v1/queries/{id}``) equals Spark's own figures for its jobs,
    read from the same driver's status store: a shuffle, a table written, a table read, and
    a query that failed in its tasks. Lists leave it out."""
    session = interactive().id
    livy = httpx.Client(base_url=sg.server, timeout=60)
    reader = livy.post("/sessions", json={"kind": "pyspark"}).json()["id"]
    try:
        eventually(
            lambda: livy.get(f"/sessions/{reader}").json()["state"] == "idle",
            timeout=240,
            what="the PySpark session idle",
        )
        queries = {
            "shuffle": "SELECT id % 7 AS k, count(*) AS n FROM range(200000) GROUP BY k",
            "write": "CREATE TABLE e2e_costs USING parquet AS "
            "SELECT id, id * 2 AS twice FROM range(50000)",
            "read": "SELECT sum(twice) FROM e2e_costs WHERE id > 10",
            "failed": "SELECT assert_true(id < 10) FROM range(100)",
        }
        began = time.time()
        ended = {name: run(sg, sql, session) for name, sql in queries.items()}
        assert [q.state for q in ended.values()] == ["success"] * 3 + ["failed"], ended
        recorded = {name: sg.query(query.id).cost for name, query in ended.items()}
        costs = {name: asdict(cost) for name, cost in recorded.items() if cost is not None}
        for name, query in ended.items():
            code = _SPARKS_OWN_COST % (query.id, COST_COLUMNS)
            assert costs.get(name) == json.loads(livy_output(livy, reader, code)), name
            assert costs[name]["tasks"] > 0, name
        assert costs["shuffle"]["shuffle_write_bytes"] > 0
        assert costs["shuffle"]["executor_cpu_time_ns"] > 0
        assert costs["shuffle"]["input_records"] == 200000
        assert costs["write"]["output_records"] == 50000 and costs["write"]["output_bytes"] > 0
        assert costs["read"]["input_bytes"] > 0
        # A listing shows none (one store read per page, not one per query).
        listed = sg.queries(session_id=session).queries
        assert listed and all(q.cost is None for q in listed)
        # Usage since then: exactly the sum of the costs of the queries that ended since.
        # (A query's cost is recorded at its end, in the transaction that sets finished_at.)
        shown = [sg.query(q.id) for q in sg.queries(limit=1000).queries]
        start = iso(began)
        assert start is not None
        covered = [
            asdict(q.cost) for q in shown if q.cost and q.finished_at and q.finished_at >= start
        ]
        assert len(covered) >= len(queries)
        rows = sg.usage(since=began).rows
        assert len(rows) == 1  # one user: this server has no authentication
        for figure in ("tasks", "executor_cpu_time_ns", "input_bytes", "shuffle_write_bytes"):
            assert asdict(rows[0].cost)[figure] == sum(c[figure] for c in covered), figure
        assert rows[0].queries == len(covered)
    finally:
        run(sg, "DROP TABLE IF EXISTS e2e_costs", session)
        livy.delete(f"/sessions/{reader}")
        livy.close()
