"""Writing Spark results as Arrow files, with real (in-process) Spark."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from sparkgate.results import read_page
from sparkgate.runtime.collect import describe_schema, write_result
from sparkgate.runtime.failures import recorded_failure
from sparkgate.store.records import ResultColumn

pytestmark = pytest.mark.spark


def test_large_ordered_result_is_paged_in_order(spark: Any, tmp_path: Path) -> None:
    # 4 partitions that finish in any order, sorted globally: the file keeps Spark's order.
    df = spark.range(0, 100_000, numPartitions=4).selectExpr("id", "id % 7 AS r").orderBy("r", "id")
    stored = write_result(df, tmp_path / "1")
    assert stored.row_count == 100_000
    expected = sorted(range(100_000), key=lambda i: (i % 7, i))
    got: list[int] = []
    offset = 0
    while True:
        rows, total = read_page(stored.path, offset, 7_000)
        if not rows:
            break
        got.extend(r[0] for r in rows)
        offset += len(rows)
    assert total == 100_000 and got == expected


def test_types_survive_the_trip(spark: Any, tmp_path: Path) -> None:
    df = spark.sql(
        "SELECT 1 AS i, 'x' AS s, CAST(1.25 AS DECIMAL(10,2)) AS d, DATE'2026-01-02' AS dt, "
        "TIMESTAMP'2026-01-02 03:04:05' AS ts, array(1, 2) AS a, map('k', 1) AS m, "
        "named_struct('x', 1) AS st, X'0001' AS b, CAST(NULL AS STRING) AS n"
    )
    stored = write_result(df, tmp_path / "2")
    [row], _ = read_page(stored.path, 0, 10)
    assert row[:4] == [1, "x", "1.25", "2026-01-02"]
    assert row[4].startswith("2026-01-02")
    assert row[5:] == [[1, 2], {"k": 1}, {"x": 1}, "AAE=", None]
    assert describe_schema(df)[:3] == [
        ResultColumn("i", "int"),
        ResultColumn("s", "string"),
        ResultColumn("d", "decimal(10,2)"),
    ]


def test_command_results(spark: Any, tmp_path: Path) -> None:
    stored = write_result(spark.sql("CREATE TEMPORARY VIEW tv AS SELECT 1 AS x"), tmp_path / "3")
    assert stored.row_count == 0
    stored = write_result(spark.sql("SHOW TABLES"), tmp_path / "4")
    assert stored.row_count >= 1


def test_runtime_failure_raises_sparks_error_and_leaves_nothing(spark: Any, tmp_path: Path) -> None:
    df = spark.sql("SELECT 1 / (id - 500) AS x FROM range(1000)")
    with pytest.raises(Exception) as caught:
        write_result(df, tmp_path / "5")
    error = recorded_failure(caught.value, "SELECT 1 / (id - 500) AS x FROM range(1000)").to_json()
    assert error["code"] == "DIVIDE_BY_ZERO"
    assert error["message"].startswith("Division by zero")
    assert (error["line"], error["position"], error["fragment"]) == (1, 8, "1 / (id - 500)")
    assert not any(tmp_path.iterdir())


def test_parse_and_analysis_errors_have_positions(spark: Any) -> None:
    with pytest.raises(Exception) as parse:
        spark.sql("SELECT 1,\nFROM x WHERE")
    error = recorded_failure(parse.value, "SELECT 1,\nFROM x WHERE").to_json()
    assert error["code"] == "PARSE_SYNTAX_ERROR" and error["sql_state"] == "42601"
    assert error["line"] == 2 and error["position"] >= 1
    code = "SELECT a\nFROM range(3)\nWHERE nope > 1"
    with pytest.raises(Exception) as analysis:
        spark.sql(code)
    error = recorded_failure(analysis.value, code).to_json()
    assert error["code"].startswith("UNRESOLVED_COLUMN")
    assert (error["line"], error["position"], error["fragment"]) == (3, 7, "nope")
    assert "'Project" not in error["message"]  # the plan dump is left out


def test_python_errors_are_described() -> None:
    error = recorded_failure(ValueError("bad value")).to_json()
    assert error == {"code": "ValueError", "message": "bad value"}
