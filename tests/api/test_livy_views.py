"""Livy's shapes and states, as pure functions of sparkgate's records."""

from __future__ import annotations

import dataclasses
from typing import Any

import pytest
from pydantic import ValidationError

from sparkgate.errors import InvalidRequest
from sparkgate.livy import states, views
from sparkgate.livy.models import CreateBatch, CreateSession
from sparkgate.recorded import RecordedError
from sparkgate.states import SessionKind, SessionState, StatementKind, StatementState
from sparkgate.store.records import SessionRecord, StatementRecord
from sparkgate.store.session_attributes import SessionAttributes

NOW = 1_800_000_000.0

SESSION = SessionRecord(
    5, SessionKind.INTERACTIVE, "etl", SessionState.IDLE, None, {"spark.x": "1"}, None, "ann",
    SessionAttributes(livy={"kind": "pyspark", "driverMemory": "2g", "jars": []}), None, 0, 1,
    NOW, NOW + 1, None, NOW, NOW,
)  # fmt: skip
STATEMENT = StatementRecord(
    41, 5, 3, StatementKind.PYSPARK, "1 + 1", StatementState.SUCCESS, None, None,
    {"data": {"text/plain": "2"}}, 0.5, 3, NOW, NOW + 1, NOW + 2.5, NOW + 2.5,
)  # fmt: skip


@pytest.mark.parametrize(
    ("session", "statement", "livy"),
    [
        (SessionState.NOT_STARTED, None, "starting"),
        (SessionState.STARTING, StatementState.WAITING, "starting"),
        (SessionState.IDLE, StatementState.WAITING, "running"),
        (SessionState.BUSY, StatementState.RUNNING, "running"),
        (SessionState.DEAD, StatementState.SUCCESS, "success"),
        (SessionState.DEAD, StatementState.FAILED, "dead"),
        (SessionState.DEAD, StatementState.CANCELLED, "killed"),
        (SessionState.KILLED, StatementState.CANCELLED, "killed"),
        (SessionState.ERROR, StatementState.FAILED, "dead"),
        (SessionState.DEAD, None, "dead"),
    ],
)
def test_batch_states(session: SessionState, statement: StatementState | None, livy: str) -> None:
    assert states.batch_state(session, statement) == livy


def test_every_state_has_a_livy_state() -> None:
    livy_session_states = {
        "not_started", "starting", "recovering", "idle", "running", "busy", "shutting_down",
        "error", "dead", "killed", "success",
    }  # fmt: skip
    assert {states.interactive_state(s) for s in SessionState} <= livy_session_states
    livy_statement_states = {"waiting", "running", "available", "error", "cancelling", "cancelled"}
    assert {states.statement_state(s) for s in StatementState} <= livy_statement_states


def test_kinds() -> None:
    assert states.session_kind(None) == "shared"
    assert states.session_kind("Python") == "pyspark"
    assert states.statement_kind(None, "sql", 1) is StatementKind.SQL
    assert states.statement_kind("python", "sql", 1) is StatementKind.PYSPARK
    with pytest.raises(InvalidRequest, match="runs no Scala"):
        states.statement_kind("spark", "pyspark", 1)
    with pytest.raises(InvalidRequest, match="give the statement's kind"):
        states.statement_kind(None, "shared", 1)


def test_session_view_has_every_livy_field() -> None:
    view = views.session_view(SESSION, None, [f"line {i}" for i in range(12)]).model_dump()
    assert view["kind"] == "pyspark" and view["state"] == "idle" and view["proxyUser"] == "ann"
    assert view["driverMemory"] == "2g" and view["jars"] == []
    assert view["executorMemory"] is None and view["heartbeatTimeoutInSecond"] is None
    assert view["log"] == [f"line {i}" for i in range(2, 12)]  # the last 10, as Livy
    assert view["appId"] is None and view["conf"] == {"spark.x": "1"}
    assert set(view) == {
        "id", "name", "appId", "owner", "proxyUser", "state", "kind", "appInfo", "log", "ttl",
        "driverMemory", "driverCores", "executorMemory", "executorCores", "conf", "archives",
        "files", "heartbeatTimeoutInSecond", "jars", "numExecutors", "pyFiles", "queue",
    }  # fmt: skip


