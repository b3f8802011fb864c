"""Spark's types as HiveServer2 describes them, mapped as Spark Thrift Server maps them.

A result's Spark schema (its JSON form, stored with the result) becomes a ``TTableSchema``:
decimals carry precision and scale, char/varchar their length; arrays, maps and structs are
described as such but their values travel as JSON strings (see ``rowsets``).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from sparkgate.hive2.idl import T

_DECIMAL = re.compile(r"decimal\((\d+),\s*(\d+)\)")
_CHARS = re.compile(r"(var)?char\((\d+)\)")

# Spark's JSON type names -> (Hive type id, how values travel in a columnar row set)
_PRIMITIVES: dict[str, tuple[str, str]] = {
    "boolean": ("BOOLEAN_TYPE", "bool"),
    "byte": ("TINYINT_TYPE", "byte"),
    "short": ("SMALLINT_TYPE", "i16"),
    "integer": ("INT_TYPE", "i32"),
    "long": ("BIGINT_TYPE", "i64"),
    "float": ("FLOAT_TYPE", "double"),
    "double": ("DOUBLE_TYPE", "double"),
    "string": ("STRING_TYPE", "string"),
    "binary": ("BINARY_TYPE", "binary"),
    "date": ("DATE_TYPE", "string"),
    "timestamp": ("TIMESTAMP_TYPE", "string"),
    "timestamp_ntz": ("TIMESTAMP_TYPE", "string"),
    "void": ("NULL_TYPE", "string"),
    "null": ("NULL_TYPE", "string"),
    "interval": ("STRING_TYPE", "string"),  # CalendarIntervalType
    "interval day to second": ("INTERVAL_DAY_TIME_TYPE", "string"),
    "interval year to month": ("INTERVAL_YEAR_MONTH_TYPE", "string"),
}
_COMPLEX = {"array": "ARRAY_TYPE", "map": "MAP_TYPE", "struct": "STRUCT_TYPE"}


@dataclass(frozen=True)
class ColumnType:
    """One result column: its Hive type, how its values travel, and its Spark JSON type."""

    name: str
    type_id: int
    wire: str  # bool | byte | i16 | i32 | i64 | double | string | binary
    spark: Any  # the Spark JSON type (a name, or a dict for complex types)
    precision: int | None = None
    scale: int | None = None
    length: int | None = None


def column_types(spark_schema: Mapping[str, Any] | None) -> list[ColumnType]:
    fields = (spark_schema or {}).get("fields", [])
    return [column_type(field["name"], field["type"]) for field in fields]


def column_type(name: str, spark: Any) -> ColumnType:
    if isinstance(spark, dict):
        kind = str(spark.get("type"))
        type_id = _COMPLEX.get(kind, "USER_DEFINED_TYPE") if kind != "udt" else "STRING_TYPE"
        return ColumnType(name, getattr(T.TTypeId, type_id), "string", spark)
    text = str(spark).lower()
    if found := _DECIMAL.fullmatch(text):
        precision, scale = int(found.group(1)), int(found.group(2))
        return ColumnType(name, T.TTypeId.DECIMAL_TYPE, "string", spark, precision, scale)
    if found := _CHARS.fullmatch(text):
        type_id = T.TTypeId.VARCHAR_TYPE if found.group(1) else T.TTypeId.CHAR_TYPE
        return ColumnType(name, type_id, "string", spark, length=int(found.group(2)))
    if text.startswith("interval day") or text.startswith("interval hour"):
        text = "interval day to second"
    elif text.startswith("interval year") or text.startswith("interval month"):
        text = "interval year to month"
    type_name, wire = _PRIMITIVES.get(text, ("STRING_TYPE", "string"))  # variant, geometry...
    return ColumnType(name, getattr(T.TTypeId, type_name), wire, spark)


def table_schema(columns: list[ColumnType]) -> Any:
    return T.TTableSchema(
        columns=[
            T.TColumnDesc(
                columnName=column.name, typeDesc=_type_desc(column), position=i, comment=""
            )
            for i, column in enumerate(columns, start=1)
        ]
    )


def _type_desc(column: ColumnType) -> Any:
    qualifiers: dict[str, Any] = {}
    if column.precision is not None:
        qualifiers["precision"] = T.TTypeQualifierValue(i32Value=column.precision)
        qualifiers["scale"] = T.TTypeQualifierValue(i32Value=column.scale)
    if column.length is not None:
        qualifiers["characterMaximumLength"] = T.TTypeQualifierValue(i32Value=column.length)
    entry = T.TPrimitiveTypeEntry(
        type=column.type_id,
        typeQualifiers=T.TTypeQualifiers(qualifiers=qualifiers) if qualifiers else None,
    )
    # As Spark Thrift Server does: one primitive entry, even for arrays, maps and structs
    # (their values are strings; clients read the type id only).
    return T.TTypeDesc(types=[T.TTypeEntry(primitiveEntry=entry)])
