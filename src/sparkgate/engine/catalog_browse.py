"""The catalog as ``/v1/tables``, ``sparkgate tables`` and the dashboard's catalog page show it:
two catalog statements (``catalog_calls`` parses them) that the service runs in a one-off
session as the user asking, so that the engine's access control decides what they see, as it
does for every statement of theirs::

    {"call": "browse", "schema": "hr"}
    {"call": "describe", "schema": "hr", "table": "salaries"}

``browse`` answers rows ``(schema, name, kind)``: each table and view the user may see (SHOW
TABLES, which the engine filters), kind ``table`` or ``view``; a schema where they may see
nothing is one row ``(schema, NULL, NULL)``; without ``schema``, every schema.

``describe`` answers, as its result, the first ``PREVIEW_ROWS`` rows of ``SELECT *`` as the user
reads them (masks, hidden columns and row filters applied), and in its output ``table`` the
columns as the user sees them, the kind, provider, location, creation time, a view's text, and
the size and last change of a table's files. A table the user may not see fails as one that
does not exist (the engine refuses DESCRIBE of a name they have no privilege on, there or not,
and the service answers not found for both); one they see but may not read (no ``SELECT``)
has no preview, and says why (``preview_error``).
"""

from __future__ import annotations

import json
import threading
from typing import TYPE_CHECKING, Any

from sparkgate.engine.session_catalog import (
    SESSION_CATALOG,
    check_cancelled,
    permanent_tables,
    quote,
)
from sparkgate.recorded import InvalidCatalogRequest, PreviewTimedOut
from sparkgate.runtime.contract import ExecResult, ExecutionContext, dataframe_result
from sparkgate.runtime.described_table import DescribedColumn, DescribedTable, FilesFound
from sparkgate.runtime.failures import DescribedError, recorded_failure
from sparkgate.schemas.errors import RecordedError

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession
    from pyspark.sql.types import StructType

PREVIEW_ROWS = 20
PREVIEW_SECONDS = 30.0  # how long the preview waits for its job (_first_rows)
# A table's files are counted up to this many (a walk of an object store lists 1000 a call).
FILE_LIMIT = 100_000
BROWSE_COLUMNS = [("schema", "string"), ("name", "string"), ("kind", "string")]
TABLE, VIEW = "table", "view"


def browse(
    ctx: ExecutionContext, schema: str | None
) -> tuple[list[tuple[str, str]], list[list[Any]]]:
    spark = ctx.session.spark
    schemas = [schema] if schema else _schemas(spark)
    rows: list[list[Any]] = []
    for name in schemas:
        check_cancelled(ctx)
        tables = permanent_tables(spark, name)  # SCHEMA_NOT_FOUND for a schema not there
        if not tables:
            rows.append([name.lower(), None, None])
            continue
        views = _views(spark, name)
        rows.extend([name.lower(), t, VIEW if t in views else TABLE] for t in sorted(tables))
    return BROWSE_COLUMNS, rows


def describe(ctx: ExecutionContext, schema: str | None, table: str | None) -> ExecResult:
    if not table:
        raise DescribedError(InvalidCatalogRequest("A 'describe' call names a table.").recorded())
    spark = ctx.session.spark
    name = quote(SESSION_CATALOG, schema or "default", table)
    # A table the user may not see is refused (INSUFFICIENT_PRIVILEGE), there or not.
    described = json.loads(spark.sql(f"DESCRIBE TABLE EXTENDED {name} AS JSON").collect()[0][0])
    kind = VIEW if str(described.get("type", "")).upper() == "VIEW" else TABLE
    info = DescribedTable(
        schema=described.get("schema_name") or schema,
        table=described.get("table_name") or table,
        kind=kind,
        owner=described.get("owner"),
        provider=described.get("provider"),
        location=described.get("location"),
        created_at=described.get("created_time"),
        comment=described.get("comment"),
        view_text=described.get("view_text"),
    )
    try:
        preview = spark.sql(f"SELECT * FROM {name} LIMIT {PREVIEW_ROWS}")
        info.columns = _columns(preview.schema)
        result = _first_rows(ctx, preview)
    except Exception as exc:
        if ctx.cancelled.is_set():
            raise
        # Seen but not readable (no SELECT), unreadable, or no executor free in time: the rest
        # is still worth showing.
        info.preview_error = RecordedError.of(recorded_failure(exc))
        if not info.columns:
            info.columns = _described_columns(spark, name)
        result = ExecResult()
    check_cancelled(ctx)
    if kind == TABLE and info.location:
        info.files = _files(spark, info.location)
    result.output["table"] = info.to_output()
    return result


