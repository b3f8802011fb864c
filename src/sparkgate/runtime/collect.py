"""Streaming a DataFrame's rows to the results path as Arrow, without holding them all.

Spark's own ``toArrow()`` collects every batch into a list first. We use the same JVM entry
point (``collectAsArrowToPython``) but write each batch as it arrives: partitions arrive out of
order, followed by the order they belong in, which the result index records.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from sparkgate.results import ResultWriter, StoredResult
from sparkgate.runtime import statement_thread
from sparkgate.store.records import ResultColumn

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession
    from pyspark.sql.types import StructType


def describe_schema(df: DataFrame) -> list[ResultColumn]:
    return describe_fields(df.schema)


def describe_fields(schema: StructType) -> list[ResultColumn]:
    return [ResultColumn(f.name, f.dataType.simpleString()) for f in schema.fields]


def write_result(df: DataFrame, directory: Path) -> StoredResult:
    return collect_result(df, directory)[0]


def collect_result(df: DataFrame, directory: Path) -> tuple[StoredResult, StructType]:
    """The rows of ``df`` written to ``directory``, and their Spark schema."""
    jvm_thread = statement_thread.of(df.sparkSession)
    return _write_served(jvm_thread, jvm_thread.serveArrow(df._jdf), directory)


def collect_sql_result(
    spark: SparkSession, code: str, directory: Path
) -> tuple[StoredResult, StructType]:
    """``collect_result`` of ``spark.sql(code)``, the SQL run and its result served in one
    call into the JVM (Spark's errors, a parse or analysis error included, as PySpark
    raises them from any call)."""
    jvm_thread = statement_thread.of(spark)
    return _write_served(jvm_thread, jvm_thread.serveSql(spark._jsparkSession, code), directory)


def _write_served(jvm_thread: Any, served: str, directory: Path) -> tuple[StoredResult, StructType]:
    """The rows the JVM serves (``served``: where, its secret, the schema) written."""
    from pyspark import serializers
    from pyspark.errors.exceptions.captured import unwrap_spark_exception
    from pyspark.sql.pandas.serializers import ArrowStreamSerializer
    from pyspark.sql.pandas.types import to_arrow_schema
    from pyspark.sql.types import StructType, _parse_datatype_json_string
    from pyspark.util import _create_local_socket

    connection, secret, schema_json = served.split("\n", 2)
    spark_schema = _parse_datatype_json_string(schema_json)
    assert isinstance(spark_schema, StructType)
    committed = False
    writer: ResultWriter | None = None
    try:
        schema = to_arrow_schema(
            spark_schema, error_on_duplicated_field_names_in_struct=True, timezone="UTC"
        )
        read_int: Callable[[Any], int] = serializers.read_int  # untyped in PySpark
        writer = ResultWriter(directory, schema)
        order: list[int] | None = None
        read_error: BaseException | None = None
        sockfile: Any
        # A port, or a Unix socket's path (as PySpark's own connection info).
        where: int | str = int(connection) if connection.isdigit() else connection
        sockfile, sock = _create_local_socket((where, secret))
        try:
            for batch in ArrowStreamSerializer().load_stream(sockfile):
                writer.write(batch)
            count = read_int(sockfile)
            if count >= 0:  # -1: the JVM failed while serving
                order = [read_int(sockfile) for _ in range(count)]
        except Exception as exc:
            read_error = exc  # usually the query failed and the stream broke off
        finally:
            sockfile.close()
            sock.close()
        with unwrap_spark_exception():
            jvm_thread.served()  # raises the query's own error, which explains a broken stream
        if read_error is not None:
            raise read_error
        stored = writer.commit(order)
        committed = True
        return stored, spark_schema
    finally:
        if not committed:
            if writer is not None:
                writer.abort()
            else:
                with contextlib.suppress(Exception):
                    jvm_thread.served()  # nobody reads it: let its server end
