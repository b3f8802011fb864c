"""Streaming a DataFrame's rows to the results path as Arrow, without holding them all.

Spark's own ``toArrow()`` collects every batch into a list first. We use the same JVM entry
point (``collectAsArrowToPython``) but write each batch as it arrives: partitions arrive out of
order, followed by the order they belong in, which the result index records.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from sparkgate.results import ResultWriter, StoredResult

if TYPE_CHECKING:
    from pyspark.sql import DataFrame


def describe_schema(df: DataFrame) -> list[dict[str, str]]:
    return [{"name": f.name, "type": f.dataType.simpleString()} for f in df.schema.fields]


def write_result(df: DataFrame, directory: Path) -> StoredResult:
    from pyspark import serializers
    from pyspark.errors.exceptions.captured import unwrap_spark_exception
    from pyspark.sql.pandas.serializers import ArrowStreamSerializer
    from pyspark.sql.pandas.types import to_arrow_schema
    from pyspark.util import _create_local_socket

    schema = to_arrow_schema(
        df.schema, error_on_duplicated_field_names_in_struct=True, timezone="UTC"
    )
    read_int: Callable[[Any], int] = serializers.read_int  # untyped in PySpark
    writer = ResultWriter(directory, schema)
    committed = False
    port, secret, server = df._jdf.collectAsArrowToPython()
    try:
        order: list[int] | None = None
        read_error: BaseException | None = None
        sockfile: Any
        sockfile, sock = _create_local_socket((port, secret))
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
            server.getResult()  # raises the query's own error, which explains a broken stream
        if read_error is not None:
            raise read_error
        stored = writer.commit(order)
        committed = True
        return stored
    finally:
        if not committed:
            writer.abort()
