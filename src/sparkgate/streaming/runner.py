"""The PySpark side of streaming definitions: opening sources, starting and stopping queries.
Engines only (imports PySpark).
"""

from __future__ import annotations

import re
import threading
import time
from typing import TYPE_CHECKING

from sparkgate.errors import SparkgateError
from sparkgate.recorded import ErrorCode, RecordedError
from sparkgate.runtime.failures import recorded_failure
from sparkgate.sql.errors import SqlError
from sparkgate.sql.statements import CreateStream, SaveStream
from sparkgate.stream_spec import QuerySpec
from sparkgate.streaming.definitions import connector_hint

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession
    from pyspark.sql.streaming.query import StreamingQuery

# Spark appends the query's description and plan to a streaming failure; the API shows what
# went wrong, the log keeps the rest.
_QUERY_TAIL = re.compile(r"\n=== Streaming Query ===.*", re.DOTALL)
_CONDITION = re.compile(r"^\s*\[([A-Z0-9_.]+)\]\s*")
_MAX_MESSAGE = 4000


def open_stream(spark: SparkSession, create: CreateStream) -> DataFrame:
    """The streaming DataFrame a CREATE STREAM describes, registered as its temporary view."""
    options = {o.key: o.value for o in create.options}
    if create.table is not None:
        df = spark.readStream.options(**options).table(create.table)
    else:
        assert create.provider is not None
        reader = spark.readStream.format(create.provider)
        schema = next((options.pop(k) for k in list(options) if k.lower() == "schema"), None)
        ddl = create.schema_ddl or schema
        if ddl is not None:
            reader = reader.schema(ddl)
        try:
            df = reader.options(**options).load()
        except Exception as exc:
            raise _with_connector_hint(exc, create.provider) from exc
    if create.or_replace:
        df.createOrReplaceTempView(create.name)
    else:
        df.createTempView(create.name)
    return df


def streaming_frame(spark: SparkSession, save: SaveStream) -> DataFrame:
    """What SAVE STREAM writes: a streaming view, or a catalog table read as a stream."""
    try:
        df = spark.table(save.view)
        if df.isStreaming:
            return df
        return spark.readStream.table(save.view)  # a catalog table, or a batch view
    except Exception as exc:
        text = str(getattr(exc, "_desc", None) or exc)
        offset = save.offsets.get("view", 0)
        if "is not a temp view of streaming logical plan" in text:
            raise SqlError.at(
                save.text,
                offset,
                f"{save.view} is a batch view, and SAVE STREAM writes streams: define it over a "
                "stream (CREATE STREAM s USING rate; CREATE TEMPORARY VIEW v AS SELECT ... FROM "
                "s), or read a table as a stream with CREATE STREAM s FROM TABLE t",
                code=ErrorCode.NOT_A_STREAMING_VIEW,
            ) from None
        error = recorded_failure(exc)
        if error.code == "TABLE_OR_VIEW_NOT_FOUND":
            raise SqlError.at(
                save.text, offset, error.message, code="TABLE_OR_VIEW_NOT_FOUND"
            ) from None
        raise


def start_query(df: DataFrame, spec: QuerySpec, checkpoint: str | None) -> StreamingQuery:
    """Start the streaming query ``spec`` describes over ``df``."""
    writer = df.writeStream.queryName(spec.name)
    if spec.format != "table":
        writer = writer.format(spec.format)
    if spec.output_mode is not None:
        writer = writer.outputMode(spec.output_mode.value)
    if spec.trigger is not None:
        writer = writer.trigger(processingTime=spec.trigger.spark_interval)
    if spec.partition_by:
        writer = writer.partitionBy(*spec.partition_by)
    writer = writer.options(**spec.options)
    if checkpoint is not None:
        writer = writer.option("checkpointLocation", checkpoint)
    try:
        if spec.table is not None:
            return writer.toTable(spec.table)
        return writer.start()
    except Exception as exc:
        raise _with_connector_hint(exc, spec.format) from exc


def stop_gracefully(
    query: StreamingQuery, timeout: float, hurry: threading.Event | None = None
) -> bool:
    """Stop at a micro-batch boundary: wait (up to ``timeout``, or until ``hurry`` is set)
    while a trigger is active, then stop. True if it stopped between batches."""
    deadline = time.monotonic() + timeout
    between = True
    try:
        while query.isActive and query.status["isTriggerActive"]:
            if time.monotonic() > deadline or (hurry is not None and hurry.is_set()):
                between = False
                break
            time.sleep(0.02)
    finally:
        query.stop()
    return between


def describe_stream_failure(message: str | None, condition: str | None) -> RecordedError:
    """A streaming query's failure (from ``StreamingQueryException`` or the listener's
    terminated event): its code and message, no more."""
    text = _QUERY_TAIL.sub("", message or "").strip()
    found = _CONDITION.match(text)
    code = condition or (found.group(1) if found else ErrorCode.STREAM_FAILED)
    if found:
        text = text[found.end() :]
    if len(text) > _MAX_MESSAGE:
        text = text[: _MAX_MESSAGE // 4] + "\n...\n" + text[-3 * _MAX_MESSAGE // 4 :]
    return RecordedError(code, text or "The streaming query failed.")


class ConnectorMissing(SparkgateError):
    """A source or sink whose connector jar is not on the classpath (kafka, avro, ...)."""

    def __init__(self, code: str, message: str, provider: str) -> None:
        super().__init__(message, provider=provider)
        self.code = code


def _with_connector_hint(exc: Exception, provider: str) -> Exception:
    hint = connector_hint(provider)
    error = recorded_failure(exc)
    if hint is None or error.code not in _NOT_FOUND:
        return exc
    return ConnectorMissing(error.code, f"{error.message} {hint}", provider)


_NOT_FOUND = ("KAFKA_DATA_SOURCE_NOT_ENABLED", "DATA_SOURCE_NOT_FOUND")
