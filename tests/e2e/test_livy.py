"""The Livy-compatible API, driven by the real ``livy`` client package and by the exact
requests sparkmagic sends, against a real server, real engines and real PySpark."""

from __future__ import annotations

import json
import textwrap
import time
from collections import OrderedDict
from collections.abc import Iterator
from typing import Any

import httpx
import pytest
from livy.client import LivyClient
from livy.models import SessionKind, SessionState, SparkRuntimeError, StatementState
from livy.session import LivySession

from sparkgate.client import Client
from sparkgate_dev import MakeServer, ServerProcess, eventually
from tests.cli.test_cli import sparkgate


@pytest.fixture
def http(server: ServerProcess) -> Iterator[httpx.Client]:
    with httpx.Client(base_url=server.url, timeout=60) as client:
        yield client


def wait_statement(http: httpx.Client, session_id: int, statement_id: int) -> dict[str, Any]:
    def final() -> dict[str, Any] | None:
        statement: dict[str, Any] = http.get(
            f"/sessions/{session_id}/statements/{statement_id}"
        ).json()
        return statement if statement["state"] in {"available", "cancelled"} else None

    return eventually(final, timeout=240, interval=0.1, what=f"statement {statement_id}")


def test_version_and_livy_error_bodies(http: httpx.Client) -> None:
    assert http.get("/version").json()["version"] == "0.9.0-incubating"
    missing = http.get("/sessions/987654")
    assert missing.status_code == 404 and missing.json() == {"msg": "Session 987654 not found."}
    assert http.get("/batches/987654").json() == {"msg": "Batch 987654 not found."}
    assert http.delete("/sessions/987654").status_code == 404
    listed = http.get("/sessions").json()
    assert set(listed) == {"from", "total", "sessions"} and listed["from"] == 0
    assert set(http.get("/batches?from=0&size=5").json()) == {"from", "total", "sessions"}


@pytest.mark.parametrize(
    ("body", "words"),
    [
        ({"kind": "spark"}, "sparkgate runs no Scala code"),
        ({"kind": "sparkr"}, "sparkgate runs no R code"),
        ({"kind": "pyspark3"}, "use 'pyspark'"),
        ({"kind": "cobol"}, "not a Livy kind"),
        ({"kind": "pyspark", "driverMemroy": "1g"}, "driverMemroy"),
    ],
)
def test_bad_session_requests_are_refused_clearly(
    http: httpx.Client, body: dict[str, Any], words: str
) -> None:
    before = http.get("/sessions").json()["total"]
    answer = http.post("/sessions", json=body)
    assert answer.status_code == 400 and words in answer.json()["msg"], answer.json()
    assert http.get("/sessions").json()["total"] == before  # nothing was created


def test_bad_json_and_jvm_batches_are_refused(http: httpx.Client) -> None:
    answer = http.post(
        "/sessions", content=b"{not json", headers={"content-type": "application/json"}
    )
    assert answer.status_code == 400 and "not valid JSON" in answer.json()["msg"]
    jar = http.post("/batches", json={"file": "/apps/etl.jar", "className": "com.acme.Etl"})
    assert jar.status_code == 400
    assert jar.json()["msg"].startswith("Cannot run /apps/etl.jar with className")
    assert http.post("/batches", json={"args": ["x"]}).status_code == 400  # no file


