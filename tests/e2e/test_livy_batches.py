"""Livy batches (``POST /batches``) of .py and .sql files, through the real ``livy`` client,
each on an engine of its own. The batches start together (their engines start in parallel);
each test then checks one of them."""

from __future__ import annotations

import textwrap
from collections.abc import Iterator
from typing import Any

import httpx
import pytest
from livy.batch import LivyBatch
from livy.models import SessionState

from sparkgate.client import Client
from sparkgate.states import EngineState
from sparkgate_dev import ServerProcess, eventually

SCRIPTS = {
    "ok.py": """
        import sys
        from pyspark.sql import SparkSession

        def main(argv):
            spark = SparkSession.builder.appName("livy-batch").getOrCreate()
            print("name:", __name__)
            print("argv:", argv)
            print("app:", spark.sparkContext.applicationId)
            print("partitions:", spark.conf.get("spark.sql.shuffle.partitions"))
            print("sum:", spark.range(10).selectExpr("sum(id)").first()[0])
            print("to stderr", file=sys.stderr)
            spark.stop()

        if __name__ == "__main__":
            main(sys.argv)
    """,
    "fail.py": """
        print("starting")

        def check(value):
            raise ValueError(f"bad input: {value}")

        check(42)
    """,
    "script.sql": """
        -- a comment; with a semicolon
        CREATE OR REPLACE TEMPORARY VIEW words AS
          SELECT * FROM VALUES ('a;b', 1), ('c', 2) AS t(word, n);
        SELECT count(*) AS words FROM words; /* ; */
        SELECT word, n * 10 AS tens FROM words ORDER BY n
    """,
    "slow.py": """
        from pyspark.sql import SparkSession
        spark = SparkSession.builder.getOrCreate()
        print("started", flush=True)
        spark.range(100000000000).selectExpr("sum(id % 7)").collect()
    """,
}


@pytest.fixture(scope="module")
def batches(server: ServerProcess, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Any]:
    folder = tmp_path_factory.mktemp("livy-batches")
    for name, text in SCRIPTS.items():
        (folder / name).write_text(textwrap.dedent(text))
    started = {
        "ok": LivyBatch.create(
            server.url,
            str(folder / "ok.py"),
            args=["--day", "2024-01-01", "two words"],
            name="nightly",
            spark_conf={"spark.sql.shuffle.partitions": 3},
        ),
        "fail": LivyBatch.create(server.url, f"file://{folder / 'fail.py'}"),
        "sql": LivyBatch.create(server.url, str(folder / "script.sql")),
        "slow": LivyBatch.create(server.url, str(folder / "slow.py")),
    }
    yield started
    for batch in started.values():
        batch.client._client.delete(f"/batches/{batch.batch_id}")


def log_of(batch: LivyBatch) -> list[str]:
    lines: list[str] = batch.log(from_=0, size=-1)
    return lines


def test_python_batch_runs_like_spark_submit(
    server: ServerProcess, batches: Any, sg: Client
) -> None:
    batch = batches["ok"]
    assert batch.wait() is SessionState.SUCCESS
    log = log_of(batch)
    info = batch.client.get_batch(batch.batch_id)
    assert info is not None and info.app_id
    assert log[0] == "stdout: "
    assert "name: __main__" in log
    assert f"argv: ['{batch_path(server, batch)}', '--day', '2024-01-01', 'two words']" in log
    assert f"app: {info.app_id}" in log  # getOrCreate() is the batch's own Spark application
    assert "partitions: 3" in log and "sum: 45" in log
    assert log[log.index("\nstderr: ") + 1 :] == ["to stderr"]  # spark.stop() left quietly
    raw = httpx.get(f"{server.url}/batches/{batch.batch_id}").json()
    assert raw["name"] == "nightly" and raw["log"] == log[-10:]
    assert raw["appInfo"] == {"driverLogUrl": None, "sparkUiUrl": None, "executorLogUrls": None}
    # The same batch through the native API: a batch session and its one statement.
    assert sg.session(batch.batch_id).kind == "batch"
    query = sg.queries(session_id=batch.batch_id).queries[0]
    assert query.kind == "file" and query.state == "success"
    assert query.query.endswith("ok.py --day 2024-01-01 'two words'")


