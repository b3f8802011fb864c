"""Pages of a result encoded straight from Arrow (``hive2.encoding``) against the encoder that
makes a Python value of every row (as sparkgate did before): the same bytes, for every column
type, with NULLs, slices at any offset, several batches and none; and a reply written around
an encoded row set, byte for byte the reply thriftpy2 writes for the row set itself."""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, date, datetime, timedelta
from decimal import Decimal
from typing import Any

import numpy as np
import pyarrow as pa
import pytest

from sparkgate.hive2 import encoding, rowsets, wire
from sparkgate.hive2.handles import ok
from sparkgate.hive2.idl import T
from sparkgate.hive2.types import ColumnType, column_types

ROWS = 203
_PLACEHOLDERS = {"bool": False, "double": 0.0, "string": "", "binary": b""}
_FIELDS = {
    "bool": "boolVal",
    "byte": "byteVal",
    "i16": "i16Val",
    "i32": "i32Val",
    "i64": "i64Val",
    "double": "doubleVal",
    "string": "stringVal",
    "binary": "binaryVal",
}


def per_value_row_set(batches: list[pa.RecordBatch], columns: list[ColumnType], offset: int) -> Any:
    """The columnar TRowSet as built before: every value a Python object, rendered one by one
    unless Arrow's own Python value is the wire value."""
    values = []
    for i, column in enumerate(columns):
        field = _FIELDS[column.wire]
        cls = getattr(T, "T" + field[0].upper() + field[1:-3] + "Column")
        if not batches:
            values.append(T.TColumn(**{field: cls(values=[], nulls=b"")}))
            continue
        array = pa.concat_arrays([batch.column(i) for batch in batches])
        nulls = b""
        if array.null_count:
            flags = array.is_null().to_numpy(zero_copy_only=False)
            nulls = np.packbits(flags, bitorder="little").tobytes()
        placeholder = _PLACEHOLDERS.get(column.wire, 0)
        render = rowsets._renderer(column)
        as_is = column.wire in ("bool", "byte", "i16", "i32", "i64", "binary") or (
            column.wire == "double" and pa.types.is_float64(array.type)
        )
        as_is = as_is or (column.wire == "string" and pa.types.is_string(array.type))
        python = [
            placeholder if v is None else (v if as_is else render(v)) for v in array.to_pylist()
        ]
        values.append(T.TColumn(**{field: cls(values=python, nulls=nulls)}))
    return T.TRowSet(startRowOffset=offset, rows=[], columns=values, columnCount=len(columns))


def _with_nulls(values: list[Any], arrow_type: pa.DataType, rng: np.random.Generator) -> pa.Array:
    holes = rng.random(len(values)) < 0.3
    return pa.array(
        [None if hole else v for v, hole in zip(values, holes, strict=True)], arrow_type
    )


def _every_type(rng: np.random.Generator) -> tuple[pa.RecordBatch, list[ColumnType]]:
    """One column of each type a Spark result can hold, as the engine writes it to Arrow."""
    n = ROWS

    def ints(low: int, high: int) -> list[int]:
        return [int(x) for x in rng.integers(low, high, n)]

    def texts(alphabet: str) -> list[str]:
        return ["".join(rng.choice(list(alphabet), int(k))) for k in rng.integers(0, 6, n)]

    floats = [float(x) for x in rng.normal(0, 1e3, n)]
    floats[:4] = [float("nan"), float("inf"), -0.0, 1e-310]
    seconds = [int(x) for x in rng.integers(-(10**10), 10**10, n)]
    columns: dict[str, tuple[pa.Array, Any]] = {
        "b": (_with_nulls([bool(x) for x in ints(0, 2)], pa.bool_(), rng), "boolean"),
        "t": (_with_nulls(ints(-128, 128), pa.int8(), rng), "byte"),
        "h": (_with_nulls(ints(-(2**15), 2**15), pa.int16(), rng), "short"),
        "i": (_with_nulls(ints(-(2**31), 2**31), pa.int32(), rng), "integer"),
        "l": (_with_nulls(ints(-(2**63), 2**63 - 1), pa.int64(), rng), "long"),
        "d": (_with_nulls(floats, pa.float64(), rng), "double"),
        "f": (_with_nulls(floats, pa.float32(), rng), "float"),
        "s": (_with_nulls(texts("aé€𝄞\x00 ,\"'"), pa.string(), rng), "string"),
        "ls": (_with_nulls(texts("xyz"), pa.large_string(), rng), "string"),
        "v": (_with_nulls(texts("ab"), pa.string(), rng), "varchar(5)"),
        "bin": (
            _with_nulls(
                [bytes(rng.integers(0, 256, int(k), np.uint8)) for k in ints(0, 6)],
                pa.binary(),
                rng,
            ),
            "binary",
        ),
        "dec": (
            _with_nulls(
                [Decimal(x).scaleb(-2) for x in ints(-(10**8), 10**8)], pa.decimal128(10, 2), rng
            ),
            "decimal(10,2)",
        ),
        "dec0": (
            _with_nulls([Decimal(x) for x in ints(-(10**9), 10**9)], pa.decimal128(38, 0), rng),
            "decimal(38,0)",
        ),
        "day": (
            _with_nulls(
                [date(1, 1, 1) + timedelta(days=x) for x in ints(0, 3652059)], pa.date32(), rng
            ),
            "date",
        ),
        "ts": (
            _with_nulls(
                [datetime(2024, 1, 2, tzinfo=UTC) + timedelta(seconds=s) for s in seconds],
                pa.timestamp("us", tz="UTC"),
                rng,
            ),
            "timestamp",
        ),
        "ntz": (
            _with_nulls(
                [datetime(2024, 1, 2) + timedelta(microseconds=s) for s in seconds],
                pa.timestamp("us"),
                rng,
            ),
            "timestamp_ntz",
        ),
        "dt": (
            _with_nulls([timedelta(microseconds=s) for s in seconds], pa.duration("us"), rng),
            "interval day to second",
        ),
        "arr": (
            _with_nulls([[x, None] for x in ints(0, 9)], pa.list_(pa.int32()), rng),
            {"type": "array", "elementType": "integer", "containsNull": True},
        ),
        "map": (
            _with_nulls([[("k", x)] for x in ints(0, 9)], pa.map_(pa.string(), pa.int64()), rng),
            {"type": "map", "keyType": "string", "valueType": "long", "valueContainsNull": True},
        ),
        "st": (
            _with_nulls(
                [{"a": x, "d": date(2024, 1, 1)} for x in ints(0, 9)],
                pa.struct([("a", pa.int64()), ("d", pa.date32())]),
                rng,
            ),
            {"type": "struct", "fields": []},
        ),
        "nothing": (pa.nulls(n), "void"),
    }
    batch = pa.record_batch({name: array for name, (array, _) in columns.items()})
    schema = {"fields": [{"name": name, "type": spark} for name, (_, spark) in columns.items()]}
    return batch, column_types(schema)


