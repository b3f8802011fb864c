"""What a job runs: the generated steps, read back by sparkgate's own parser, and the metadata
literals and engine-side steps run on real Spark."""

from __future__ import annotations

import json
import textwrap
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from sparkgate.jobs.definitions import read_definitions
from sparkgate.jobs.files import SourceFile
from sparkgate.jobs.manifest import Manifest, load_manifests
from sparkgate.jobs.script import (
    CODE_VIEW,
    OUTPUT_VIEW,
    Metadata,
    batch_steps,
    output_view,
    sql_string,
    streaming_steps,
)
from sparkgate.jobs.steps import new_lineage, register_output
from sparkgate.sql.parser import parse
from sparkgate.sql.statements import SaveStream
from sparkgate.states import StatementKind
from sparkgate.stream_spec import RetryPolicy
from sparkgate.streaming.script import check_script

NASTY = [
    "it's",
    "back\\slash",
    'double "quotes"',
    "semi; colon -- not a comment /* nor this */",
    "two\nlines\r\nand\ta tab",
    "\\' escaped quote",
    "'' two quotes",
    "trailing backslash \\",
    "\\u0041 not a unicode escape",
    "ünïcödé ✓",
    "",
]
METADATA = Metadata("clicks", "it's \\ a; test\n-- yes", "0f9e8d7c-aaaa", 3, 1_700_000_000.25)


def manifest(text: str) -> Manifest:
    loaded = load_manifests([SourceFile("m.yaml", textwrap.dedent(text))])
    assert loaded.ok, loaded.errors
    return loaded.manifests[0].manifest


STREAMING = manifest(
    """\
    name: clicks-per-page
    description: Clicks
    target-table: analytics.clicks
    sources:
      - CREATE STREAM raw USING rate OPTIONS ('rowsPerSecond'='5')
    sql: |
      SELECT value AS page FROM raw -- a trailing comment
    trigger: 500ms
    partitioned-by: [page]
    sink-options: {compression: zstd}
    retry: {max-attempts: 3, min-backoff: 100ms}
    """
)


@pytest.mark.parametrize("value", NASTY)
def test_a_literal_reads_back_as_the_value_in_spark(spark: Any, value: str) -> None:
    assert spark.sql(f"SELECT {sql_string(value)} AS v").first()[0] == value


@pytest.mark.parametrize("value", NASTY)
def test_with_escaped_string_literals_on_hex_literals_read_back(spark: Any, value: str) -> None:
    spark.conf.set("spark.sql.parser.escapedStringLiterals", "true")
    try:
        assert spark.sql(f"SELECT {sql_string(value, raw_literals=True)} AS v").first()[0] == value
    finally:
        spark.conf.unset("spark.sql.parser.escapedStringLiterals")


def test_the_metadata_columns_in_spark(spark: Any) -> None:
    job = manifest("name: clicks\ntarget-table: t\nsql: SELECT id FROM range(2)\n")
    spark.sql(output_view(job, METADATA))
    rows = spark.table(OUTPUT_VIEW).collect()
    assert [r["id"] for r in rows] == [0, 1]
    row = rows[0].asDict()
    assert row["__query_name"] == "clicks"
    assert row["__query_description"] == METADATA.description
    assert row["__query_id"] == METADATA.query_id
    assert row["__query_version"] == 3
    created = row["__query_create_timestamp"]
    assert created.replace(tzinfo=None) == datetime.fromtimestamp(METADATA.created_at).replace(
        tzinfo=None
    )  # a session-local timestamp of the same instant
    assert isinstance(row["__create_timestamp"], datetime)
    columns = spark.table(OUTPUT_VIEW).schema.simpleString()
    assert "__query_version:int" in columns and "__query_create_timestamp:timestamp" in columns


def test_metadata_columns_can_be_left_out(spark: Any) -> None:
    job = manifest(
        "name: plain\ntarget-table: t\nsql: SELECT id FROM range(1)\nmetadata-columns: false\n"
    )
    spark.sql(output_view(job, METADATA))
    assert spark.table(OUTPUT_VIEW).columns == ["id"]


def test_a_streaming_job_script() -> None:
    definitions, _ = read_definitions([SourceFile("d.sql", "CREATE DATABASE IF NOT EXISTS x")])
    steps = streaming_steps(STREAMING, definitions, METADATA, "/ck/clicks-per-page/3/clicks")
    assert [(s.kind, s.origin) for s in steps] == [
        (StatementKind.PYSPARK, "target-table"),
        (StatementKind.SQL, "definition d.sql:1"),
        (StatementKind.SQL, "sources.0"),
        (StatementKind.SQL, "sql"),
        (StatementKind.SQL, "target-table"),
    ]
    assert "new_lineage(spark, 'analytics.clicks', '/ck/clicks-per-page/3/clicks', 2)" in (
        steps[0].code
    )
    # the query sits on lines of its own: its trailing comment cannot eat the parenthesis
    assert "FROM (\nSELECT value AS page FROM raw\n) q" in steps[3].code
    save = parse(steps[4].code)
    assert isinstance(save, SaveStream)
    assert (save.view, save.table, save.name) == (
        OUTPUT_VIEW,
        "analytics.clicks",
        "clicks-per-page",
    )
    assert save.trigger is not None and save.trigger.seconds == 0.5
    assert save.output_mode is not None and save.output_mode.value == "append"
    assert save.partitioned_on == ("page",)
    assert {o.key: o.value for o in save.options} == {
        "compression": "zstd",
        "retry.max.attempts": "3",
        "retry.min.backoff": "100ms",
    }
    script = check_script(
        ";\n".join(s.code for s in steps if s.kind is StatementKind.SQL), RetryPolicy()
    )
    [query] = script.queries
    assert query.spec.retry.max_attempts == 3 and query.spec.retry.min_backoff == 0.1


