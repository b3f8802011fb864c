"""SQL statements: sparkgate's own SQL first (``SQL_HANDLERS``), then plain ``spark.sql``.

The handlers are listed here, in the order they are tried, rather than registering themselves
on import: what a SQL statement can do is then read in one place, and it does not depend on
which modules happen to have been imported. ``batch_files`` runs a ``.sql`` script's
statements through the same list.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from sparkgate.runtime.contract import ExecResult, ExecutionContext, SqlHandler, dataframe_result
from sparkgate.streaming.handlers import handle_stream_sql
from sparkgate.tables.handler import atomic_ctas

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession

SQL_HANDLERS: tuple[SqlHandler, ...] = (handle_stream_sql, atomic_ctas)


def run_sql(ctx: ExecutionContext) -> ExecResult:
    """The executor of ``sql`` statements."""
    for handler in SQL_HANDLERS:
        handled = handler(ctx)
        if handled is not None:
            return handled
    return dataframe_result(ctx, _sql(ctx.session.spark, ctx.statement.code))


def _sql(spark: SparkSession, code: str) -> DataFrame:
    """``spark.sql(code)`` in one Py4J call: PySpark's own first builds an empty argument
    array in the JVM, four round trips more (Py4J's error handling, which turns Spark's
    errors into PySpark's, applies to every call alike)."""
    from pyspark.sql import DataFrame

    return DataFrame(spark._jsparkSession.sql(code), spark)
