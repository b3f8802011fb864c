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
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from sparkgate.engine import catalog_browse
from sparkgate.engine.session_catalog import check_cancelled, permanent_tables, quote
from sparkgate.recorded import InvalidCatalogRequest
from sparkgate.runtime.contract import ExecResult, ExecutionContext, rows_result
from sparkgate.runtime.failures import DescribedError

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

Columns = list[tuple[str, str]]
Rows = list[list[Any]]

# -- the request ----------------------------------------------------------------------

# The name arguments each call takes (all optional strings); "tables" also takes table_types.
CALL_FIELDS: dict[str, tuple[str, ...]] = {
    "catalogs": (),
    "schemas": ("catalog", "schema"),
    "tables": ("catalog", "schema", "table"),
    "table_types": (),
    "columns": ("catalog", "schema", "table", "column"),
    "type_info": (),
    "functions": ("catalog", "schema", "function"),
    "primary_keys": ("catalog", "schema", "table"),
    "cross_reference": (
        "parent_catalog",
        "parent_schema",
        "parent_table",
        "foreign_catalog",
        "foreign_schema",
        "foreign_table",
    ),
    # sparkgate's catalog page (catalog_browse): exact names, not patterns.
    "browse": ("schema",),
    "describe": ("schema", "table"),
}


@dataclass(frozen=True)
class CatalogRequest:
    call: str
    names: Mapping[str, str | None]
    table_types: tuple[str, ...] | None = None

    def get(self, field: str) -> str | None:
        return self.names.get(field)


def parse_request(code: str) -> CatalogRequest:
    """The request in a catalog statement's code, or ``DescribedError`` saying what is wrong."""
    try:
        body = json.loads(code)
    except ValueError as exc:
        raise _invalid(
            f"The catalog request is not JSON ({exc}); send an object such as "
            '{"call": "tables", "schema": "%"}.'
        ) from None
    if not isinstance(body, dict):
        raise _invalid(f"The catalog request must be a JSON object, not {code.strip()[:100]}.")
    call = body.get("call")
    if not isinstance(call, str) or call not in CALL_FIELDS:
        raise _invalid(
            f"Unknown catalog call {json.dumps(call)}; use one of {', '.join(CALL_FIELDS)}."
        )
    names: dict[str, str | None] = {}
    for field in CALL_FIELDS[call]:
        value = body.get(field)
        if value is not None and not isinstance(value, str):
            raise _invalid(
                f"Field {field!r} of a {call!r} call must be a string or null, "
                f"not {json.dumps(value)}."
            )
        names[field] = value
    table_types = body.get("table_types") if call == "tables" else None
    if table_types is not None and not (
        isinstance(table_types, list) and all(isinstance(t, str) for t in table_types)
    ):
        raise _invalid(
            "Field 'table_types' of a 'tables' call must be a list of strings or null, "
            f"not {json.dumps(table_types)}."
        )
    return CatalogRequest(call, names, tuple(table_types) if table_types is not None else None)


def _invalid(message: str) -> DescribedError:
    return DescribedError(InvalidCatalogRequest(message).recorded())


# -- JDBC patterns --------------------------------------------------------------------

_EVERYTHING = frozenset({"", "%", "*"})


def jdbc_pattern(pattern: str | None) -> re.Pattern[str] | None:
    """A JDBC search pattern as a case-insensitive regex; None when it matches everything."""
    if pattern is None or pattern in _EVERYTHING:
        return None
    parts: list[str] = []
    chars = iter(pattern)
    for char in chars:
        if char == "\\":
            parts.append(re.escape(next(chars, "\\")))
        elif char in "%*":
            parts.append(".*")
        elif char == "_":
            parts.append(".")
        else:
            parts.append(re.escape(char))
    return re.compile("".join(parts), re.IGNORECASE | re.DOTALL)


def matches(pattern: re.Pattern[str] | None, name: str) -> bool:
    return pattern is None or pattern.fullmatch(name) is not None


def spark_prefilter(pattern: str | None) -> str | None:
    """A Spark catalog pattern (``*`` wildcards) matching at least what ``pattern`` matches, to
    narrow a listing before the exact match; None when it cannot help or cannot be said
    safely (Spark and Hive metastores read other characters as regex or alternation)."""
    if pattern is None or pattern in _EVERYTHING or not re.fullmatch(r"[A-Za-z0-9_%*]+", pattern):
        return None
    return re.sub(r"[%_*]+", "*", pattern)


# -- Spark types as JDBC sees them ----------------------------------------------------