def test_pyspark_session_through_the_livy_client(server: ServerProcess, sg: Client) -> None:
    with LivySession.create(
        server.url, kind=SessionKind.PYSPARK, name="livy-client", echo=False
    ) as session:
        session_id = session.session_id
        assert session.state is SessionState.IDLE
        assert session.run("x = 40\nx + 2").text == "42"
        assert session.run("print('hello')\nx").text == "hello\n40"
        session.run(
            "df = spark.range(4).selectExpr('id', 'id * 2 AS twice', \"concat('r', id) AS label\")"
        )
        frame = session.download("df")
        assert frame.to_dict("records") == [
            {"id": i, "twice": i * 2, "label": f"r{i}"} for i in range(4)
        ]
        # A UDF defined in the session is shipped to the Python workers.
        out = session.run(
            "from pyspark.sql.functions import udf\n"
            "triple = udf(lambda v: v * 3, 'long')\n"
            "[r[0] for r in df.select(triple('id')).collect()]"
        )
        assert out.text == "[0, 3, 6, 9]"
        with pytest.raises(SparkRuntimeError) as raised:
            session.run("spark.sql('SELECT * FROM no_such_table_here')")
        assert raised.value.ename == "AnalysisException"
        assert "no_such_table_here" in (raised.value.evalue or "")
        assert raised.value.traceback and raised.value.traceback[0].startswith("Traceback")
        # Back to idle after each statement, at once.
        assert session.state is SessionState.IDLE

        native = sg.session(session_id)
        assert native.kind == "interactive" and native.state == "idle"
        queries = sg.queries(session_id=session_id).queries
        assert [q.kind for q in queries] == ["pyspark"] * 6  # newest first
        assert queries[-1].query == "x = 40\nx + 2"
        assert queries[-1].output == {"data": {"text/plain": "42"}}
        listed = LivyClient(server.url).list_statements(session_id)
        assert [s.statement_id for s in listed] == list(range(6))
        shown = sparkgate(server, "queries", "show", str(queries[-2].id))
        assert shown.returncode == 0, shown.stderr
        assert "kind: pyspark" in shown.stdout and "output:\nhello\n40" in shown.stdout
    assert sg.session(session_id).state == "killed"  # close() is DELETE


def test_sql_session_download_sql_and_row_limit(
    server: ServerProcess, http: httpx.Client, sg: Client
) -> None:
    limit = server.settings.livy_sql_row_limit
    with LivySession.create(server.url, kind=SessionKind.SQL, echo=False) as session:
        frame = session.download_sql(
            "SELECT id, CAST(id AS DECIMAL(10, 2)) / 4 AS quarter, concat('n', id) AS name "
            "FROM range(3)"
        )
        assert frame.to_dict("records") == [
            {"id": i, "quarter": i / 4, "name": f"n{i}"} for i in range(3)
        ]
        with pytest.raises(SparkRuntimeError) as raised:
            session.download_sql("SELECT nope FROM range(1)")
        assert raised.value.ename == "UNRESOLVED_COLUMN.WITH_SUGGESTION"

        posted = http.post(
            f"/sessions/{session.session_id}/statements",
            json={"code": f"SELECT id FROM range({limit + 5})"},
        )
        assert posted.status_code == 201
        assert posted.headers["location"] == (
            f"/sessions/{session.session_id}/statements/{posted.json()['id']}"
        )
        done = wait_statement(http, session.session_id, posted.json()["id"])
        table = done["output"]["data"]["application/json"]
        assert table["schema"] == {
            "type": "struct",
            "fields": [{"name": "id", "type": "long", "nullable": False, "metadata": {}}],
        }
        assert len(table["data"]) == limit and table["data"][-1] == [limit - 1]
        # The whole result stays pageable through the native API.
        rest = sg.result(done["sparkgate"]["query_id"], offset=limit)
        assert rest.total == limit + 5 and rest.rows == [[limit + i] for i in range(5)]


def test_a_sql_session_creates_and_drops_a_schema(http: httpx.Client) -> None:
    with LivySession.create(
        str(http.base_url).rstrip("/"), kind=SessionKind.SQL, echo=False
    ) as session:
        for sql in (
            "CREATE SCHEMA livy_e2e_schema",
            "CREATE TABLE livy_e2e_schema.t USING parquet AS SELECT 1 AS x",
            "DROP SCHEMA livy_e2e_schema CASCADE",
        ):
            posted = http.post(f"/sessions/{session.session_id}/statements", json={"code": sql})
            assert posted.status_code == 201, posted.text
            done = wait_statement(http, session.session_id, posted.json()["id"])
            assert done["output"]["status"] == "ok", (sql, done["output"])
        assert session.download_sql("SHOW SCHEMAS LIKE 'livy_e2e_*'").empty


