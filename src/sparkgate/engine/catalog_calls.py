"""Catalog statements: the HiveServer2 metadata calls (JDBC ``DatabaseMetaData``) answered from
the session's Spark catalog, with the column layouts and values Spark Thrift Server gives.

The statement's code is a JSON request; the result is stored like any other statement's::

    {"call": "tables", "schema": "sales%", "table": null, "table_types": ["VIEW"]}
    {"call": "columns", "schema": "sales", "table": "orders", "column": "%_id"}

Calls: ``catalogs``, ``schemas``, ``tables``, ``table_types``, ``columns``, ``type_info``,
``functions``, ``primary_keys`` and ``cross_reference`` (the last two are always empty: Spark
has no keys). Name arguments are JDBC patterns (``%`` any run, ``_`` one character, ``\\``
escapes; ``*`` is a wildcard too, as in Spark's own patterns), matched case-insensitively;
null, missing, ``""``, ``%`` and ``*`` match everything. ``catalog`` is accepted and ignored,
as Spark Thrift Server does. Two more calls serve sparkgate's catalog page, with exact names:
``browse`` and ``describe`` (``catalog_browse``).

No call runs a Spark job per table: ``spark.catalog`` listings run a few small jobs per call
or per database, and columns come from ``DESCRIBE TABLE EXTENDED ... AS JSON``, a catalog
lookup (``spark.catalog.listColumns`` would run one job per table).

Here: the calls themselves and how they read the catalog. The request is read by
``runtime/catalog_request``, JDBC patterns are in ``jdbc_patterns``, the result layouts in
``catalog_layouts``, column types in ``jdbc_types``.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from sparkgate.engine import catalog_browse
from sparkgate.engine.catalog_layouts import (
    CATALOGS,
    COLUMNS,
    CROSS_REFERENCE,
    FUNCTIONS,
    PRIMARY_KEYS,
    SCHEMAS,
    TABLE,
    TABLE_TYPES,
    TABLES,
    TYPE_INFO,
    VIEW,
    Columns,
    Rows,
    column_row,
    table_type,
    type_info_rows,
)
from sparkgate.engine.jdbc_patterns import jdbc_pattern, matches, spark_prefilter

# "X as X" is how a module re-exports a name for mypy; PLC0414 takes it for a useless alias.
# A column's JDBC type (jdbc_types), named from here too, as the tests of the calls do.
from sparkgate.engine.jdbc_types import JdbcType as JdbcType  # noqa: PLC0414
from sparkgate.engine.jdbc_types import SqlTypes as SqlTypes  # noqa: PLC0414
from sparkgate.engine.session_catalog import check_cancelled, permanent_tables, quote
from sparkgate.runtime.catalog_request import CatalogRequest, parse_request
from sparkgate.runtime.contract import ExecResult, ExecutionContext, rows_result

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

_FUNCTION_RESULT_UNKNOWN = 0  # DatabaseMetaData.functionResultUnknown

# -- the calls ------------------------------------------------------------------------


def run_catalog(ctx: ExecutionContext) -> ExecResult:
    """Answer a catalog statement: ``{"call": "tables", ...}`` -> rows in JDBC's layout."""
    request = parse_request(ctx.statement.code)
    if request.call == "browse":
        return rows_result(ctx, *catalog_browse.browse(ctx, request.get("schema")))
    if request.call == "describe":
        return catalog_browse.describe(ctx, request.get("schema"), request.get("table"))
    columns, rows = _CALLS[request.call](ctx, request)
    return rows_result(ctx, columns, rows)


def _catalogs(ctx: ExecutionContext, request: CatalogRequest) -> tuple[Columns, Rows]:
    # Spark Thrift Server lists no catalogs: everything is in Hive's unnamed one ("").
    return CATALOGS, []


def _schemas(ctx: ExecutionContext, request: CatalogRequest) -> tuple[Columns, Rows]:
    spark = ctx.session.spark
    pattern = request.get("schema")
    names = _databases(spark, pattern)
    global_temp = _global_temp_database(spark)
    if matches(jdbc_pattern(pattern), global_temp):
        names.append(global_temp)
    return SCHEMAS, [[name, ""] for name in sorted(set(names))]


def _tables(ctx: ExecutionContext, request: CatalogRequest) -> tuple[Columns, Rows]:
    spark = ctx.session.spark
    table_pattern = jdbc_pattern(request.get("table"))
    prefilter = spark_prefilter(request.get("table"))
    # An empty list means every type, as in Spark Thrift Server.
    wanted = {t.upper() for t in request.table_types} if request.table_types else None
    rows: Rows = []

    def add(schema: str | None, name: str, kind: str, remarks: str | None) -> None:
        if matches(table_pattern, name) and (wanted is None or kind in wanted):
            rows.append(["", schema, name, kind, remarks or "", None, None, None, None, None])

    for database in _databases(spark, request.get("schema")):
        check_cancelled(ctx)
        for table in spark.catalog.listTables(database, prefilter):
            if not table.isTemporary:
                add(database, table.name, table_type(table.tableType), table.description)
    global_views, local_views = _temporary_views(spark, request.get("schema"))
    for schema, name in [*global_views, *local_views]:
        add(schema, name, VIEW, None)
    rows.sort(key=lambda row: (row[3], row[1] or "", row[2]))
    return TABLES, rows


