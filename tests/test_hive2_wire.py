"""The HiveServer2 wire format without a server: sparkgate's IDL against the TCLIService code
that PyHive generated from Hive's own IDL, row sets, types and handles."""

from __future__ import annotations

import inspect
from datetime import UTC, date, datetime
from decimal import Decimal
from typing import Any

import pyarrow as pa
import pytest
from TCLIService import ttypes as hive_types
from thrift.Thrift import TType

from sparkgate.hive2 import rowsets, wire
from sparkgate.hive2.handles import InvalidHandle, handle_id, make_handle
from sparkgate.hive2.idl import T
from sparkgate.hive2.types import column_type, column_types, table_schema

# thriftpy2's type codes are Apache Thrift's; binary is a string on the wire.
_BINARY = 18


def _hive_structs() -> dict[str, Any]:
    return {
        name: cls
        for name, cls in inspect.getmembers(hive_types, inspect.isclass)
        if getattr(cls, "thrift_spec", None)
    }


def test_every_struct_both_define_has_the_same_fields_on_the_wire() -> None:
    checked = 0
    for name, theirs in _hive_structs().items():
        ours = getattr(T, name, None)
        if ours is None:
            continue
        their_fields = {f[0]: (f[1], f[2]) for f in theirs.thrift_spec if f is not None}
        our_fields = {fid: (spec[0], spec[1]) for fid, spec in ours.thrift_spec.items()}
        for fid, (ttype, fname) in their_fields.items():
            assert fid in our_fields, f"{name}.{fname} (field {fid}) is missing"
            our_type, our_name = our_fields[fid]
            if our_type == _BINARY:
                our_type = TType.STRING
            assert (our_type, our_name) == (ttype, fname), f"{name} field {fid}"
        checked += 1
    assert checked >= 70


def test_enums_match_hives_values() -> None:
    for name in ("TProtocolVersion", "TTypeId", "TStatusCode", "TOperationState", "TGetInfoType"):
        theirs = getattr(hive_types, name)._VALUES_TO_NAMES
        ours = getattr(T, name)._VALUES_TO_NAMES
        assert {k: v for k, v in ours.items() if k in theirs} == theirs


def test_columnar_row_sets_carry_nulls_in_a_bitmap() -> None:
    batch = pa.record_batch(
        {
            "i": pa.array([1, None, 3] + [None] * 6, pa.int32()),
            "f": pa.array([1.1, None, 2.5, 0, 0, 0, 0, 0, 0], pa.float32()),
            "d": pa.array([Decimal("1.50"), None] + [Decimal(0)] * 7, pa.decimal128(5, 2)),
            "day": pa.array([date(2024, 2, 29)] + [None] * 8, pa.date32()),
        }
    )
    schema = {
        "fields": [
            {"name": "i", "type": "integer"},
            {"name": "f", "type": "float"},
            {"name": "d", "type": "decimal(5,2)"},
            {"name": "day", "type": "date"},
        ]
    }
    columns = column_types(schema)
    rows = rowsets.row_set([batch], columns, 0, columnar=True)
    ints = rows.columns[0].i32Val
    assert ints.values == [1, 0, 3, 0, 0, 0, 0, 0, 0]
    assert ints.nulls == bytes([0b11111010, 0b00000001])  # rows 1, 3..8 are NULL
    assert rows.columns[1].doubleVal.values[:3] == [1.1, 0.0, 2.5]
    assert rows.columns[2].stringVal.values[:2] == ["1.50", ""]
    assert rows.columns[3].stringVal.values[0] == "2024-02-29"
    assert rows.columns[3].stringVal.nulls == bytes([0b11111110, 0b00000001])

    old = rowsets.row_set([batch.slice(0, 2)], columns, 0, columnar=False)
    assert old.rows[0].colVals[0].i32Val.value == 1
    assert old.rows[1].colVals[0].i32Val.value is None


def test_types_are_described_as_spark_thrift_server_describes_them() -> None:
    decimal = column_type("d", "decimal(10,2)")
    described = table_schema([decimal]).columns[0].typeDesc.types[0].primitiveEntry
    assert described.type == T.TTypeId.DECIMAL_TYPE
    assert described.typeQualifiers.qualifiers["precision"].i32Value == 10
    assert described.typeQualifiers.qualifiers["scale"].i32Value == 2
    array = column_type("a", {"type": "array", "elementType": "integer", "containsNull": True})
    assert (array.type_id, array.wire) == (T.TTypeId.ARRAY_TYPE, "string")
    assert column_type("v", "varchar(5)").length == 5
    assert column_type("x", "variant").type_id == T.TTypeId.STRING_TYPE
    assert rowsets.timestamp_text(datetime(2024, 1, 2, 3, 4, 5)) == "2024-01-02 03:04:05"
    assert rowsets.timestamp_text(datetime(2024, 1, 2, 3, 4, 5, 120000)) == (
        "2024-01-02 03:04:05.12"
    )
    assert rowsets.timestamp_text(datetime(2024, 1, 2, tzinfo=UTC)) == rowsets.timestamp_text(
        datetime(2024, 1, 2, tzinfo=UTC).astimezone().replace(tzinfo=None)
    )


def test_handles_carry_ids_and_foreign_ones_are_refused() -> None:
    handle = make_handle(b"Q", 123456789)
    assert handle_id(handle, b"Q", "operation") == 123456789
    with pytest.raises(InvalidHandle):
        handle_id(handle, b"S", "session")  # an operation handle is not a session handle
    with pytest.raises(InvalidHandle):
        handle_id(T.THandleIdentifier(guid=bytes(16), secret=bytes(16)), b"Q", "operation")


def test_unframed_messages_are_found_whole_or_waited_for() -> None:
    from thriftpy2.protocol.binary import TBinaryProtocol
    from thriftpy2.thrift import TMessageType
    from thriftpy2.transport.memory import TMemoryBuffer

    buffer = TMemoryBuffer()
    protocol = TBinaryProtocol(buffer)
    protocol.write_message_begin("GetInfo", TMessageType.CALL, 1)
    protocol.write_struct(T.TCLIService.GetInfo_args(req=T.TGetInfoReq(infoType=17)))
    message = buffer.getvalue()
    assert wire.message_length(message) == len(message)
    assert wire.message_length(message[:-1]) is None
    assert wire.message_length(message + b"next") == len(message)
    call = wire.decode_call(message)
    assert (call.api, call.request.infoType) == ("GetInfo", 17)
    with pytest.raises(wire.MalformedMessage):
        wire.decode_call(b"\x00\x00\x00\x05hello")
