"""Batch files: .py scripts run as spark-submit would, .sql scripts split and run in order."""

from __future__ import annotations

import sys
import threading
import time
from pathlib import Path
from typing import Any, cast

import pytest

from sparkgate.engine.batch_files import (
    local_path,
    parse_command,
    read_source,
    run_python_script,
    run_sql_script,
)
from sparkgate.engine.sql_script import SqlPiece, shift_error, split_sql
from sparkgate.runtime.contract import ExecutionContext
from sparkgate.runtime.failures import DescribedError
from sparkgate.runtime.session import OpenSession
from sparkgate.settings import Settings
from sparkgate.states import SessionKind, SessionState, StatementKind, StatementState
from sparkgate.store import Store
from sparkgate.store.records import SessionRecord, StatementRecord
from sparkgate.store.session_attributes import SessionAttributes


def test_split_sql_respects_strings_comments_and_quotes() -> None:
    script = (
        "-- setup; first\n"
        "CREATE VIEW v AS SELECT ';' AS s, `a;b` FROM t;;\n"
        '/* ; */ SELECT "x;y" AS q; SELECT 1\n'
        ";\n"
    )
    pieces = split_sql(script)
    assert [(p.text, p.line, p.column) for p in pieces] == [
        ("CREATE VIEW v AS SELECT ';' AS s, `a;b` FROM t", 2, 0),
        ('SELECT "x;y" AS q', 3, 8),
        ("SELECT 1", 3, 27),
    ]
    assert all(script[p.offset :].startswith(p.text) for p in pieces)
    assert split_sql("-- nothing here;\n  ;  ") == []


def test_unterminated_string_is_a_clear_failure() -> None:
    with pytest.raises(DescribedError) as raised:
        split_sql("SELECT 'open")
    assert raised.value.recorded.to_json()["code"] == "SQL_SCRIPT_INVALID"


def test_errors_point_at_lines_of_the_script() -> None:
    piece = SqlPiece("SELECT\n  nope", line=7, offset=100, column=4)
    shifted = shift_error({"line": 2, "position": 3, "start_index": 9, "stop_index": 12}, piece, 2)
    assert shifted == {
        "line": 8,
        "position": 3,
        "start_index": 109,
        "stop_index": 112,
        "statement": 2,
        "statement_line": 7,
    }
    first_line = shift_error({"line": 1, "position": 8}, piece, 1)
    assert (first_line["line"], first_line["position"]) == (7, 12)  # column of the piece added


def test_command_lines_and_paths() -> None:
    assert parse_command("/jobs/etl.py --day 'two words'") == (
        "/jobs/etl.py",
        ["--day", "two words"],
    )
    assert local_path("/a/b.py") == Path("/a/b.py")
    assert local_path("file:///a/b.py") == Path("/a/b.py")
    assert local_path("local:/a/b.py") == Path("/a/b.py")
    assert local_path("relative/b.sql") == Path("relative/b.sql")
    assert local_path("hdfs://nn:8020/a/b.py") is None


def test_missing_file_says_where_it_was_looked_for(tmp_path: Path) -> None:
    with pytest.raises(DescribedError) as raised:
        read_source(None, str(tmp_path / "missing.py"))
    error = raised.value.recorded.to_json()
    assert error["code"] == "BATCH_FILE_UNREADABLE"
    assert "missing.py cannot be read by the engine on" in error["message"]


