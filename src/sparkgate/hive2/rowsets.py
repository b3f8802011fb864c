"""Stored results (Arrow record batches) as HiveServer2 row sets.

From protocol V6 on a row set is columnar: per column, a list of values of one Thrift type and
a bitmap of the NULLs (bit i, least significant first, set when row i is NULL; NULL rows hold a
placeholder value). Older protocols get a list of rows. Values that Thrift has no type for
(decimals, dates, timestamps, intervals, arrays, maps, structs) travel as strings, written as
Spark Thrift Server writes them.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from datetime import date, datetime, timedelta
from decimal import Decimal
from typing import Any

import numpy as np
import pyarrow as pa

from sparkgate.hive2.idl import T
from sparkgate.hive2.types import ColumnType
from sparkgate.results import to_json_value

_COLUMN_CLASSES: dict[str, tuple[str, Any, Any]] = {
    # wire type -> (TColumn field, column struct, placeholder for NULL)
    "bool": ("boolVal", T.TBoolColumn, False),
    "byte": ("byteVal", T.TByteColumn, 0),
    "i16": ("i16Val", T.TI16Column, 0),
    "i32": ("i32Val", T.TI32Column, 0),
    "i64": ("i64Val", T.TI64Column, 0),
    "double": ("doubleVal", T.TDoubleColumn, 0.0),
    "string": ("stringVal", T.TStringColumn, ""),
    "binary": ("binaryVal", T.TBinaryColumn, b""),
}
_VALUE_CLASSES: dict[str, tuple[str, Any]] = {
    "bool": ("boolVal", T.TBoolValue),
    "byte": ("byteVal", T.TByteValue),
    "i16": ("i16Val", T.TI16Value),
    "i32": ("i32Val", T.TI32Value),
    "i64": ("i64Val", T.TI64Value),
    "double": ("doubleVal", T.TDoubleValue),
    "string": ("stringVal", T.TStringValue),
    "binary": ("stringVal", T.TStringValue),
}


def row_set(
    batches: list[pa.RecordBatch], columns: list[ColumnType], offset: int, *, columnar: bool
) -> Any:
    if columnar:
        if batches:
            values = [thrift_column(joined(batches, i), column) for i, column in enumerate(columns)]
        else:
            values = [empty_column(column) for column in columns]
        return T.TRowSet(startRowOffset=offset, rows=[], columns=values, columnCount=len(columns))
    rows: list[Any] = []
    for batch in batches:
        lists = [_python_values(batch.column(i), c) for i, c in enumerate(columns)]
        for row in zip(*lists, strict=True):
            rows.append(T.TRow(colVals=[_value(v, c) for v, c in zip(row, columns, strict=True)]))
    return T.TRowSet(startRowOffset=offset, rows=rows)


def string_row_set(lines: list[str], offset: int, *, columnar: bool) -> Any:
    """One string column (an operation's log)."""
    if columnar:
        column = T.TColumn(stringVal=T.TStringColumn(values=lines, nulls=b""))
        return T.TRowSet(startRowOffset=offset, rows=[], columns=[column], columnCount=1)
    rows = [T.TRow(colVals=[T.TColumnValue(stringVal=T.TStringValue(value=x))]) for x in lines]
    return T.TRowSet(startRowOffset=offset, rows=rows)


def empty_column(column: ColumnType) -> Any:
    field, cls, _ = _COLUMN_CLASSES[column.wire]
    return T.TColumn(**{field: cls(values=[], nulls=b"")})


def joined(batches: list[pa.RecordBatch], i: int) -> pa.Array:
    """Column ``i`` of the page as one array (a page is mostly a slice of one batch)."""
    if len(batches) == 1:
        return batches[0].column(i)
    return pa.concat_arrays([batch.column(i) for batch in batches])


def thrift_column(array: pa.Array, column: ColumnType) -> Any:
    """One column of a page: Python values only from Arrow's own ``to_pylist`` where Arrow
    holds (or casts to) the wire values; a Python call per value for the rest."""
    field, cls, placeholder = _COLUMN_CLASSES[column.wire]
    nulls = null_bitmap(array) if array.null_count else b""
    text = arrow_text(array, column)
    if text is not None:
        array = text
    if _travels_as_is(array.type, column):
        values = (array.fill_null(placeholder) if array.null_count else array).to_pylist()
    else:
        render = _renderer(column)
        values = [placeholder if v is None else render(v) for v in array.to_pylist()]
    return T.TColumn(**{field: cls(values=values, nulls=nulls)})


def null_bitmap(array: pa.Array) -> bytes:
    """Bit i (least significant first) set when row i is NULL; the bits after the last row
    are 0."""
    return bytes(np.packbits(~valid_rows(array), bitorder="little").tobytes())


def valid_rows(array: pa.Array) -> np.ndarray[tuple[int], np.dtype[np.bool_]]:
    """Which rows hold a value, read from Arrow's validity bitmap (numpy, not Arrow's compute
    functions or ``to_numpy``: those load pandas into the server, some 45 MB)."""
    count = len(array)
    if not array.null_count:
        return np.ones(count, np.bool_)
    validity = array.buffers()[0]
    if validity is None:  # only a column of NULLs (Spark's void) has none
        return np.zeros(count, np.bool_)
    first, skip = divmod(array.offset, 8)
    bits = np.frombuffer(validity, np.uint8, (skip + count + 7) // 8, first)
    return np.unpackbits(bits, bitorder="little")[skip : skip + count].astype(np.bool_)


def arrow_text(array: pa.Array, column: ColumnType) -> pa.Array | None:
    """The column as Spark Thrift Server's text, cast by Arrow where Arrow writes the same
    text (dates, decimals); None where it does not."""
    if column.wire != "string":
        return None
    if pa.types.is_date32(array.type):
        return array.cast(pa.string())
    if pa.types.is_decimal(array.type):
        text = array.cast(pa.string())
        # Arrow writes values below 1e-6 with an exponent ("5.2E-9"); Spark writes them out.
        # (The text is digits, signs and points, and an E only in such a value.)
        return None if b"E" in _text_bytes(text) else text
    return None


def _text_bytes(text: pa.Array) -> bytes:
    """All of a string array's values, one after the other."""
    _, offsets, data = text.buffers()
    if data is None:
        return b""
    bounds = np.frombuffer(offsets, np.int32, len(text) + 1, text.offset * 4)
    return bytes(memoryview(data)[int(bounds[0]) : int(bounds[-1])])


def _travels_as_is(arrow_type: pa.DataType, column: ColumnType) -> bool:
    """Whether Arrow's own Python values are already the wire values (the fast path)."""
    if column.wire in ("bool", "byte", "i16", "i32", "i64"):
        return True
    if column.wire == "double":
        return bool(pa.types.is_float64(arrow_type))
    if column.wire == "binary":
        return True
    return bool(pa.types.is_string(arrow_type) or pa.types.is_large_string(arrow_type))


def _python_values(array: pa.Array, column: ColumnType) -> list[Any]:
    render = _renderer(column)
    if _travels_as_is(array.type, column):
        return list(array.to_pylist())
    return [None if v is None else render(v) for v in array.to_pylist()]


def _value(value: Any, column: ColumnType) -> Any:
    field, cls = _VALUE_CLASSES[column.wire]
    if column.wire == "binary" and value is not None:
        value = bytes(value).decode("utf-8", "replace")
    return T.TColumnValue(**{field: cls(value=value)})


def _renderer(column: ColumnType) -> Callable[[Any], Any]:
    if column.wire == "double":
        return _float32
    if isinstance(column.spark, dict):
        return _complex
    return _text


def _float32(value: Any) -> float:
    # A FLOAT's nearest decimal, as Spark Thrift Server sends it (1.1, not 1.100000023841858).
    return float(str(np.float32(value)))


def _text(value: Any) -> str:
    if isinstance(value, datetime):
        return timestamp_text(value)
    if isinstance(value, date):
        return value.isoformat()
    if isinstance(value, Decimal):
        return format(value, "f")
    if isinstance(value, timedelta):
        return _day_time(value)
    if isinstance(value, bytes):
        return value.decode("utf-8", "replace")
    return str(value)


def timestamp_text(value: datetime) -> str:
    """``yyyy-MM-dd HH:mm:ss[.fraction]`` in this machine's zone (the engines' default session
    zone) for instants; as stored for timestamps without a zone."""
    if value.tzinfo is not None:
        value = value.astimezone().replace(tzinfo=None)
    text = value.strftime("%Y-%m-%d %H:%M:%S")
    if value.microsecond:
        text += "." + f"{value.microsecond:06d}".rstrip("0")
    return text


def _day_time(value: timedelta) -> str:
    # Hive's day-time interval text: "d hh:mm:ss.nnnnnnnnn"
    sign = "-" if value < timedelta(0) else ""
    value = abs(value)
    hours, rest = divmod(value.seconds, 3600)
    minutes, seconds = divmod(rest, 60)
    nanos = value.microseconds * 1000
    return f"{sign}{value.days} {hours:02d}:{minutes:02d}:{seconds:02d}.{nanos:09d}"


def _complex(value: Any) -> str:
    return json.dumps(_jsonable(value), separators=(",", ":"), ensure_ascii=False)


def _jsonable(value: Any) -> Any:
    if isinstance(value, datetime):
        return timestamp_text(value)
    if isinstance(value, dict):
        return {str(k): _jsonable(v) for k, v in value.items()}
    if isinstance(value, list):
        if value and all(isinstance(item, tuple) and len(item) == 2 for item in value):
            return {str(_jsonable(k)): _jsonable(v) for k, v in value}  # a map
        return [_jsonable(item) for item in value]
    if isinstance(value, Decimal):
        return float(value)  # a number in the JSON text, as Spark writes it
    return to_json_value(value)