class SqlTypes:
    """``java.sql.Types`` codes."""

    NULL = 0
    CHAR = 1
    DECIMAL = 3
    INTEGER = 4
    SMALLINT = 5
    FLOAT = 6
    DOUBLE = 8
    VARCHAR = 12
    BOOLEAN = 16
    DATE = 91
    TIME = 92
    TIMESTAMP = 93
    BINARY = -2
    BIGINT = -5
    TINYINT = -6
    OTHER = 1111
    JAVA_OBJECT = 2000
    STRUCT = 2002
    ARRAY = 2003


@dataclass(frozen=True)
class JdbcType:
    """A column type's getColumns facts: TYPE_NAME (Spark's ``DataType.sql``), DATA_TYPE,
    COLUMN_SIZE (Spark's default size in bytes, None when variable), DECIMAL_DIGITS and
    NUM_PREC_RADIX, as Spark Thrift Server's SparkGetColumnsOperation computes them."""

    name: str
    code: int
    size: int | None = None
    digits: int | None = None
    radix: int | None = None


_T = SqlTypes
# DESCRIBE ... AS JSON type names that need no parameters.
_SIMPLE_TYPES: dict[str, JdbcType] = {
    "void": JdbcType("VOID", _T.NULL, 1),
    "boolean": JdbcType("BOOLEAN", _T.BOOLEAN, 1, 0),
    # Spark Thrift Server gives DECIMAL_DIGITS 0 for INT only (its match misses the other
    # integral types, against its own comment); 0 is right for all of them.
    "tinyint": JdbcType("TINYINT", _T.TINYINT, 1, 0, 10),
    "smallint": JdbcType("SMALLINT", _T.SMALLINT, 2, 0, 10),
    "int": JdbcType("INT", _T.INTEGER, 4, 0, 10),
    "bigint": JdbcType("BIGINT", _T.BIGINT, 8, 0, 10),
    "float": JdbcType("FLOAT", _T.FLOAT, 4, 7, 10),  # IEEE 754 digits, as Hive says
    "double": JdbcType("DOUBLE", _T.DOUBLE, 8, 15, 10),
    "binary": JdbcType("BINARY", _T.BINARY),
    "date": JdbcType("DATE", _T.DATE, 4),
    "timestamp_ltz": JdbcType("TIMESTAMP", _T.TIMESTAMP, 8, 6),  # microseconds
    "timestamp": JdbcType("TIMESTAMP", _T.TIMESTAMP, 8, 6),
    "timestamp_ntz": JdbcType("TIMESTAMP_NTZ", _T.TIMESTAMP, 8, 6),
    "variant": JdbcType("VARIANT", _T.OTHER),
}
_YEAR_MONTH_UNITS = frozenset({"year", "month"})
_PLAIN_NAME = re.compile(r"[A-Za-z0-9_]+")


def jdbc_type(spark_type: Mapping[str, Any]) -> JdbcType:
    """The JDBC facts of a column type as ``DESCRIBE TABLE EXTENDED ... AS JSON`` gives it
    (``{"name": "decimal", "precision": 10, "scale": 2}``)."""
    name = str(spark_type.get("name", "")).lower()
    simple = _SIMPLE_TYPES.get(name)
    if simple is not None:
        return simple
    if name == "decimal":
        precision, scale = int(spark_type["precision"]), int(spark_type["scale"])
        # Spark stores up to 18 digits in a long, more in 16 bytes.
        size = 8 if precision <= 18 else 16
        return JdbcType(f"DECIMAL({precision},{scale})", _T.DECIMAL, size, scale, 10)
    if name == "string":
        collation = spark_type.get("collation")
        if collation and collation != "UTF8_BINARY":
            return JdbcType(f"STRING COLLATE {collation}", _T.VARCHAR)
        return JdbcType("STRING", _T.VARCHAR)
    if name in ("char", "varchar"):
        length = int(spark_type["length"])
        code = _T.CHAR if name == "char" else _T.VARCHAR
        return JdbcType(f"{name.upper()}({length})", code, length)
    if name == "interval":
        return _interval(spark_type.get("start_unit"), spark_type.get("end_unit"))
    if name == "array":
        element = jdbc_type(spark_type["element_type"])
        return JdbcType(f"ARRAY<{element.name}>", _T.ARRAY)
    if name == "map":
        key, value = jdbc_type(spark_type["key_type"]), jdbc_type(spark_type["value_type"])
        return JdbcType(f"MAP<{key.name}, {value.name}>", _T.JAVA_OBJECT)
    if name == "struct":
        fields = [(f["name"], jdbc_type(f["type"])) for f in spark_type.get("fields", [])]
        inner = ", ".join(f"{_quote_if_needed(n)}: {t.name}" for n, t in fields)
        sizes = [t.size for _, t in fields]
        # A struct of fixed-size fields has their total size; any variable one makes it unknown.
        total = None if None in sizes else sum(s for s in sizes if s is not None)
        return JdbcType(f"STRUCT<{inner}>", _T.STRUCT, total)
    if name == "time" or name.startswith("time("):  # "time(6)"
        return JdbcType(name.upper(), _T.TIME)
    return JdbcType(name.upper(), _T.OTHER)