def test_shared_session_takes_the_kind_per_statement(http: httpx.Client, sg: Client) -> None:
    created = http.post("/sessions", json={})  # Livy's default kind since 0.5: shared
    assert created.status_code == 201 and created.json()["kind"] == "shared"
    session_id = created.json()["id"]
    try:
        refused = http.post(f"/sessions/{session_id}/statements", json={"code": "1 + 1"})
        assert refused.status_code == 400 and "give the statement's kind" in refused.json()["msg"]
        scala = http.post(
            f"/sessions/{session_id}/statements", json={"code": "1 + 1", "kind": "spark"}
        )
        assert scala.status_code == 400 and "Scala" in scala.json()["msg"]
        python = http.post(
            f"/sessions/{session_id}/statements", json={"code": "1 + 1", "kind": "python"}
        )
        sql = http.post(
            f"/sessions/{session_id}/statements", json={"code": "SELECT 2 AS two", "kind": "sql"}
        )
        assert (python.json()["id"], sql.json()["id"]) == (0, 1)  # numbered per session
        assert wait_statement(http, session_id, 0)["output"]["data"] == {"text/plain": "2"}
        table = wait_statement(http, session_id, 1)["output"]["data"]["application/json"]
        assert table["data"] == [[2]]
        missing = http.get(f"/sessions/{session_id}/statements/99")
        assert missing.status_code == 404 and "Statement 99" in missing.json()["msg"]
    finally:
        assert http.delete(f"/sessions/{session_id}").json() == {"msg": "deleted"}
    assert http.get(f"/sessions/{session_id}/state").json() == {"id": session_id, "state": "killed"}
    late = http.post(f"/sessions/{session_id}/statements", json={"code": "1", "kind": "sql"})
    assert late.status_code == 400 and "killed" in late.json()["msg"]
    assert http.delete(f"/sessions/{session_id}").json() == {"msg": "deleted"}  # again: fine


def test_native_sessions_are_livy_sessions_too(http: httpx.Client, sg: Client) -> None:
    native = sg.create_session()
    sg.wait_session(native.id, {"idle"}, timeout=240)
    livy = http.get(f"/sessions/{native.id}").json()
    assert livy["kind"] == "shared" and livy["state"] == "idle"
    posted = http.post(
        f"/sessions/{native.id}/statements", json={"code": "SELECT 7 AS n", "kind": "sql"}
    ).json()
    done = wait_statement(http, native.id, posted["id"])
    assert sg.result(done["sparkgate"]["query_id"]).rows == [[7]]
    sg.kill_session(native.id)


def test_cancel_a_spark_job_and_a_python_loop(server: ServerProcess) -> None:
    client = LivyClient(server.url)
    with LivySession.create(server.url, kind=SessionKind.PYSPARK, echo=False) as session:
        session_id = session.session_id
        for code in (
            "spark.range(100000000000).selectExpr('sum(id % 7)').collect()",
            "n = 0\nwhile True:\n    n += 1",  # no Spark job to cancel: interrupted
        ):
            statement = client.create_statement(session_id, code)
            eventually(
                lambda s=statement: (  # type: ignore[misc]
                    client.get_statement(session_id, s.statement_id).state is StatementState.RUNNING
                ),
                timeout=120,
            )
            answer = client._client.post(
                f"/sessions/{session_id}/statements/{statement.statement_id}/cancel"
            )
            assert answer == {"msg": "canceled"}
            cancelled = eventually(
                lambda s=statement: (  # type: ignore[misc]
                    current
                    if (current := client.get_statement(session_id, s.statement_id)).state
                    is StatementState.CANCELLED
                    else None
                ),
                timeout=60,
            )
            assert cancelled.output is not None and cancelled.output.ename == "CANCELLED"
            eventually(lambda: session.state is SessionState.IDLE, timeout=30)
        # The session goes on, with what the interrupted loop had done.
        assert session.run("n > 0").text == "True"
        # Cancelling a finished statement changes nothing, as in Livy.
        again = client._client.post(f"/sessions/{session_id}/statements/2/cancel")
        assert again == {"msg": "canceled"}
        finished = client.get_statement(session_id, 2).output
        assert finished is not None and finished.text == "True"
    client.close()


