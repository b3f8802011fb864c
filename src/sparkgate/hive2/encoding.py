"""A page of a result as a columnar TRowSet's Thrift binary encoding, straight from Arrow.

The bytes are exactly those thriftpy2 writes for the TRowSet ``rowsets.row_set`` builds (a test
holds them to it), without making a Python value per row: numbers are Arrow's buffers turned
big-endian by numpy, strings are Arrow's offsets and data laid out as Thrift's length-prefixed
strings, the NULLs bitmap is Arrow's validity inverted. Columns whose wire values Arrow does
not hold (floats, timestamps, intervals, nested types, decimals Arrow writes otherwise) are
built as ``rowsets`` builds them and encoded by thriftpy2.

Binary protocol, as written here: a struct is its fields, each ``type:i8 id:i16 value``, then
a 0 byte (STOP); a list is ``element type:i8 count:i32`` then the elements; a string or binary
is ``length:i32`` then its bytes; numbers are big-endian.
"""

from __future__ import annotations

import struct
from collections.abc import Callable
from typing import Any

import numpy as np
import pyarrow as pa

from sparkgate.hive2 import rowsets
from sparkgate.hive2.types import ColumnType
from sparkgate.hive2.wire import encode_struct

_BOOL, _BYTE, _DOUBLE, _I16, _I32, _I64, _STRING, _STRUCT, _LIST = 2, 3, 4, 6, 8, 10, 11, 12, 15
_STOP = b"\x00"
_FIELD = struct.Struct(">bh")
_LIST_HEADER = struct.Struct(">bi")
_I32_VALUE = struct.Struct(">i")
_I64_VALUE = struct.Struct(">q")

# wire type -> (TColumn field id, element type, numpy type in Arrow and on the wire, Arrow
# types held as is)
_NUMBERS: dict[str, tuple[int, int, str, str, Callable[[pa.DataType], bool]]] = {
    "bool": (1, _BOOL, "u1", "u1", pa.types.is_boolean),
    "byte": (2, _BYTE, "i1", "i1", pa.types.is_int8),
    "i16": (3, _I16, "i2", ">i2", pa.types.is_int16),
    "i32": (4, _I32, "i4", ">i4", pa.types.is_int32),
    "i64": (5, _I64, "i8", ">i8", pa.types.is_int64),
    "double": (6, _DOUBLE, "f8", ">f8", pa.types.is_float64),
}


def _is_text(arrow_type: pa.DataType) -> bool:
    return bool(
        pa.types.is_string(arrow_type)
        or pa.types.is_large_string(arrow_type)
        or pa.types.is_binary(arrow_type)
        or pa.types.is_large_binary(arrow_type)
    )


# wire type -> (TColumn field id, Arrow types held as is); both are lists of Thrift strings
_TEXTS: dict[str, tuple[int, Callable[[pa.DataType], bool]]] = {
    "string": (7, lambda t: pa.types.is_string(t) or pa.types.is_large_string(t)),
    "binary": (8, _is_text),
}


def row_set(batches: list[pa.RecordBatch], columns: list[ColumnType], offset: int) -> bytes:
    """The encoding of ``rowsets.row_set(batches, columns, offset, columnar=True)``."""
    parts = [
        _FIELD.pack(_I64, 1),
        _I64_VALUE.pack(offset),
        _FIELD.pack(_LIST, 2),
        _LIST_HEADER.pack(_STRUCT, 0),  # rows: none, the values are in the columns
        _FIELD.pack(_LIST, 3),
        _LIST_HEADER.pack(_STRUCT, len(columns)),
    ]
    for i, column in enumerate(columns):
        if batches:
            parts.append(_column(rowsets.joined(batches, i), column))
        else:
            parts.append(encode_struct(rowsets.empty_column(column)))
    parts += [_FIELD.pack(_I32, 5), _I32_VALUE.pack(len(columns)), _STOP]
    return b"".join(parts)


def _column(array: pa.Array, column: ColumnType) -> bytes:
    """One TColumn: a struct with one field, the typed column (values, then nulls)."""
    values: bytes | None = None
    if column.wire in _NUMBERS:
        field, element, native, wire, holds = _NUMBERS[column.wire]
        if holds(array.type):
            values = _LIST_HEADER.pack(element, len(array)) + _numbers(array, native, wire)
    elif column.wire in _TEXTS:
        field, holds = _TEXTS[column.wire]
        text = rowsets.arrow_text(array, column)
        if text is not None:
            array = text
        if holds(array.type):
            values = _LIST_HEADER.pack(_STRING, len(array)) + _texts(array)
    if values is None:  # not held by Arrow as the wire wants it: as rowsets builds it
        return encode_struct(rowsets.thrift_column(array, column))
    nulls = rowsets.null_bitmap(array) if array.null_count else b""
    return b"".join(
        [
            _FIELD.pack(_STRUCT, field),
            _FIELD.pack(_LIST, 1),
            values,
            _FIELD.pack(_STRING, 2),
            _I32_VALUE.pack(len(nulls)),
            nulls,
            _STOP,  # of the typed column
            _STOP,  # of the TColumn
        ]
    )


def _numbers(array: pa.Array, native: str, wire: str) -> bytes:
    """The values, big-endian, from Arrow's data buffer (booleans: one byte each)."""
    count = len(array)
    if not count:
        return b""
    data = array.buffers()[1]
    values: np.ndarray[tuple[int], np.dtype[Any]]
    if native == "u1":  # booleans: bits in Arrow
        first, skip = divmod(array.offset, 8)
        bits = np.frombuffer(data, np.uint8, (skip + count + 7) // 8, first)
        values = np.unpackbits(bits, bitorder="little")[skip : skip + count]
    else:
        width = np.dtype(native).itemsize
        values = np.frombuffer(data, native, count, array.offset * width)
    if array.null_count:  # a NULL's slot holds anything in Arrow: 0 (False) on the wire
        values = np.where(rowsets.valid_rows(array), values, 0).astype(native)
    return bytes(values.astype(wire).tobytes())


def _texts(array: pa.Array) -> bytes:
    """Each value as a 4-byte big-endian length and its bytes (UTF-8 as Arrow holds it)."""
    count = len(array)
    if not count:
        return b""
    wide = pa.types.is_large_string(array.type) or pa.types.is_large_binary(array.type)
    offset_type = np.dtype(np.int64 if wide else np.int32)
    _, offsets_buffer, data_buffer = array.buffers()
    offsets = np.frombuffer(
        offsets_buffer, offset_type, count + 1, array.offset * offset_type.itemsize
    ).astype(np.int64)
    first, last = int(offsets[0]), int(offsets[-1])
    lengths = np.diff(offsets)
    data = np.frombuffer(data_buffer, np.uint8, last - first, first) if last > first else b""
    if array.null_count:  # a NULL's slot may hold bytes in Arrow: "" on the wire
        valid = rowsets.valid_rows(array)
        if lengths[~valid].any():
            data = np.frombuffer(data, np.uint8)[np.repeat(valid, lengths)]
        lengths = np.where(valid, lengths, 0)
    ends = np.cumsum(lengths)
    out = np.empty(4 * count + int(ends[-1]), np.uint8)
    # Value i's length goes after the values before it and their i lengths.
    starts = ends - lengths + 4 * np.arange(count, dtype=np.int64)
    prefix_at = (starts[:, None] + np.arange(4)).ravel()
    is_prefix = np.zeros(len(out), np.bool_)
    is_prefix[prefix_at] = True
    out[prefix_at] = lengths.astype(">i4").view(np.uint8)
    out[~is_prefix] = np.frombuffer(data, np.uint8)
    return bytes(out.tobytes())
