"""What the two-phase protocol asks of Spark's catalog, in one place (engine side).

Everything goes through public SQL (``DESCRIBE TABLE ... AS JSON``, ``ALTER TABLE``) and the
public catalog API, except two small, long-stable JVM entry points: Spark's SQL parser (to
report a syntax error exactly as Spark would, before anything is staged) and Spark's own
``AnalysisException`` (to fail with Spark's error condition and message where Spark would).
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

from sparkgate.settings import Settings
from sparkgate.tables.plan import ExistingTable, SessionFacts, SparkField, Target

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

ATOMIC_CONF = "spark.sparkgate.ctas.atomic"


def session_facts(spark: SparkSession, settings: Settings) -> SessionFacts:
    asked = spark.conf.get(ATOMIC_CONF, None)
    if asked is not None:
        atomic = asked.strip().lower() not in ("false", "0", "no", "off")
        disabled_by = f"{ATOMIC_CONF}={asked}"
    else:
        atomic = settings.atomic_ctas
        disabled_by = "SPARKGATE_ATOMIC_CTAS=false"
    hive_default = spark.conf.get("spark.sql.legacy.createHiveTableByDefault", "false") or ""
    return SessionFacts(
        atomic=atomic,
        current_catalog=spark.catalog.currentCatalog(),
        current_database=spark.catalog.currentDatabase(),
        default_provider=spark.conf.get("spark.sql.sources.default", "parquet") or "parquet",
        hive_by_default=hive_default.strip().lower() == "true",
        disabled_by=disabled_by,
        catalog_implementation=spark.conf.get("spark.sql.catalogImplementation", "hive") or "",
    )


def describe(spark: SparkSession, target: Target) -> ExistingTable | None:
    """The table (or view) at ``target``; None if there is none."""
    raw = describe_json(spark, target)
    return None if raw is None else ExistingTable.from_describe(raw)


def describe_json(spark: SparkSession, target: Target) -> dict[str, Any] | None:
    from pyspark.errors import AnalysisException

    try:
        rows = spark.sql(f"DESCRIBE TABLE EXTENDED {target.sql} AS JSON").collect()
    except AnalysisException as exc:
        if exc.getCondition() in ("TABLE_OR_VIEW_NOT_FOUND", "SCHEMA_NOT_FOUND"):
            return None
        raise
    described: dict[str, Any] = json.loads(rows[0][0])
    return described


def database_location(spark: SparkSession, database: str) -> str | None:
    if not spark.catalog.databaseExists(database):
        return None
    location: str = spark.catalog.getDatabase(database).locationUri
    return location


def columns_of(spark: SparkSession, sql_or_table: str, *, table: bool = False) -> list[SparkField]:
    """``StructType.jsonValue()["fields"]`` of a table, or of a query (analysed, not run)."""
    frame = spark.table(sql_or_table) if table else spark.sql(sql_or_table)
    fields: list[SparkField] = frame.schema.jsonValue()["fields"]
    return fields


def check_syntax(spark: SparkSession, sql: str) -> None:
    """Raise Spark's own ParseException for ``sql``, positions and all, if it has one."""
    spark._jsparkSession.sessionState().sqlParser().parsePlan(sql)


def spark_error(spark: SparkSession, condition: str, parameters: dict[str, str]) -> Exception:
    """Spark's ``AnalysisException`` for ``condition``: its message, SQLSTATE and class."""
    from pyspark.errors.exceptions.captured import convert_exception

    jvm = spark.sparkContext._jvm
    assert jvm is not None
    java_map = jvm.java.util.HashMap()
    for key, value in parameters.items():
        java_map.put(key, value)
    scala_map = jvm.org.apache.spark.api.python.PythonUtils.toScalaMap(java_map)
    error: Exception = convert_exception(
        jvm.org.apache.spark.sql.AnalysisException(condition, scala_map)
    )
    return error
