"""An unframed Thrift stream (NOSASL) cut into messages without a server: real messages come
out whole however the bytes arrive, and what no Thrift writer produces is refused at once."""

from __future__ import annotations

import struct
from typing import Any

import pytest
from TCLIService import TCLIService
from TCLIService import ttypes as hive
from thrift.protocol.TBinaryProtocol import TBinaryProtocol
from thrift.Thrift import TMessageType
from thrift.transport.TTransport import TMemoryBuffer

from sparkgate.hive2 import wire


def _message(api: str, value: Any, message_type: int = TMessageType.CALL) -> bytes:
    """A message as PyHive's Thrift (Apache Thrift's own Python library) writes it."""
    if message_type == TMessageType.CALL:
        payload = getattr(TCLIService, api + "_args")(req=value)
    else:
        payload = getattr(TCLIService, api + "_result")(success=value)
    buffer = TMemoryBuffer()
    protocol = TBinaryProtocol(buffer)
    protocol.writeMessageBegin(api, message_type, 7)
    payload.write(protocol)
    protocol.writeMessageEnd()
    return bytes(buffer.getvalue())


def _session() -> Any:
    return hive.TSessionHandle(sessionId=hive.THandleIdentifier(guid=b"g" * 16, secret=b"s" * 16))


MESSAGES = [
    _message(
        "OpenSession",
        hive.TOpenSessionReq(
            client_protocol=9,
            username="alice",
            password="secret",
            configuration={"use:database": "sales", "set:hivevar:x": "1"},
        ),
    ),
    _message(
        "ExecuteStatement",
        hive.TExecuteStatementReq(
            sessionHandle=_session(), statement="SELECT 1", confOverlay={}, runAsync=True
        ),
    ),
    _message(
        "GetTables",
        hive.TGetTablesReq(sessionHandle=_session(), tableName="%", tableTypes=["TABLE", "VIEW"]),
    ),
    # A reply: lists of numbers (read a run at a time) and of strings, a binary bitmap.
    _message(
        "FetchResults",
        hive.TFetchResultsResp(
            status=hive.TStatus(statusCode=0),
            hasMoreRows=False,
            results=hive.TRowSet(
                startRowOffset=0,
                rows=[],
                columns=[
                    hive.TColumn(i64Val=hive.TI64Column(values=list(range(500)), nulls=b"\0")),
                    hive.TColumn(doubleVal=hive.TDoubleColumn(values=[0.5] * 30, nulls=b"")),
                    hive.TColumn(stringVal=hive.TStringColumn(values=["a", "bc", ""], nulls=b"")),
                ],
            ),
        ),
        TMessageType.REPLY,
    ),
]


@pytest.mark.parametrize("message", MESSAGES)
def test_real_messages_are_whole_exactly_at_their_end(message: bytes) -> None:
    assert wire.message_length(message) == len(message)
    assert wire.message_length(message + b"\x80next") == len(message)
    assert wire.message_length(message[:-1]) is None


def test_real_calls_decode_after_the_shape_check() -> None:
    calls = [wire.decode_call(message) for message in MESSAGES[:3]]
    assert [c.api for c in calls] == ["OpenSession", "ExecuteStatement", "GetTables"]
    assert calls[0].request.configuration["use:database"] == "sales"
    assert calls[2].request.tableTypes == ["TABLE", "VIEW"]


@pytest.mark.parametrize("piece", [1, 3, 64, 100_000])
def test_a_stream_comes_out_whole_however_it_arrives(piece: int) -> None:
    stream = b"".join(MESSAGES) * 2
    splitter = wire.MessageSplitter(max_message=65536)
    out: list[bytes] = []
    for start in range(0, len(stream), piece):
        splitter.feed(stream[start : start + piece])
        while (message := splitter.next_message()) is not None:
            out.append(message)
    assert out == MESSAGES * 2
    assert splitter.buffered == 0


def _header(name: bytes = b"GetInfo") -> bytes:
    return struct.pack(">Ii", 0x80010001, len(name)) + name + struct.pack(">i", 1)


@pytest.mark.parametrize(
    ("data", "reason"),
    [
        (b"\x80\x02\x00\x01" + b"\xff" * 40, "not a Thrift binary message"),
        (b"GET / HTTP/1.1\r\nHost: x\r\n\r\n", "not a Thrift binary message"),
        (struct.pack(">Ii", 0x80010001, 1 << 30), "longer than 65536 bytes"),
        (struct.pack(">Ii", 0x80010001, -5), "negative length"),
        # A field of type 0x7f, and a list of two billion elements of type STOP, which take
        # no bytes: thriftpy2 would skip them one by one for half an hour.
        (_header() + b"\x7f\x00\x01", "unknown Thrift type 127"),
        (_header() + b"\x0f\x00\x09\x00" + struct.pack(">i", 2**31 - 1), "unknown Thrift type 0"),
        # A list of a million i64 in a 64 KiB message, and a string over the limit.
        (_header() + b"\x0f\x00\x09\x0a" + struct.pack(">i", 10**6), "longer than 65536"),
        (_header() + b"\x0b\x00\x09" + struct.pack(">i", 70_000), "longer than 65536"),
        (_header() + b"\x0c\x00\x01" * 70, "nested deeper than 64 levels"),
    ],
)
def test_what_no_thrift_writer_sends_is_refused_at_once(data: bytes, reason: str) -> None:
    splitter = wire.MessageSplitter(max_message=65536)
    splitter.feed(data)
    with pytest.raises(wire.MalformedMessage, match=reason):
        splitter.next_message()
    with pytest.raises(wire.MalformedMessage):
        wire.decode_call(data)


def test_a_message_that_never_ends_is_refused_past_the_limit() -> None:
    splitter = wire.MessageSplitter(max_message=1000)
    splitter.feed(_header() + b"\x0c\x00\x01")  # a struct whose fields keep coming
    assert splitter.next_message() is None
    with pytest.raises(wire.MalformedMessage, match="longer than 1000 bytes"):
        for _ in range(400):
            splitter.feed(b"\x08\x00\x02\x00\x00\x00\x01")
            assert splitter.next_message() is None