def _interval(start: Any, end: Any) -> JdbcType:
    if not start:  # CalendarIntervalType: months, days and microseconds
        return JdbcType("INTERVAL", _T.OTHER, 16)
    units = str(start).upper() if start == end else f"{start} TO {end}".upper()
    size = 4 if start in _YEAR_MONTH_UNITS else 8
    return JdbcType(f"INTERVAL {units}", _T.OTHER, size)


def _quote_if_needed(name: str) -> str:
    if _PLAIN_NAME.fullmatch(name) and not name.isdigit():
        return name
    return "`" + name.replace("`", "``") + "`"


# -- result layouts -------------------------------------------------------------------

CATALOGS: Columns = [("TABLE_CAT", "string")]
SCHEMAS: Columns = [("TABLE_SCHEM", "string"), ("TABLE_CATALOG", "string")]
TABLES: Columns = [
    (name, "string")
    for name in (
        "TABLE_CAT",
        "TABLE_SCHEM",
        "TABLE_NAME",
        "TABLE_TYPE",
        "REMARKS",
        "TYPE_CAT",
        "TYPE_SCHEM",
        "TYPE_NAME",
        "SELF_REFERENCING_COL_NAME",
        "REF_GENERATION",
    )
]
TABLE_TYPES: Columns = [("TABLE_TYPE", "string")]
COLUMNS: Columns = [
    ("TABLE_CAT", "string"),
    ("TABLE_SCHEM", "string"),
    ("TABLE_NAME", "string"),
    ("COLUMN_NAME", "string"),
    ("DATA_TYPE", "int"),
    ("TYPE_NAME", "string"),
    ("COLUMN_SIZE", "int"),
    ("BUFFER_LENGTH", "tinyint"),
    ("DECIMAL_DIGITS", "int"),
    ("NUM_PREC_RADIX", "int"),
    ("NULLABLE", "int"),
    ("REMARKS", "string"),
    ("COLUMN_DEF", "string"),
    ("SQL_DATA_TYPE", "int"),
    ("SQL_DATETIME_SUB", "int"),
    ("CHAR_OCTET_LENGTH", "int"),
    ("ORDINAL_POSITION", "int"),
    ("IS_NULLABLE", "string"),
    ("SCOPE_CATALOG", "string"),
    ("SCOPE_SCHEMA", "string"),
    ("SCOPE_TABLE", "string"),
    ("SOURCE_DATA_TYPE", "smallint"),
    ("IS_AUTO_INCREMENT", "string"),
]
TYPE_INFO: Columns = [
    ("TYPE_NAME", "string"),
    ("DATA_TYPE", "int"),
    ("PRECISION", "int"),
    ("LITERAL_PREFIX", "string"),
    ("LITERAL_SUFFIX", "string"),
    ("CREATE_PARAMS", "string"),
    ("NULLABLE", "smallint"),
    ("CASE_SENSITIVE", "boolean"),
    ("SEARCHABLE", "smallint"),
    ("UNSIGNED_ATTRIBUTE", "boolean"),
    ("FIXED_PREC_SCALE", "boolean"),
    ("AUTO_INCREMENT", "boolean"),
    ("LOCAL_TYPE_NAME", "string"),
    ("MINIMUM_SCALE", "smallint"),
    ("MAXIMUM_SCALE", "smallint"),
    ("SQL_DATA_TYPE", "int"),
    ("SQL_DATETIME_SUB", "int"),
    ("NUM_PREC_RADIX", "int"),
]
FUNCTIONS: Columns = [
    ("FUNCTION_CAT", "string"),
    ("FUNCTION_SCHEM", "string"),
    ("FUNCTION_NAME", "string"),
    ("REMARKS", "string"),
    ("FUNCTION_TYPE", "int"),
    ("SPECIFIC_NAME", "string"),
]
PRIMARY_KEYS: Columns = [
    ("TABLE_CAT", "string"),
    ("TABLE_SCHEM", "string"),
    ("TABLE_NAME", "string"),
    ("COLUMN_NAME", "string"),
    ("KEY_SEQ", "int"),
    ("PK_NAME", "string"),
]
CROSS_REFERENCE: Columns = [
    ("PKTABLE_CAT", "string"),
    ("PKTABLE_SCHEM", "string"),
    ("PKTABLE_NAME", "string"),
    ("PKCOLUMN_NAME", "string"),
    ("FKTABLE_CAT", "string"),
    ("FKTABLE_SCHEM", "string"),
    ("FKTABLE_NAME", "string"),
    ("FKCOLUMN_NAME", "string"),
    ("KEY_SEQ", "int"),
    ("UPDATE_RULE", "smallint"),
    ("DELETE_RULE", "smallint"),
    ("FK_NAME", "string"),
    ("PK_NAME", "string"),
    ("DEFERRABILITY", "smallint"),
]