def test_statement_views() -> None:
    done = views.statement_view(STATEMENT, views.text_data(STATEMENT)).model_dump()
    assert done == {
        "id": 3,
        "code": "1 + 1",
        "state": "available",
        "output": {"status": "ok", "execution_count": 3, "data": {"text/plain": "2"}},
        "progress": 1.0,
        "started": round((NOW + 1) * 1000),
        "completed": round((NOW + 2.5) * 1000),
        "sparkgate": {"query_id": 41},
    }
    running = dataclasses.replace(STATEMENT, state=StatementState.RUNNING, finished_at=None)
    view = views.statement_view(running, None).model_dump()
    assert view["output"] is None and view["progress"] == 0.5 and view["completed"] == 0
    failed = dataclasses.replace(
        STATEMENT,
        state=StatementState.FAILED,
        error=RecordedError("TABLE_OR_VIEW_NOT_FOUND", "no t", {"line": 1}),
    )
    assert views.statement_view(failed, None).model_dump()["output"] == {
        "status": "error",
        "execution_count": 3,
        "ename": "TABLE_OR_VIEW_NOT_FOUND",
        "evalue": "no t",
        "traceback": [],
    }


def test_sql_data_gives_decimals_as_numbers() -> None:
    schema = {
        "type": "struct",
        "fields": [
            {"name": "d", "type": "decimal(10,2)", "nullable": True, "metadata": {}},
            {"name": "w", "type": "decimal(20,0)", "nullable": True, "metadata": {}},
            {"name": "s", "type": "string", "nullable": True, "metadata": {}},
        ],
    }
    data = views.sql_data(schema, [["1.25", "12345678901234567890", "1.5"], [None, None, None]])
    assert data["application/json"]["data"] == [
        [1.25, 12345678901234567890, "1.5"],
        [None, None, None],
    ]


def test_log_paging_follows_livy() -> None:
    lines = [str(i) for i in range(150)]
    assert views.log_page(lines, None, None) == (50, lines[50:])  # the last 100
    assert views.log_page(lines, 0, None) == (0, lines[:100])
    assert views.log_page(lines, 10, 5) == (10, lines[10:15])
    assert views.log_page(lines, None, -1) == (0, lines)
    assert views.log_page([], None, None) == (0, [])


def test_batch_log_has_output_then_the_error() -> None:
    batch = dataclasses.replace(
        SESSION, kind=SessionKind.BATCH, state=SessionState.DEAD, finished_at=NOW + 3
    )
    statement = dataclasses.replace(
        STATEMENT,
        kind=StatementKind.FILE,
        state=StatementState.FAILED,
        output={"stdout": "a\nb\n", "stderr": "boom\n"},
        error=RecordedError("ValueError", "bad"),
    )
    assert views.batch_log(batch, statement) == [
        "stdout: ", "a", "b", "\nstderr: ", "boom", "[ValueError] bad",
    ]  # fmt: skip


def test_resource_fields_become_spark_properties() -> None:
    request = CreateSession.model_validate(
        {
            "kind": "pyspark",
            "driverMemory": "2g",
            "executorCores": "4",
            "numExecutors": 3,
            "pyFiles": ["hdfs:///libs/a.zip"],
            "conf": {"spark.submit.pyFiles": "hdfs:///libs/b.zip", "spark.sql.ansi.enabled": True},
        }
    )
    assert request.spark_conf() == {
        "spark.driver.memory": "2g",
        "spark.executor.cores": "4",
        "spark.executor.instances": "3",
        "spark.submit.pyFiles": "hdfs:///libs/b.zip,hdfs:///libs/a.zip",
        "spark.sql.ansi.enabled": "true",
    }
    fields: dict[str, Any] = request.livy_attributes()
    assert fields["driverMemory"] == "2g" and "conf" not in fields and "name" not in fields
    with pytest.raises(ValidationError, match="driverMemroy"):
        CreateSession.model_validate({"driverMemroy": "1g"})
    batch = CreateBatch.model_validate({"file": "job.py", "args": ["a", 2]})
    assert batch.args == ["a", "2"]