def test_script_runs_as_main_with_argv(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "job.py"
    (tmp_path / "helper.py").write_text("VALUE = 'from a sibling module'\n")
    argv_before = list(sys.argv)
    run_python_script(
        str(path),
        "import sys\nimport helper\nprint(__name__, sys.argv[1:], helper.VALUE)\n",
        ["a", "b c"],
    )
    assert capsys.readouterr().out == "__main__ ['a', 'b c'] from a sibling module\n"
    assert sys.argv == argv_before and str(tmp_path) not in sys.path


@pytest.mark.parametrize(
    ("source", "expected"),
    [
        ("import sys\nsys.exit(0)", None),
        ("import sys\nsys.exit()", None),
        ("import sys\nsys.exit(3)", 3),
        ("import sys\nsys.exit('bad things')", 1),
    ],
)
def test_exit_status_decides(source: str, expected: int | None, tmp_path: Path) -> None:
    if expected is None:
        run_python_script(str(tmp_path / "x.py"), source, [])
        return
    with pytest.raises(DescribedError) as raised:
        run_python_script(str(tmp_path / "x.py"), source, [])
    assert raised.value.recorded.to_json()["exit_status"] == expected


def test_script_error_has_the_script_traceback(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = str(tmp_path / "boom.py")
    with pytest.raises(DescribedError) as raised:
        run_python_script(path, "def f():\n    return {}['k']\n\nf()\n", [])
    error = raised.value.recorded.to_json()
    assert error["ename"] == "KeyError" and error["code"] == "KeyError"
    assert error["traceback"][1].startswith(f'  File "{path}", line 4')
    assert "batch_files" not in "".join(error["traceback"])
    assert capsys.readouterr().err == "".join(error["traceback"])  # as python prints it


def _sql_context(spark: Any, tmp_path: Path) -> ExecutionContext:
    now = time.time()
    session = SessionRecord(
        1, SessionKind.BATCH, None, SessionState.BUSY, 1, {}, None, None, SessionAttributes(),
        None, 1, 1,
        now, now, None, now, now,
    )  # fmt: skip
    statement = StatementRecord(
        7, 1, 0, StatementKind.FILE, "script.sql", StatementState.RUNNING, None, None, None,
        0.0, 1, now, now, None, now,
    )  # fmt: skip
    return ExecutionContext(
        OpenSession(session, spark.newSession()),
        statement,
        Settings(home=tmp_path, results_dir=tmp_path / "results"),
        cast(Store, None),  # SQL scripts do not touch the store
        1,
        threading.Event(),
    )


@pytest.mark.spark
def test_sql_script_runs_in_order_and_keeps_the_last_result(
    spark: Any, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from sparkgate.results import read_page

    ctx = _sql_context(spark, tmp_path)
    script = (
        "CREATE TEMPORARY VIEW nums AS SELECT id FROM range(30);\n"
        "SELECT id FROM nums;\n"
        "SELECT count(*) AS n FROM nums"
    )
    result = run_sql_script(ctx, script)
    assert result is not None and result.row_count == 1
    assert result.path is not None
    assert read_page(result.path, 0, 10)[0] == [[30]]
    out = capsys.readouterr().out
    assert "-- statement 2 of 3 (line 2): SELECT id FROM nums\nid\n0\n" in out
    assert "20 rows (more not shown)" in out


@pytest.mark.spark
def test_sql_script_failure_names_statement_and_line(spark: Any, tmp_path: Path) -> None:
    ctx = _sql_context(spark, tmp_path)
    with pytest.raises(DescribedError) as raised:
        run_sql_script(ctx, "SELECT 1;\n\nSELECT 2; SELECT nope\nFROM range(1)")
    error = raised.value.recorded.to_json()
    assert error["code"].startswith("UNRESOLVED_COLUMN")
    assert (error["statement"], error["line"], error["position"]) == (3, 3, 18)
    assert error["message"].startswith("Statement 3 of 3 (line 3, position 18) failed:")


class _Audit:
    def __init__(self) -> None:
        self.events: list[tuple[str, str, str | None, str | None]] = []

    def add(self, action: str, outcome: str, *, user: str | None, **more: Any) -> None:
        self.events.append((action, outcome, user, more.get("target")))


def test_a_sql_script_setting_a_denied_key_is_refused_before_its_first_statement(
    tmp_path: Path,
) -> None:
    now = time.time()
    attributes = SessionAttributes(conf_deny=("spark.master", "spark.hadoop.*"))
    session = SessionRecord(
        1, SessionKind.BATCH, None, SessionState.BUSY, 1, {}, "alice", None, attributes, None,
        1, 1, now, now, None, now, now,
    )  # fmt: skip
    statement = StatementRecord(
        7, 1, 0, StatementKind.FILE, "etl.sql", StatementState.RUNNING, None, None, None,
        0.0, 1, now, now, None, now,
    )  # fmt: skip
    audit = _Audit()
    store = cast(Store, type("FakeStore", (), {"audit": audit})())
    # No Spark at all: a statement that ran would fail on the missing SparkSession.
    ctx = ExecutionContext(
        OpenSession(session, cast(Any, None)),
        statement,
        Settings(home=tmp_path, results_dir=tmp_path / "results"),
        store,
        1,
        threading.Event(),
    )
    script = (
        "CREATE TABLE t (x INT);\nSET spark.sql.shuffle.partitions=4;\n\nSET `spark.hadoop.x`=1"
    )
    with pytest.raises(DescribedError) as raised:
        run_sql_script(ctx, script, "hdfs:///jobs/etl.sql")
    error = raised.value.recorded.to_json()
    assert error["code"] == "SETTING_DENIED" and error["key"] == "spark.hadoop.x"
    assert error["where"] == "hdfs:///jobs/etl.sql, line 4"
    assert "'spark.hadoop.x' (hdfs:///jobs/etl.sql, line 4)" in error["message"]
    assert audit.events == [("set spark.hadoop.x", "denied", "alice", "query:7")]
