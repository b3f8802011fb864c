"""What the Connect door reads in a plan, built from pyspark's own Connect messages as its
client builds them; no server needed."""

from __future__ import annotations

from typing import Any

import pytest
import zstandard
from pyspark.sql.connect.proto import base_pb2, commands_pb2, relations_pb2

from sparkgate.connect.plans import describe, read_plan
from sparkgate.errors import InvalidRequest


def _relation_plan(relation: relations_pb2.Relation) -> base_pb2.Plan:
    return base_pb2.Plan(root=relation)


def _range(end: int) -> relations_pb2.Relation:
    return relations_pb2.Relation(range=relations_pb2.Range(start=0, end=end, step=1))


def test_sql_text_is_recorded_as_sql() -> None:
    plan = _relation_plan(relations_pb2.Relation(sql=relations_pb2.SQL(query="SELECT 1")))
    operation = read_plan(plan)
    assert operation.sql == "SELECT 1" and operation.code is None and not operation.streaming
    command = commands_pb2.Command(sql_command=commands_pb2.SqlCommand(sql="SET a=b"))
    assert read_plan(base_pb2.Plan(command=command)).sql == "SET a=b"


def test_sql_with_dataframes_as_arguments_is_recorded_as_its_sql() -> None:
    # spark.sql("SELECT * FROM {df}", df=df): the SQL's root, with the DataFrames beside it.
    with_relations = relations_pb2.Relation(
        with_relations=relations_pb2.WithRelations(
            root=relations_pb2.Relation(sql=relations_pb2.SQL(query="SELECT * FROM v")),
            references=[_range(3)],
        )
    )
    command = commands_pb2.Command(sql_command=commands_pb2.SqlCommand(input=with_relations))
    assert read_plan(base_pb2.Plan(command=command)).sql == "SELECT * FROM v"
    assert read_plan(_relation_plan(with_relations)).sql == "SELECT * FROM v"


@pytest.mark.parametrize(
    "text",
    [
        "SELECT 1",
        "  select * from t where update = 1",
        "-- why\n(SELECT 1) UNION (SELECT 2);",
        "WITH c AS (SELECT 1 AS a) SELECT * FROM c",
        "WITH c AS (SELECT * FROM t WHERE insert = 1) SELECT * FROM c",
        "VALUES (1), (2)",
        "TABLE t",
        "FROM t SELECT a",
        "FROM t |> WHERE a > 1",
    ],
)
def test_spark_sql_of_a_query_is_only_analysed(text: str) -> None:
    command = commands_pb2.Command(sql_command=commands_pb2.SqlCommand(sql=text))
    assert read_plan(base_pb2.Plan(command=command)).analysed_only


@pytest.mark.parametrize(
    "text",
    [
        "CREATE TABLE t (a INT)",
        "INSERT INTO t SELECT 1",
        "WITH c AS (SELECT 1 AS a) INSERT INTO t SELECT * FROM c",
        "FROM s INSERT INTO t SELECT a",
        "SHOW TABLES",
        "EXPLAIN SELECT 1",
        "SET a=b",
        "SELECT 1; DROP TABLE t",
        "SELECT 'unterminated",
        "",
    ],
)
def test_spark_sql_of_anything_else_runs_at_once(text: str) -> None:
    command = commands_pb2.Command(sql_command=commands_pb2.SqlCommand(sql=text))
    assert not read_plan(base_pb2.Plan(command=command)).analysed_only
    # The same text as a relation runs when the plan does: never merely analysed.
    root = relations_pb2.Relation(sql=relations_pb2.SQL(query=text))
    assert not read_plan(_relation_plan(root)).analysed_only


def test_a_dataframe_plan_is_summarised_from_its_last_step_to_its_sources() -> None:
    read = relations_pb2.Relation(
        read=relations_pb2.Read(
            named_table=relations_pb2.Read.NamedTable(unparsed_identifier="sales")
        )
    )
    filtered = relations_pb2.Relation(filter=relations_pb2.Filter(input=read))
    grouped = relations_pb2.Relation(aggregate=relations_pb2.Aggregate(input=filtered))
    joined = relations_pb2.Relation(join=relations_pb2.Join(left=grouped, right=_range(3)))
    assert describe(joined) == "join <- (aggregate <- filter <- read sales, range(0, 3))"
    assert read_plan(_relation_plan(grouped)).sql is None


def _udf_plan() -> base_pb2.Plan:
    from pyspark.sql.connect.proto import expressions_pb2

    udf = expressions_pb2.CommonInlineUserDefinedFunction(
        function_name="f", python_udf=expressions_pb2.PythonUDF(command=b"pickled")
    )
    project = relations_pb2.Project(
        input=_range(3),
        expressions=[expressions_pb2.Expression(common_inline_user_defined_function=udf)],
    )
    return _relation_plan(relations_pb2.Relation(project=project))


def test_python_anywhere_in_a_plan_needs_the_code_right() -> None:
    assert read_plan(_udf_plan()).code == "a Python UDF"
    assert read_plan(_relation_plan(_range(3))).code is None


def test_a_compressed_plan_is_read_uncompressed_and_a_broken_one_refused() -> None:
    inner = _udf_plan().root.SerializeToString()
    compressed = base_pb2.Plan.CompressedOperation(
        data=zstandard.ZstdCompressor().compress(inner),
        op_type=base_pb2.Plan.CompressedOperation.OP_TYPE_RELATION,
        compression_codec=base_pb2.COMPRESSION_CODEC_ZSTD,
    )
    assert read_plan(base_pb2.Plan(compressed_operation=compressed)).code == "a Python UDF"
    broken: Any = base_pb2.Plan.CompressedOperation(
        data=b"not zstd",
        op_type=base_pb2.Plan.CompressedOperation.OP_TYPE_RELATION,
        compression_codec=base_pb2.COMPRESSION_CODEC_ZSTD,
    )
    with pytest.raises(InvalidRequest):
        read_plan(base_pb2.Plan(compressed_operation=broken))
    with pytest.raises(InvalidRequest):
        read_plan(base_pb2.Plan())


def test_starting_a_stream_is_marked_streaming() -> None:
    start = commands_pb2.WriteStreamOperationStart(input=_range(3), format="noop")
    operation = read_plan(
        base_pb2.Plan(command=commands_pb2.Command(write_stream_operation_start=start))
    )
    assert operation.streaming
    assert operation.description == "write_stream_operation_start: range(0, 3)"