PAGES: dict[str, Callable[[pa.RecordBatch], list[pa.RecordBatch]]] = {
    "one slice at an odd offset": lambda b: [b.slice(3, 100)],
    "three batches": lambda b: [b.slice(1, 13), b.slice(50, 77), b.slice(199, 4)],
    "a whole batch": lambda b: [b],
    "no rows in a batch": lambda b: [b.slice(7, 0)],
    "no batch": lambda b: [],
}


@pytest.mark.parametrize("page", PAGES)
@pytest.mark.parametrize("seed", [1, 2, 3])
def test_every_column_type_encodes_as_the_per_value_encoder_did(page: str, seed: int) -> None:
    batch, columns = _every_type(np.random.default_rng(seed))
    batches = PAGES[page](batch)
    expected = wire.encode_struct(per_value_row_set(batches, columns, 4242))
    assert encoding.row_set(batches, columns, 4242) == expected
    # and the TRowSet rowsets builds (the row-based protocols' source, and the fallback)
    assert wire.encode_struct(rowsets.row_set(batches, columns, 4242, columnar=True)) == expected


def test_decimals_arrow_would_write_with_an_exponent_are_written_out() -> None:
    column = column_types({"fields": [{"name": "d", "type": "decimal(38,10)"}]})
    values = [Decimal("0.0000000052"), Decimal("-1.5000000000"), None]
    batch = pa.record_batch({"d": pa.array(values, pa.decimal128(38, 10))})
    decoded = wire.decode_struct(T.TRowSet(), encoding.row_set([batch], column, 0))
    assert decoded.columns[0].stringVal.values == ["0.0000000052", "-1.5000000000", ""]
    assert decoded.columns[0].stringVal.nulls == bytes([0b100])


@pytest.mark.parametrize("more", [True, False, None])
def test_a_reply_around_an_encoded_row_set_is_the_reply_of_the_row_set(more: bool | None) -> None:
    batch, columns = _every_type(np.random.default_rng(7))
    rowset = per_value_row_set([batch.slice(5, 40)], columns, 5)
    encoded = wire.EncodedRowSet(encoding.row_set([batch.slice(5, 40)], columns, 5))
    call = wire.Call("FetchResults", 77, None)
    plain = T.TFetchResultsResp(status=ok(), hasMoreRows=more, results=rowset)
    spliced = T.TFetchResultsResp(status=ok(), hasMoreRows=more, results=encoded)
    assert wire.encode_reply(call, spliced) == wire.encode_reply(call, plain)
    # what reads its fields (a test, a log line) sees the row set itself
    assert encoded.columns == rowset.columns and encoded.startRowOffset == 5


def test_what_arrow_holds_in_a_nulls_slot_is_not_sent() -> None:
    # Arrow leaves a NULL's slot undefined: here numbers, a true bit and bytes that are
    # not the placeholders (0, False, "") the per-value encoder sends, in a slice.
    validity = pa.py_buffer(bytes([0b10101010, 0b11]))  # rows 0, 2, 4 and 6 are NULL
    numbers = pa.py_buffer(np.arange(100, 110, dtype=np.int64).tobytes())
    bits = pa.py_buffer(bytes([0xFF, 0xFF]))
    offsets = pa.py_buffer(np.arange(0, 31, 3, dtype=np.int32).tobytes())
    text = pa.py_buffer(b"abcdefghijklmnopqrstuvwxyz0123")
    batch = pa.record_batch(
        {
            "l": pa.Array.from_buffers(pa.int64(), 10, [validity, numbers], null_count=4),
            "b": pa.Array.from_buffers(pa.bool_(), 10, [validity, bits], null_count=4),
            "s": pa.Array.from_buffers(pa.string(), 10, [validity, offsets, text], null_count=4),
        }
    ).slice(1, 8)
    schema = {
        "fields": [
            {"name": n, "type": t}
            for n, t in zip("lbs", ("long", "boolean", "string"), strict=True)
        ]
    }
    columns = column_types(schema)
    expected = wire.encode_struct(per_value_row_set([batch], columns, 1))
    assert encoding.row_set([batch], columns, 1) == expected
    decoded = wire.decode_struct(T.TRowSet(), expected)
    assert decoded.columns[0].i64Val.values == [101, 0, 103, 0, 105, 0, 107, 108]
    assert decoded.columns[2].stringVal.values[:2] == ["def", ""]