def _first_rows(ctx: ExecutionContext, preview: DataFrame) -> ExecResult:
    """The preview's rows as the statement's result, within ``PREVIEW_SECONDS``: its job
    waits for a free executor core like any other, and while others' long tasks hold them all
    the page would wait with it; past the deadline the job is cancelled and the page has the
    rest without rows."""
    spark = ctx.session.spark
    sc = spark.sparkContext
    tag = f"sparkgate-preview-{ctx.statement.id}"
    expired = threading.Event()

    def expire() -> None:
        expired.set()
        sc.cancelJobsWithTag(tag)

    timer = threading.Timer(PREVIEW_SECONDS, expire)
    sc.addJobTag(tag)
    timer.start()
    try:
        return dataframe_result(ctx, preview)
    except Exception:
        if not expired.is_set():
            raise
        timed_out = PreviewTimedOut(
            f"No rows within {PREVIEW_SECONDS:.0f} s: the executors were busy "
            "with other work. The rest of the page is current; try again later."
        )
        raise DescribedError(timed_out.recorded()) from None
    finally:
        timer.cancel()
        sc.removeJobTag(tag)


def _schemas(spark: SparkSession) -> list[str]:
    shown = spark.sql(f"SHOW NAMESPACES IN {quote(SESSION_CATALOG)}").collect()
    return sorted(row["namespace"] for row in shown)


def _views(spark: SparkSession, schema: str) -> set[str]:
    # SHOW VIEWS is not filtered by the access control: only names SHOW TABLES gave are used.
    shown = spark.sql(f"SHOW VIEWS IN {quote(SESSION_CATALOG, schema)}").collect()
    return {row["viewName"] for row in shown if not row["isTemporary"]}


def _columns(schema: StructType) -> list[DescribedColumn]:
    return [
        DescribedColumn(
            name=field.name,
            type=field.dataType.simpleString(),
            nullable=field.nullable,
            comment=field.metadata.get("comment"),
        )
        for field in schema.fields
    ]


def _described_columns(spark: SparkSession, name: str) -> list[DescribedColumn]:
    """A table's columns from the catalog (DESCRIBE lists data columns, then partition
    columns again after a ``#`` heading)."""
    columns: list[DescribedColumn] = []
    for row in spark.sql(f"DESCRIBE TABLE {name}").collect():
        if not row["col_name"] or row["col_name"].startswith("#"):
            break
        columns.append(
            DescribedColumn(name=row["col_name"], type=row["data_type"], comment=row["comment"])
        )
    return columns


def _files(spark: SparkSession, location: str) -> FilesFound:
    """The size, count and newest change (epoch ms) of the files at a table's location,
    walked in the JVM (``TableFiles.scala``); only ``error`` when they cannot be read."""
    jvm = spark.sparkContext._jvm
    assert jvm is not None
    try:
        files = jvm.java.lang.Class.forName("sparkgate.authz.TableFiles$").getField("MODULE$")
        return FilesFound.model_validate_json(
            files.get(None).summary(spark._jsparkSession, location, FILE_LIMIT)
        )
    except Exception as exc:
        return FilesFound(error=RecordedError.of(recorded_failure(exc)))
