"""SQL statements: sparkgate's own SQL first (``SQL_HANDLERS``), then plain ``spark.sql``.

The handlers are listed here, in the order they are tried, rather than registering themselves
on import: what a SQL statement can do is then read in one place, and it does not depend on
which modules happen to have been imported. ``batch_files`` runs a ``.sql`` script's
statements through the same list.
"""

from __future__ import annotations

from sparkgate.runtime.contract import ExecResult, ExecutionContext, SqlHandler, sql_result
from sparkgate.streaming.handlers import handle_stream_sql
from sparkgate.tables.handler import atomic_ctas

SQL_HANDLERS: tuple[SqlHandler, ...] = (handle_stream_sql, atomic_ctas)


def run_sql(ctx: ExecutionContext) -> ExecResult:
    """The executor of ``sql`` statements."""
    for handler in SQL_HANDLERS:
        handled = handler(ctx)
        if handled is not None:
            return handled
    # The SQL and its result in one call into the JVM (PySpark's spark.sql alone makes five).
    return sql_result(ctx, ctx.statement.code)