def _table_types(ctx: ExecutionContext, request: CatalogRequest) -> tuple[Columns, Rows]:
    return TABLE_TYPES, [[TABLE], [VIEW]]


def _columns(ctx: ExecutionContext, request: CatalogRequest) -> tuple[Columns, Rows]:
    spark = ctx.session.spark
    table_pattern = jdbc_pattern(request.get("table"))
    column_pattern = jdbc_pattern(request.get("column"))
    # (schema shown, name shown, name to describe)
    targets: list[tuple[str | None, str, str]] = []
    for database in _databases(spark, request.get("schema")):
        for name in permanent_tables(spark, database):
            if matches(table_pattern, name):
                targets.append((database, name, quote("spark_catalog", database, name)))
    global_views, local_views = _temporary_views(spark, request.get("schema"))
    for schema, name in [*global_views, *local_views]:
        if matches(table_pattern, name):
            targets.append((schema, name, quote(schema, name) if schema else quote(name)))
    targets.sort(key=lambda target: (target[0] or "", target[1]))
    rows: Rows = []
    for schema, name, quoted in targets:
        check_cancelled(ctx)
        for position, column in enumerate(_describe_columns(spark, quoted), start=1):
            if matches(column_pattern, column["name"]):
                rows.append(column_row(schema, name, position, column))
    return COLUMNS, rows


def _type_info(ctx: ExecutionContext, request: CatalogRequest) -> tuple[Columns, Rows]:
    return TYPE_INFO, type_info_rows()


def _functions(ctx: ExecutionContext, request: CatalogRequest) -> tuple[Columns, Rows]:
    spark = ctx.session.spark
    pattern = jdbc_pattern(request.get("function"))
    prefilter = spark_prefilter(request.get("function"))
    rows: Rows = []
    # As Spark Thrift Server: every database lists the built-in and temporary functions too.
    for database in _databases(spark, request.get("schema")):
        check_cancelled(ctx)
        for function in spark.catalog.listFunctions(database, prefilter):
            if matches(pattern, function.name):
                rows.append(
                    [
                        "",
                        database,
                        function.name,
                        function.description or "",
                        _FUNCTION_RESULT_UNKNOWN,
                        function.className,
                    ]
                )
    rows.sort(key=lambda row: (row[1], row[2], row[5] or ""))
    return FUNCTIONS, rows


def _primary_keys(ctx: ExecutionContext, request: CatalogRequest) -> tuple[Columns, Rows]:
    return PRIMARY_KEYS, []


def _cross_reference(ctx: ExecutionContext, request: CatalogRequest) -> tuple[Columns, Rows]:
    return CROSS_REFERENCE, []


_CALLS: dict[str, Callable[[ExecutionContext, CatalogRequest], tuple[Columns, Rows]]] = {
    "catalogs": _catalogs,
    "schemas": _schemas,
    "tables": _tables,
    "table_types": _table_types,
    "columns": _columns,
    "type_info": _type_info,
    "functions": _functions,
    "primary_keys": _primary_keys,
    "cross_reference": _cross_reference,
}

# -- reading the catalog --------------------------------------------------------------


def _databases(spark: SparkSession, pattern: str | None) -> list[str]:
    regex = jdbc_pattern(pattern)
    listed = spark.catalog.listDatabases(spark_prefilter(pattern))
    return sorted(db.name for db in listed if matches(regex, db.name))


def _global_temp_database(spark: SparkSession) -> str:
    return spark.conf.get("spark.sql.globalTempDatabase", "global_temp") or "global_temp"


def _temporary_views(
    spark: SparkSession, schema_pattern: str | None
) -> tuple[list[tuple[str, str]], list[tuple[None, str]]]:
    """Global temporary views (when ``schema_pattern`` matches their database) and the
    session's local ones (always, with no schema, as Spark Thrift Server lists them)."""
    global_temp = _global_temp_database(spark)
    # Listing the global temporary database lists the session's local views too.
    shown = spark.sql(f"SHOW TABLES IN {quote(global_temp)}").collect()
    with_global = matches(jdbc_pattern(schema_pattern), global_temp)
    global_views = [
        (global_temp, row["tableName"]) for row in shown if row["namespace"] and with_global
    ]
    local_views = [(None, row["tableName"]) for row in shown if not row["namespace"]]
    return global_views, local_views


def _describe_columns(spark: SparkSession, quoted_name: str) -> list[dict[str, Any]]:
    """The columns of a table or view from its catalog entry (partition columns last), or
    none if it was dropped since it was listed."""
    from pyspark.errors import AnalysisException

    try:
        described = spark.sql(f"DESCRIBE TABLE EXTENDED {quoted_name} AS JSON").collect()
    except AnalysisException as exc:
        if exc.getCondition() in ("TABLE_OR_VIEW_NOT_FOUND", "VIEW_NOT_FOUND"):
            return []
        raise
    columns: list[dict[str, Any]] = json.loads(described[0][0]).get("columns", [])
    return columns
