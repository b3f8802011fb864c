"""The result layouts of the JDBC metadata calls: each call's columns (name and Spark SQL type)
as Spark Thrift Server gives them, and the rows that are not read from the catalog
(getTypeInfo's) or are built from one catalog entry (a getColumns row, a TABLE_TYPE).

Apart from the calls (``catalog_calls``) because these are data and pure functions: what a
JDBC client sees, written once, column by column, with no Spark.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from sparkgate.engine.jdbc_types import SqlTypes, jdbc_type

Columns = list[tuple[str, str]]
Rows = list[list[Any]]
_T = SqlTypes

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