def test_a_code_job_runs_its_code_then_registers_output() -> None:
    job = manifest(
        "name: squares\ntarget-table: t\nmode: batch\ncode: |\n  output = spark.range(3)\n"
    )
    steps = batch_steps(job, [], METADATA)
    assert [s.kind for s in steps] == [
        StatementKind.PYSPARK,
        StatementKind.PYSPARK,
        StatementKind.SQL,
    ]
    assert steps[0].code == "output = spark.range(3)\n"
    assert "register_output(globals(), '__sparkgate_code_output', streaming=False)" in steps[1].code
    assert steps[2].code.startswith("CREATE OR REPLACE TABLE t AS\nSELECT q.*,")
    assert steps[2].code.endswith(f"FROM `{CODE_VIEW}` q")


def test_a_batch_job_writes_with_one_atomic_replace() -> None:
    job = manifest(
        "name: totals\nmode: batch\ntarget-table: db.totals\nsql: SELECT 1 AS n;\n"
        "sink-options: {compression: zstd}\n"
    )
    [ctas] = batch_steps(job, [], METADATA)
    assert ctas.code.startswith(
        "CREATE OR REPLACE TABLE db.totals OPTIONS ('compression'='zstd') AS"
    )
    assert "FROM (\nSELECT 1 AS n\n) q" in ctas.code


def test_register_output(spark: Any) -> None:
    namespace: dict[str, Any] = {"output": spark.range(2)}
    register_output(namespace, "job_output_view", streaming=False)
    assert spark.table("job_output_view").count() == 2
    with pytest.raises(NameError, match="did not set 'output'"):
        register_output({}, "v", streaming=False)
    with pytest.raises(TypeError, match="'output' is a int, not a DataFrame"):
        register_output({"output": 3}, "v", streaming=False)
    with pytest.raises(TypeError, match="a streaming job writes streaming data"):
        register_output(namespace, "v", streaming=True)


@pytest.fixture
def lineage_db(spark: Any, tmp_path: Path) -> Iterator[str]:
    spark.sql(f"CREATE DATABASE lineage LOCATION '{tmp_path / 'lineage.db'}'")
    try:
        yield "lineage"
    finally:
        spark.sql("DROP DATABASE lineage CASCADE")


def test_a_new_lineage_moves_an_earlier_streams_table_aside(
    spark: Any, tmp_path: Path, lineage_db: str
) -> None:
    incoming = tmp_path / "incoming"
    incoming.mkdir()
    (incoming / "a.json").write_text("\n".join(json.dumps({"n": n}) for n in range(5)))
    stream = spark.readStream.schema("n BIGINT").json(str(incoming))
    first = tmp_path / "ck" / "1" / "q"
    query = stream.writeStream.option("checkpointLocation", str(first)).toTable(f"{lineage_db}.out")
    try:
        query.processAllAvailable()
    finally:
        query.stop()
    table = f"{lineage_db}.out"
    assert new_lineage(spark, table, str(first), 1) is None  # its own lineage resumes
    second = tmp_path / "ck" / "2" / "q"
    assert new_lineage(spark, table, str(second), 1) == f"{lineage_db}.out__v1"
    assert not spark.catalog.tableExists(table)
    # the archive reads its files (its sink log, listing the old paths, was moved aside)
    assert sorted(r.n for r in spark.table(f"{lineage_db}.out__v1").collect()) == [0, 1, 2, 3, 4]
    # a taken archive name gets a suffix; an empty table is left for the new lineage
    spark.sql(f"CREATE TABLE {table} USING parquet AS SELECT 1 AS n")
    assert new_lineage(spark, table, str(second), 1) == f"{lineage_db}.out__v1_2"
    spark.sql(f"CREATE TABLE {table} (n BIGINT) USING parquet")
    assert new_lineage(spark, table, str(second), 1) is None
    assert new_lineage(spark, f"{lineage_db}.missing", str(second), 1) is None


def test_timestamps_are_instants() -> None:
    # timestamp_micros takes microseconds since the epoch, whatever the session's time zone
    micros = round(METADATA.created_at * 1_000_000)
    assert datetime.fromtimestamp(micros / 1e6, UTC).timestamp() == METADATA.created_at