def batch_path(server: ServerProcess, batch: LivyBatch) -> str:
    with server.store() as store:
        statement = store.statements.find_by_seq(batch.batch_id, 0)
    assert statement is not None
    return statement.code.split(" ")[0]


def test_failing_python_batch_is_dead_with_its_traceback(batches: Any, sg: Client) -> None:
    batch = batches["fail"]
    assert batch.wait() is SessionState.DEAD
    log = log_of(batch)
    assert log[:2] == ["stdout: ", "starting"]
    stderr = log[log.index("\nstderr: ") + 1 :]
    assert stderr[0] == "Traceback (most recent call last):"
    assert any(line.strip() == 'raise ValueError(f"bad input: {value}")' for line in stderr)
    assert "ValueError: bad input: 42" in stderr
    assert log[-1] == "[ValueError] bad input: 42"
    query = sg.queries(session_id=batch.batch_id).queries[0]
    assert query.error is not None
    assert query.state == "failed" and query.error.param("ename") == "ValueError"
    # Paging as Livy does: from/size over the same lines.
    page = batch.client.get_batch_log(batch.batch_id, from_=1, size=2)
    assert page is not None and page.lines == log[1:3] and page.total == len(log)


def test_sql_batch_runs_its_statements_in_order(batches: Any, sg: Client) -> None:
    batch = batches["sql"]
    assert batch.wait() is SessionState.SUCCESS
    log = log_of(batch)
    assert [line for line in log if line.startswith("-- statement")] == [
        "-- statement 1 of 3 (line 3): CREATE OR REPLACE TEMPORARY VIEW words AS SELECT * "
        "FROM VALUES ('a;b', 1), ('c', 2) AS t(word, n)",
        "-- statement 2 of 3 (line 5): SELECT count(*) AS words FROM words",
        "-- statement 3 of 3 (line 6): SELECT word, n * 10 AS tens FROM words ORDER BY n",
    ]
    second = log.index("-- statement 2 of 3 (line 5): SELECT count(*) AS words FROM words")
    assert log[second + 1 : second + 4] == ["words", "2", "1 rows"]  # a query's first rows
    # The last statement's rows are the batch's result, pageable through /v1.
    query = sg.queries(session_id=batch.batch_id).queries[0]
    assert sg.result(query.id).rows == [["a;b", 10], ["c", 20]]


def test_killed_batch_stops_its_job_and_engine(server: ServerProcess, batches: Any) -> None:
    batch = batches["slow"]
    eventually(lambda: "started" in log_of(batch), timeout=240, what="the slow batch to start")
    assert batch.state is SessionState.RUNNING
    batch.kill()
    assert batch.state is SessionState.KILLED
    with server.store() as store:
        engine_id = store.sessions.get(batch.batch_id).engine_id
    assert engine_id is not None

    def engine_stopped() -> bool:
        with server.store() as store:
            return store.engines.get(engine_id).state is EngineState.STOPPED

    eventually(engine_stopped, timeout=120, what="the batch's engine to stop")
    assert batch.state is SessionState.KILLED


def test_batches_are_listed(server: ServerProcess, batches: Any) -> None:
    listed = httpx.get(f"{server.url}/batches").json()
    ids = {b["id"] for b in listed["sessions"]}
    assert {b.batch_id for b in batches.values()} <= ids
    assert all(set(b) >= {"id", "state", "appId", "appInfo", "log"} for b in listed["sessions"])
    assert httpx.get(f"{server.url}/sessions/{batches['ok'].batch_id}").status_code == 404