# -- sparkmagic ------------------------------------------------------------------------------

SPARKMAGIC_HEADERS = {"Content-Type": "application/json"}
LONG_RANDOM_VARIABLE_NAME = "yQeKOYBsFgLWWGWZJu3y"  # sparkmagic.utils.constants


def sparkmagic_post(http: httpx.Client, path: str, data: dict[str, Any]) -> httpx.Response:
    # ReliableHttpClient: requests.post(url, headers=..., data=json.dumps(data))
    return http.post(path, content=json.dumps(data), headers=SPARKMAGIC_HEADERS)


def sparkmagic_run(http: httpx.Client, session_id: int, code: str) -> tuple[bool, str]:
    """Command.execute + _get_statement_output, as sparkmagic does them."""
    posted = sparkmagic_post(
        http, f"/sessions/{session_id}/statements", {"code": textwrap.dedent(code)}
    )
    assert posted.status_code == 201, posted.text
    statement_id = posted.json()["id"]
    while True:
        statement = http.get(f"/sessions/{session_id}/statements/{statement_id}").json()
        if statement["state"].lower() in ("error", "cancelled", "available"):
            break
        assert 0.0 <= statement["progress"] <= 1.0
        time.sleep(0.1)
    output = statement["output"]
    if output is None:
        return True, ""
    if output["status"] == "ok":
        return True, output["data"]["text/plain"]
    return False, output["evalue"] + "\n" + "".join(output["traceback"])


def records_to_dataframe_rows(records_text: str) -> list[OrderedDict[str, Any]]:
    """sparkmagic.utils.utils.records_to_dataframe, before pandas."""
    strings = [] if records_text in ("", "[]") else records_text.strip().split("\n")
    return [json.JSONDecoder(object_pairs_hook=OrderedDict).decode(s) for s in strings]


