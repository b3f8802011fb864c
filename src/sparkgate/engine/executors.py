"""Running one statement: what each statement kind does, given its session's SparkSession.

An executor returns what the store records on success (the result's description, and any
output); it raises on failure. Executors run on their own thread, under the statement's Spark
job tag, so a cancel interrupts exactly their jobs.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from sparkgate.engine.hooks import StatementHook
from sparkgate.engine.session import OpenSession
from sparkgate.settings import Settings
from sparkgate.states import StatementKind
from sparkgate.store import Store
from sparkgate.store.records import StatementRecord

if TYPE_CHECKING:
    from pyspark.sql import DataFrame

    from sparkgate.streaming.supervisor import StreamSupervisor


@dataclass
class ExecutionContext:
    session: OpenSession
    statement: StatementRecord
    settings: Settings
    store: Store
    engine_id: int
    cancelled: threading.Event  # set when the statement is to stop (cancel, session ended)
    streams: StreamSupervisor | None = None  # the engine's streaming queries
    # Lifecycle hooks the engine calls when the statement finishes, fails or is cancelled.
    hooks: list[StatementHook] = field(default_factory=list)

    def add_hook(self, hook: StatementHook) -> None:
        """Bind ``hook`` to this statement: ``on_created`` now, the rest when it ends."""
        hook.on_created()
        self.hooks.append(hook)

    @property
    def result_dir(self) -> Path:
        return self.settings.resolved_results_dir / str(self.statement.id)


@dataclass
class ExecResult:
    result: dict[str, Any] | None = None
    output: dict[str, Any] = field(default_factory=dict)


Executor = Callable[[ExecutionContext], ExecResult]

# SQL that sparkgate runs its own way (extensions, or standard statements it makes safer):
# each handler returns None to pass the statement on, or runs it and returns the result.
# Handlers are tried in order before plain ``spark.sql``.
SqlHandler = Callable[[ExecutionContext], "ExecResult | None"]
SQL_HANDLERS: list[SqlHandler] = []


def run_sql(ctx: ExecutionContext) -> ExecResult:
    for handler in SQL_HANDLERS:
        handled = handler(ctx)
        if handled is not None:
            return handled
    return dataframe_result(ctx, ctx.session.spark.sql(ctx.statement.code))


def dataframe_result(ctx: ExecutionContext, df: DataFrame) -> ExecResult:
    """Run ``df`` and store its rows as the statement's result."""
    from sparkgate.engine.collect import describe_schema, write_result

    stored = write_result(df, ctx.result_dir)
    return ExecResult(
        result={
            "schema": describe_schema(df),
            "spark_schema": df.schema.jsonValue(),
            "row_count": stored.row_count,
            "path": stored.path,
        }
    )


def rows_result(
    ctx: ExecutionContext, columns: list[tuple[str, str]], rows: list[list[Any]]
) -> ExecResult:
    """Store a few rows made in Python (no Spark job) as the statement's result.
    ``columns``: (name, type) with types string, bigint, int, smallint, tinyint, double,
    boolean or timestamp."""
    import pyarrow as pa
    from pyspark.sql import types as T
    from pyspark.sql.pandas.types import to_arrow_schema

    from sparkgate.results import ResultWriter

    kinds: dict[str, T.DataType] = {
        "string": T.StringType(),
        "bigint": T.LongType(),
        "int": T.IntegerType(),
        "smallint": T.ShortType(),
        "tinyint": T.ByteType(),
        "double": T.DoubleType(),
        "boolean": T.BooleanType(),
        "timestamp": T.TimestampType(),
    }
    schema = T.StructType([T.StructField(name, kinds[kind]) for name, kind in columns])
    arrow = to_arrow_schema(schema, timezone="UTC")
    writer = ResultWriter(ctx.result_dir, arrow)
    try:
        names = [name for name, _ in columns]
        batch = pa.RecordBatch.from_pylist(
            [dict(zip(names, row, strict=True)) for row in rows], schema=arrow
        )
        writer.write(batch)
        stored = writer.commit()
    except BaseException:
        writer.abort()
        raise
    return ExecResult(
        result={
            "schema": [{"name": f.name, "type": f.dataType.simpleString()} for f in schema.fields],
            "spark_schema": schema.jsonValue(),
            "row_count": stored.row_count,
            "path": stored.path,
        }
    )


def run_pyspark(ctx: ExecutionContext) -> ExecResult:
    """Python in the session's namespace, like Livy's pyspark REPL (``python_runner``)."""
    from sparkgate.engine.python_runner import run_statement

    return run_statement(ctx)


def run_batch_file(ctx: ExecutionContext) -> ExecResult:
    """A .py or .sql file, like ``spark-submit`` would run it (``batch_files``)."""
    from sparkgate.engine.batch_files import run_file

    return run_file(ctx)


def run_catalog(ctx: ExecutionContext) -> ExecResult:
    """A JDBC metadata call (GetTables, GetColumns, ...) from the catalog (``catalog_calls``)."""
    from sparkgate.engine.catalog_calls import run_catalog as run

    return run(ctx)


EXECUTORS: dict[StatementKind, Executor] = {
    StatementKind.SQL: run_sql,
    StatementKind.PYSPARK: run_pyspark,
    StatementKind.FILE: run_batch_file,
    StatementKind.CATALOG: run_catalog,
}


def _register_sql_handlers() -> None:
    # Imported here: the handlers build on this module's context and results.
    from sparkgate.streaming.handlers import handle_stream_sql
    from sparkgate.tables.handler import atomic_ctas

    SQL_HANDLERS.extend([handle_stream_sql, atomic_ctas])


_register_sql_handlers()
