"""What an executor is given and what it gives back: the contract between the engine and the
statement kinds it runs.

An executor (``Executor``) takes the statement's ``ExecutionContext`` and returns the
``ExecResult`` the store records on success (the result's description, and any output); it
raises on failure. Executors run on their own thread, under the statement's Spark job tag, so a
cancel interrupts exactly their jobs. A ``SqlHandler`` is the same for a SQL extension, except
that it returns None for SQL that is not its own.

An executor that must act when its statement ends adds a ``StatementHook``
(``ctx.add_hook``); ``runtime.hooks`` is how the engine then calls it, and what it promises.

This module is the bottom of the engine: the engine core and every capability (tables,
streaming, python_runner, batch_files, catalog_calls) import it, and it imports none of them,
not even for the type checker. So ``ExecutionContext.streams`` (the engine's stream supervisor)
is opaque here: the streaming capability, which owns it, narrows it (``streaming.handlers``).

    def run_hello(ctx: ExecutionContext) -> ExecResult:
        return rows_result(ctx, [("greeting", "string")], [["hello"]])
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from sparkgate.runtime.session import OpenSession
from sparkgate.settings import Settings
from sparkgate.store import Store
from sparkgate.store.records import ResultInfo, StatementRecord
from sparkgate.store.statement_output import StatementOutput

if TYPE_CHECKING:
    from pyspark.sql import DataFrame
    from pyspark.sql.types import StructType

    from sparkgate.results import StoredResult


class StatementHook(Protocol):
    """Code that must run when a statement's work is created, finishes, fails or is cancelled
    (the seed's JobStatusHook). ``runtime.hooks`` says when the engine calls each."""

    def on_created(self) -> None: ...

    def on_finished(self, result: ExecResult) -> None: ...

    def on_failed(self, error: BaseException) -> None: ...

    def on_cancelled(self) -> None: ...


@dataclass
class ExecutionContext:
    session: OpenSession
    statement: StatementRecord
    settings: Settings
    store: Store
    engine_id: int
    cancelled: threading.Event  # set when the statement is to stop (cancel, session ended)
    # The engine's streaming queries (a streaming.supervisor.StreamSupervisor), if it runs any.
    streams: object | None = None
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
    """What a statement produced: its stored rows (None: no result), and its output (what it
    printed, and how sparkgate ran it)."""

    result: ResultInfo | None = None
    output: StatementOutput = field(default_factory=StatementOutput)


Executor = Callable[[ExecutionContext], ExecResult]

# SQL that sparkgate runs its own way (extensions, or standard statements it makes safer):
# a handler returns None to pass the statement on, or runs it and returns the result.
SqlHandler = Callable[[ExecutionContext], "ExecResult | None"]


def dataframe_result(ctx: ExecutionContext, df: DataFrame) -> ExecResult:
    """Run ``df`` and store its rows as the statement's result."""
    from sparkgate.runtime.collect import collect_result

    return _stored_result(*collect_result(df, ctx.result_dir))


def sql_result(ctx: ExecutionContext, code: str) -> ExecResult:
    """Run the SQL ``code`` in the statement's session and store its rows as its result."""
    from sparkgate.runtime.collect import collect_sql_result

    return _stored_result(*collect_sql_result(ctx.session.spark, code, ctx.result_dir))


def _stored_result(stored: StoredResult, schema: StructType) -> ExecResult:
    from sparkgate.runtime.collect import describe_fields

    return ExecResult(
        result=ResultInfo(
            path=stored.path,
            schema=describe_fields(schema),
            spark_schema=schema.jsonValue(),
            row_count=stored.row_count,
        )
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
    return _stored_result(stored, schema)
