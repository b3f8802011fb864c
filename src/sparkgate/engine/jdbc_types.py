"""Spark's column types as JDBC sees them: the ``java.sql.Types`` codes (``SqlTypes``) and, for
a type as ``DESCRIBE TABLE EXTENDED ... AS JSON`` gives it, the facts getColumns answers
(``JdbcType``: name, code, size, digits, radix), as Spark Thrift Server computes them.

Apart from the result layouts (``catalog_layouts``) because it is a pure function over Spark's
type descriptions, recursive over arrays, maps and structs, with cases of its own to test.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any


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