# Spark Thrift Server's type list (Hive's Type enum): name, java.sql.Types code, precision.
_TYPE_INFO: list[tuple[str, int, int | None]] = [
    ("VOID", _T.NULL, None),
    ("BOOLEAN", _T.BOOLEAN, None),
    ("STRING", _T.VARCHAR, None),
    ("BINARY", _T.BINARY, None),
    ("TINYINT", _T.TINYINT, 3),
    ("SMALLINT", _T.SMALLINT, 5),
    ("INT", _T.INTEGER, 10),
    ("BIGINT", _T.BIGINT, 19),
    ("FLOAT", _T.FLOAT, 7),
    ("DOUBLE", _T.DOUBLE, 15),
    ("DECIMAL", _T.DECIMAL, 38),
    ("DATE", _T.DATE, None),
    ("TIMESTAMP", _T.TIMESTAMP, None),
    ("ARRAY", _T.ARRAY, None),
    ("MAP", _T.JAVA_OBJECT, None),
    ("STRUCT", _T.STRUCT, None),
    ("CHAR", _T.CHAR, None),
    ("VARCHAR", _T.VARCHAR, None),
    ("INTERVAL_YEAR_MONTH", _T.OTHER, None),
    ("INTERVAL_DAY_TIME", _T.OTHER, None),
]
_COMPLEX_TYPES = frozenset({"ARRAY", "MAP", "STRUCT"})
_TYPE_SEARCHABLE, _TYPE_PRED_NONE, _TYPE_NULLABLE = 3, 0, 1  # java.sql.DatabaseMetaData
_FUNCTION_RESULT_UNKNOWN = 0  # DatabaseMetaData.functionResultUnknown
TABLE, VIEW = "TABLE", "VIEW"


def type_info_rows() -> Rows:
    rows: Rows = []
    for name, code, precision in _TYPE_INFO:
        numeric = precision is not None
        rows.append(
            [
                name,
                code,
                precision,
                None,  # LITERAL_PREFIX
                None,  # LITERAL_SUFFIX
                None,  # CREATE_PARAMS
                _TYPE_NULLABLE,
                name == "STRING",  # CASE_SENSITIVE
                _TYPE_PRED_NONE if name in _COMPLEX_TYPES else _TYPE_SEARCHABLE,
                not numeric,  # UNSIGNED_ATTRIBUTE: Hive calls every non-number unsigned
                False,  # FIXED_PREC_SCALE
                False,  # AUTO_INCREMENT
                None,  # LOCAL_TYPE_NAME
                0,  # MINIMUM_SCALE
                0,  # MAXIMUM_SCALE
                None,  # SQL_DATA_TYPE
                None,  # SQL_DATETIME_SUB
                10 if numeric else None,  # NUM_PREC_RADIX
            ]
        )
    return rows


def column_row(
    schema: str | None, table: str, position: int, column: Mapping[str, Any]
) -> list[Any]:
    """One getColumns row from a column of ``DESCRIBE TABLE EXTENDED ... AS JSON``;
    ``position`` is 1-based, as JDBC says and Spark 4.1+ gives (SPARK-54350)."""
    kind = jdbc_type(column["type"])
    nullable = bool(column.get("nullable", True))
    return [
        None,  # TABLE_CAT: null for columns in Spark Thrift Server ("" for tables)
        schema,
        table,
        column["name"],
        kind.code,
        kind.name,
        kind.size,
        None,  # BUFFER_LENGTH, unused
        kind.digits,
        kind.radix,
        1 if nullable else 0,
        column.get("comment") or "",
        None,  # COLUMN_DEF
        None,  # SQL_DATA_TYPE
        None,  # SQL_DATETIME_SUB
        None,  # CHAR_OCTET_LENGTH
        position,
        # Spark Thrift Server always says YES here; JDBC wants it to agree with NULLABLE.
        "YES" if nullable else "NO",
        None,  # SCOPE_CATALOG
        None,  # SCOPE_SCHEMA
        None,  # SCOPE_TABLE
        None,  # SOURCE_DATA_TYPE
        "NO",  # IS_AUTO_INCREMENT
    ]


def table_type(spark_table_type: str) -> str:
    """JDBC's TABLE_TYPE for ``spark.catalog.listTables``'s ``tableType``."""
    kind = spark_table_type.upper()
    return VIEW if kind == "TEMPORARY" or "VIEW" in kind else TABLE


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
