"""The executor of ``load`` statements (engine side): an uploaded file into a table, as the
uploader, whole or not at all.

The file is read by Spark in FAILFAST mode, as a temporary view of the load's own Spark
session, and written with the SQL a user would write, so that the table rules, the ownership a
create gives and the two-phase tables apply exactly as they do to SQL:

- create: ``CREATE TABLE t AS SELECT * FROM upload`` (two-phase: whole or nothing);
- append: ``INSERT INTO t SELECT * FROM upload`` (Spark's commit protocol publishes the new
  files at job commit: a failed job adds nothing);
- overwrite: the file is read through once first (a bad row fails before anything is
  deleted), then ``INSERT OVERWRITE TABLE t SELECT * FROM upload``.

Reading the file is not a read by path of the user's choosing: the engine names it on the
session (``sparkgate.upload``), and the SQL extension lets that one path through. A bad row is
reported by file line and column (``describe_bad_record``), which Spark's own error does not
give.
"""

from __future__ import annotations

import csv
import dataclasses
import json
import logging
from pathlib import Path
from typing import TYPE_CHECKING, Any

from sparkgate.recorded import BadFile, BadRecord, RecordedError
from sparkgate.results import delete as delete_result
from sparkgate.runtime.contract import ExecResult, ExecutionContext
from sparkgate.runtime.failures import DescribedError, recorded_failure
from sparkgate.store.statement_output import LoadFacts
from sparkgate.tables.handler import atomic_ctas
from sparkgate.tables.uploads import LoadFormat, LoadMode, LoadRequest, parse_table_name, quoted

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, DataFrameReader, SparkSession
    from pyspark.sql.types import StructType

log = logging.getLogger("sparkgate.tables")

UPLOAD_KEY = "sparkgate.upload"  # read by the SQL extension (Authz.UploadKey)
_CORRUPT = "_sparkgate_corrupt_record"
# Spark's conditions for a file it could not read or a record that did not parse.
_READ_FAILURES = ("FAILED_READ_FILE", "MALFORMED_RECORD_IN_PARSING", "MALFORMED_CSV_RECORD")
_POSITION_KEYS = ("line", "position", "start", "stop", "fragment")


def run_load(ctx: ExecutionContext) -> ExecResult:
    request = LoadRequest.from_json(ctx.statement.code)
    spark = ctx.session.spark
    name = parse_table_name(request.table)
    view = f"sparkgate_upload_{ctx.statement.id}"
    spark.conf.set(UPLOAD_KEY, request.path)
    df: DataFrame | None = None
    try:
        schema = request.schema
        if schema is None and request.mode is not LoadMode.CREATE:
            schema = _table_schema(spark, quoted(name))  # the file's columns are the table's
        try:
            # Reading a Parquet file's footer, or inferring a CSV's columns, reads the file.
            df = _reader(spark, request, schema, failfast=True).load(request.path)
            df.createOrReplaceTempView(view)
            result = _write(ctx, request, df, quoted(name), view)
        except Exception as exc:
            raise _explained(spark, request, df, exc) from exc
        finally:
            spark.catalog.dropTempView(view)
        if result.result is not None and result.result.path:
            # A create's CTAS stored Spark's empty answer: a load has no rows, whatever its mode.
            delete_result(result.result.path)
        result.result = None
        result.output["load"] = LoadFacts(
            table=f"{name.schema}.{name.table}",
            mode=request.mode.value,
            format=request.format.value,
            bytes=request.size,
            columns=[[f.name, f.dataType.simpleString()] for f in df.schema.fields],
        )
        return result
    finally:
        spark.conf.unset(UPLOAD_KEY)
        Path(request.path).unlink(missing_ok=True)


def _write(
    ctx: ExecutionContext, request: LoadRequest, df: DataFrame, target: str, view: str
) -> ExecResult:
    spark = ctx.session.spark
    if request.mode is LoadMode.CREATE:
        sql = f"CREATE TABLE {target} AS SELECT * FROM `{view}`"
        # The two-phase handler runs it: the table appears whole or not at all.
        done = atomic_ctas(_with_code(ctx, sql))
        if done is not None:
            return done
        spark.sql(sql)
        return ExecResult()
    if request.mode is LoadMode.OVERWRITE:
        # Every row parses before anything is replaced: Spark deletes the old files of an
        # INSERT OVERWRITE before its job runs.
        df.write.format("noop").mode("overwrite").save()
        spark.sql(f"INSERT OVERWRITE TABLE {target} SELECT * FROM `{view}`")
    else:
        spark.sql(f"INSERT INTO {target} SELECT * FROM `{view}`")
    return ExecResult()


def _with_code(ctx: ExecutionContext, sql: str) -> ExecutionContext:
    return dataclasses.replace(ctx, statement=dataclasses.replace(ctx.statement, code=sql))


def _table_schema(spark: SparkSession, target: str) -> str:
    """The table's columns as a DDL schema, from the catalog (any privilege on the table lets
    a user see its columns; appending needs no SELECT)."""
    columns = spark.catalog.listColumns(target)
    if not columns:
        raise ValueError(f"table {target} has no columns")
    return ", ".join(f"`{c.name.replace('`', '``')}` {c.dataType}" for c in columns)