def test_sparkmagic_session_sql_and_send_to_spark(http: httpx.Client) -> None:
    properties = {
        "kind": "pyspark",
        "heartbeatTimeoutInSecond": 60,
        "name": "sparkmagic-test",
        "conf": {"spark.sql.shuffle.partitions": 2},
    }
    created = sparkmagic_post(http, "/sessions", properties)
    assert created.status_code == 201
    session_id = created.json()["id"]
    assert created.json()["heartbeatTimeoutInSecond"] == 60
    assert created.json()["conf"] == {"spark.sql.shuffle.partitions": "2"}
    try:
        # wait_for_idle: GET /sessions/{id}, reading "state" and "log"
        def idle() -> bool:
            info = http.get(f"/sessions/{session_id}").json()
            assert isinstance(info["log"], list)
            return bool(info["state"] == "idle")

        eventually(idle, timeout=240)
        # LivySession.start checks that `spark` exists
        ok, out = sparkmagic_run(http, session_id, "spark")
        assert ok and out.startswith("<pyspark.sql.session.SparkSession object")

        # %%sql -> SQLQuery._pyspark_command (with its maxrows 2500)
        query = "SELECT id, concat('v', id) AS v, id % 2 = 0 AS even FROM range(3)"
        code = (
            f'import sys\nfor {LONG_RANDOM_VARIABLE_NAME} in spark.sql(u"""{query} """)'
            ".toJSON(use_unicode=(sys.version_info.major > 2)).take(2500): "
            f"print({LONG_RANDOM_VARIABLE_NAME})"
        )
        ok, records = sparkmagic_run(http, session_id, code)
        assert ok
        rows = records_to_dataframe_rows(records)
        assert [list(r.items()) for r in rows] == [
            [("id", i), ("v", f"v{i}"), ("even", i % 2 == 0)] for i in range(3)
        ]
        # older sparkmagic: sqlContext, no sys import
        old = (
            f'for {LONG_RANDOM_VARIABLE_NAME} in sqlContext.sql(u"""{query} """).toJSON()'
            f".take(2500): print({LONG_RANDOM_VARIABLE_NAME})"
        )
        assert sparkmagic_run(http, session_id, old) == (True, records)

        # %%send_to_spark -i frame -t df -n sent (SendPandasDfToSparkCommand._pyspark_command)
        pandas_json = '[{"a":1,"b":"x"},{"a":2,"b":"y"}]'
        send = (
            """
        import sys
        import json

        if sys.version_info.major == 2:
            def json_loads_byteified(json_text):
                return _byteify(
                    json.loads(json_text, object_hook=_byteify),
                    ignore_dicts=True
                )
        else:
            def json_loads_byteified(json_text):
                return json.loads(json_text)
    """
            + f"""
        json_array = json_loads_byteified('{pandas_json}')
        rdd_json_array = spark.sparkContext.parallelize(json_array)
        sent = spark.read.json(rdd_json_array)"""
        )
        assert sparkmagic_run(http, session_id, send) == (True, "")
        ok, count = sparkmagic_run(http, session_id, "sent.orderBy('a').collect()")
        assert ok and count == "[Row(a=1, b='x'), Row(a=2, b='y')]"

        ok, message = sparkmagic_run(http, session_id, "1 / 0")
        assert not ok and message.startswith("division by zero\nTraceback")
        assert message.rstrip().endswith("ZeroDivisionError: division by zero")

        logs = http.get(f"/sessions/{session_id}/log?from=0").json()  # get_all_session_logs
        assert logs["id"] == session_id and logs["from"] == 0 and logs["log"]
        listed = http.get("/sessions").json()["sessions"]
        assert any(s["id"] == session_id and s["kind"] == "pyspark" for s in listed)
    finally:
        assert http.delete(f"/sessions/{session_id}").status_code == 200


def test_sessions_and_statements_survive_a_server_restart(server: ServerProcess) -> None:
    client = LivyClient(server.url)
    with LivySession.create(server.url, kind=SessionKind.PYSPARK, echo=False) as session:
        session.run("kept = 6 * 7")
        server.stop()
        server.start()
        assert session.state is SessionState.IDLE
        assert [s.code for s in client.list_statements(session.session_id)] == ["kept = 6 * 7"]
        # Same engine, same namespace: Livy's own recovery could not keep this.
        assert session.run("kept").text == "42"
    client.close()


def test_csrf_header_is_required_when_switched_on(make_server: MakeServer) -> None:
    # No engines: the check happens before anything would need one.
    server = make_server(shared_engine=False, warm_engines=0, livy_csrf_protection=True)
    with httpx.Client(base_url=server.url, timeout=30) as http:
        refused = http.post("/batches", json={"file": "job.jar"})
        assert refused.status_code == 400
        assert refused.json() == {"msg": "Missing Required Header for CSRF protection."}
        assert http.delete("/sessions/1").json()["msg"].startswith("Missing Required Header")
        # With the header the request gets through (and is judged on its merits).
        passed = http.post(
            "/batches", json={"file": "job.jar"}, headers={"X-Requested-By": "airflow"}
        )
        assert passed.status_code == 400 and passed.json()["msg"].startswith("Cannot run job.jar")
        assert http.get("/sessions").status_code == 200  # reads need no header
