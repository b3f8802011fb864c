"""Reading Spark's session catalog for catalog statements (``catalog_calls`` for JDBC's
metadata calls, ``catalog_browse`` for the catalog page): names quoted for SQL, a database's
tables as the session's user may see them, and stopping between catalog calls when cancelled.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from sparkgate.engine.user_code import StatementInterrupted
from sparkgate.runtime.contract import ExecutionContext

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

SESSION_CATALOG = "spark_catalog"


def quote(*parts: str) -> str:
    """```a`.`b``` : any text is one name part, backquotes doubled."""
    return ".".join("`" + part.replace("`", "``") + "`" for part in parts)


def permanent_tables(spark: SparkSession, database: str) -> list[str]:
    """The tables and views of ``database`` the session's user may see (the engine's access
    control filters SHOW TABLES). A command, run when called: no Spark job, unlike
    ``spark.catalog`` listings."""
    shown = spark.sql(f"SHOW TABLES IN {quote(SESSION_CATALOG, database)}").collect()
    return [row["tableName"] for row in shown if not row["isTemporary"]]


def check_cancelled(ctx: ExecutionContext) -> None:
    """Catalog calls run no jobs for the engine's cancel to interrupt: they stop between
    tables."""
    if ctx.cancelled.is_set():
        raise StatementInterrupted