def _reader(
    spark: SparkSession, request: LoadRequest, schema: str | StructType | None, *, failfast: bool
) -> DataFrameReader:
    reader = spark.read.format(request.format.value)
    if request.format is LoadFormat.CSV:
        reader = reader.option("header", request.header)
        if schema is None:
            reader = reader.option("inferSchema", True)
    if request.format is not LoadFormat.PARQUET:
        reader = reader.option("mode", "FAILFAST" if failfast else "PERMISSIVE")
    if schema is not None:
        reader = reader.schema(schema)
    return reader


def _explained(
    spark: SparkSession, request: LoadRequest, df: DataFrame | None, exc: Exception
) -> Exception:
    """The failure as the user should read it: a row that does not fit, by its line and
    column in the file; Spark's own error otherwise, without positions in SQL the user did
    not write."""
    conditions = _conditions(exc)
    if any(c.startswith(_READ_FAILURES) for c in conditions):
        try:
            found = None if df is None else describe_bad_record(spark, request, df.schema)
        except Exception:
            log.exception("finding the bad record of %s failed", request.path)
            found = None
        if found is not None:
            return DescribedError(found)
        return DescribedError(
            BadFile(
                f"Spark cannot read the file as {request.format.value} "
                f"({conditions[-1]}): is it a {request.format.value} file?"
            ).recorded()
        )
    error = recorded_failure(exc)
    params = {k: v for k, v in error.params.items() if k not in _POSITION_KEYS}
    return DescribedError(RecordedError(error.code, error.message, params))


def _conditions(exc: BaseException) -> list[str]:
    """Spark's error conditions along the Java cause chain of ``exc``."""
    found = []
    java = getattr(exc, "java_exception", None) or getattr(
        getattr(exc, "_origin", None), "java_exception", None
    )
    if java is None and hasattr(exc, "getCondition"):
        condition = exc.getCondition()
        return [condition] if condition else []
    while java is not None:
        try:
            condition = java.getCondition()
        except Exception:
            condition = None
        if condition:
            found.append(str(condition))
        java = java.getCause()
    return found


def describe_bad_record(
    spark: SparkSession, request: LoadRequest, schema: StructType
) -> RecordedError | None:
    """The first record of a CSV or JSON file that does not fit ``schema``: its line in the
    file, the column and the value, as a recorded error; None when none is found."""
    if request.format is LoadFormat.PARQUET:
        return None
    from pyspark.sql import functions as F
    from pyspark.sql.types import StringType, StructField
    from pyspark.sql.types import StructType as Struct

    with_corrupt = Struct([*schema.fields, StructField(_CORRUPT, StringType(), True)])
    reader = _reader(spark, request, with_corrupt, failfast=False).option(
        "columnNameOfCorruptRecord", _CORRUPT
    )
    rows = reader.load(request.path).where(F.col(_CORRUPT).isNotNull()).limit(1).collect()
    if not rows:
        return None
    raw = str(rows[0][_CORRUPT])
    line = _line_of(Path(request.path), raw)
    where = f"line {line}" if line is not None else "a record"
    columns = ", ".join(f.name for f in schema.fields)
    values = _values(request.format, raw, schema)
    if values is None:
        return _bad(f"{where} is not a JSON object: {_clip(raw)}", line, None, None)
    if request.format is LoadFormat.CSV and len(values) != len(schema.fields):
        return _bad(
            f"{where} has {len(values)} field(s); the table has {len(schema.fields)} "
            f"column(s) ({columns}): {_clip(raw)}",
            line,
            None,
            None,
        )
    for field, value in zip(schema.fields, values, strict=False):
        if value is None or value == "":
            continue
        text = value if isinstance(value, str) else json.dumps(value)
        fits = spark.range(1).select(F.lit(text).try_cast(field.dataType)).first()
        if fits is None or fits[0] is None:
            return _bad(
                f"{where}, column {field.name}: {_clip(text)!r} is not a valid "
                f"{field.dataType.simpleString().upper()}",
                line,
                field.name,
                text,
            )
    return _bad(f"{where} does not fit the columns ({columns}): {_clip(raw)}", line, None, None)


def _values(fmt: LoadFormat, raw: str, schema: StructType) -> list[Any] | None:
    """The record's values: a CSV line's fields in order, a JSON object's by column name."""
    if fmt is LoadFormat.CSV:
        return next(csv.reader([raw]), [])
    try:
        parsed = json.loads(raw)
    except ValueError:
        return None
    if not isinstance(parsed, dict):
        return None
    return [parsed.get(f.name) for f in schema.fields]


def _line_of(path: Path, raw: str) -> int | None:
    """The 1-based line of the file where ``raw`` (a record as Spark read it) starts."""
    first = raw.splitlines()[0] if raw else raw
    with path.open("r", encoding="utf-8", errors="replace", newline="") as file:
        for number, text in enumerate(file, start=1):
            if text.rstrip("\r\n") == first:
                return number
    return None


def _bad(message: str, line: int | None, column: str | None, value: str | None) -> RecordedError:
    where: dict[str, Any] = {}
    if line is not None:
        where["file_line"] = line
    if column is not None:
        where["column"] = column
        where["value"] = value
    return BadRecord(f"The file's {message}.", **where).recorded()


def _clip(text: str, limit: int = 200) -> str:
    return text if len(text) <= limit else text[:limit] + "…"
