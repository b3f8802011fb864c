"""Thrift messages in and out of bytes: one call decoded, one reply encoded, and an unframed
stream (NOSASL) cut into messages.

Requests are small and may be hostile. Their shape (types, lengths, nesting) is checked first
by a scanner of our own, which looks at each byte once and refuses what no Thrift writer
produces; then they are decoded by thriftpy2's pure-Python binary protocol. Replies can be
large (a page of a result) and are ours: they are encoded by its Cython protocol. A page of
a result comes encoded already (``EncodedRowSet``, made off the event loop): its reply is
written around those bytes.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass
from typing import Any

from thriftpy2.protocol.binary import TBinaryProtocol
from thriftpy2.protocol.cybin import TCyBinaryProtocol  # type: ignore[attr-defined]
from thriftpy2.thrift import TApplicationException, TMessageType, TType
from thriftpy2.transport.memory import TCyMemoryBuffer, TMemoryBuffer  # type: ignore[attr-defined]

from sparkgate.hive2.idl import T


class MalformedMessage(Exception):
    """Bytes that are not a Thrift binary message: the connection cannot go on."""


@dataclass(frozen=True)
class Call:
    api: str
    seqid: int
    request: Any  # the call's single argument (``req``); None for an unknown method


# How deeply structs and containers may nest: thriftpy2's own limit when it decodes.
_MAX_DEPTH = 64
_VERSION_MASK, _VERSION_1 = 0xFFFF0000, 0x80010000
_INT = struct.Struct(">i")
_UINT = struct.Struct(">I")
_FIXED_WIDTH = {
    TType.BOOL: 1,
    TType.BYTE: 1,
    TType.I16: 2,
    TType.I32: 4,
    TType.I64: 8,
    TType.DOUBLE: 8,
}
# The fewest bytes a value of each type takes; a type code not here is none of the binary
# protocol's. (thriftpy2 skips an unknown type as zero bytes: a 20-byte message declaring a
# list of two billion such elements would hold the event loop for half an hour.)
_MIN_WIDTH = {
    **_FIXED_WIDTH,
    TType.STRING: 4,
    TType.STRUCT: 1,
    TType.MAP: 6,
    TType.SET: 5,
    TType.LIST: 5,
}
# What the scanner expects next (the first item of each entry on its stack).
_HEADER, _NAME, _STRUCT, _ITEMS, _VALUE = range(5)


class MessageSplitter:
    """Cuts an unframed stream of Thrift binary messages (NOSASL) into whole messages.

    splitter = MessageSplitter(max_message=65536)
    splitter.feed(await reader.read(65536))
    message = splitter.next_message()  # bytes, or None until more arrive

    It remembers how far it has got, so each byte is looked at once as the stream grows:
    parsing the buffer again from the start after every read would let a client that
    trickles a large message in tiny pieces spend quadratic time on the event loop. A length
    or a count that cannot fit in ``max_message`` is refused as soon as it is read.
    """

    def __init__(self, max_message: int) -> None:
        self.max_message = max_message
        self._buffer = bytearray()
        self._pos = 0  # how far into the buffer the current message has been scanned
        # What remains to be read, innermost last: [kind, ...] lists, mutated in place (a
        # container's remaining count) because this loop runs once per value.
        self._stack: list[list[Any]] = [[_HEADER]]

    @property
    def buffered(self) -> int:
        return len(self._buffer)

    def feed(self, data: bytes) -> None:
        self._buffer += data

    def next_message(self) -> bytes | None:
        """The next whole message (taken off the buffer), or None until more bytes arrive.
        Raises MalformedMessage for bytes that cannot become a message of ``max_message``."""
        length = self.scan()
        if length is None:
            return None
        message = bytes(self._buffer[:length])
        del self._buffer[:length]
        self._pos = 0
        self._stack = [[_HEADER]]
        return message

    def scan(self) -> int | None:
        """The length of the first message once it is whole, else None (more is needed)."""
        data, stack = self._buffer, self._stack
        steps = (self._header, self._name, self._struct, self._items, self._value)
        while stack:
            pos = steps[stack[-1][0]](data, self._pos, stack)
            if pos < 0:
                if len(data) > self.max_message:
                    raise MalformedMessage(f"a message longer than {self.max_message} bytes")
                return None
            self._pos = pos
        return self._pos

    # Each step reads what the top of the stack expects from ``pos`` and returns where it
    # stopped, or -1 when the bytes for it have not all arrived (nothing is consumed then).

    def _header(self, data: bytearray, pos: int, stack: list[list[Any]]) -> int:
        if len(data) - pos < 8:
            return -1
        (version,) = _UINT.unpack_from(data, pos)
        if version & _VERSION_MASK != _VERSION_1:
            raise MalformedMessage(f"not a Thrift binary message (header {version:#010x})")
        (size,) = _INT.unpack_from(data, pos + 4)
        self._check_size(pos + 8, size, 1)
        stack[-1] = [_NAME, size]
        return pos + 8

    def _name(self, data: bytearray, pos: int, stack: list[list[Any]]) -> int:
        size = int(stack[-1][1]) + 4  # the method's name, then the 4-byte sequence id
        if len(data) - pos < size:
            return -1
        stack[-1] = [_STRUCT, 1]
        return pos + size

    def _struct(self, data: bytearray, pos: int, stack: list[list[Any]]) -> int:
        if pos >= len(data):
            return -1
        if data[pos] == TType.STOP:
            stack.pop()
            return pos + 1
        if len(data) - pos < 3:  # a field: its type and a 2-byte id
            return -1
        stack.append([_VALUE, data[pos], stack[-1][1]])
        return pos + 3

    def _items(self, data: bytearray, pos: int, stack: list[list[Any]]) -> int:
        top = stack[-1]
        _, remaining, types, depth, width = top
        if remaining == 0:
            stack.pop()
            return pos
        if width:  # fixed-width elements: as many as have arrived, at once
            count = min(remaining, (len(data) - pos) // width)
            if count == 0:
                return -1
            top[1] = remaining - count
            return int(pos + count * width)
        top[1] = remaining - 1
        stack.extend([_VALUE, t, depth] for t in reversed(types))
        return pos

    def _value(self, data: bytearray, pos: int, stack: list[list[Any]]) -> int:
        _, ttype, depth = stack[-1]
        available = len(data) - pos
        width = _FIXED_WIDTH.get(ttype)
        if width is not None:
            if available < width:
                return -1
            stack.pop()
            return pos + width
        if ttype == TType.STRING:
            if available < 4:
                return -1
            (size,) = _INT.unpack_from(data, pos)
            self._check_size(pos + 4, size, 1)
            if available < 4 + size:
                return -1
            stack.pop()
            return int(pos + 4 + size)
        _min_width(ttype)  # an unknown type is refused here
        if depth >= _MAX_DEPTH:
            raise MalformedMessage(f"nested deeper than {_MAX_DEPTH} levels")
        if ttype == TType.STRUCT:
            stack[-1] = [_STRUCT, depth + 1]
            return pos
        header = 6 if ttype == TType.MAP else 5  # element types, then a 4-byte count
        if available < header:
            return -1
        types = tuple(data[pos : pos + header - 4])
        (size,) = _INT.unpack_from(data, pos + header - 4)
        self._check_size(pos + header, size, sum(_min_width(t) for t in types))
        stack[-1] = [_ITEMS, size, types, depth + 1, _fixed_width(types)]
        return pos + header

    def _check_size(self, start: int, count: int, width: int) -> None:
        if count < 0:
            raise MalformedMessage(f"a negative length ({count})")
        if start + count * width > self.max_message:
            raise MalformedMessage(f"a message longer than {self.max_message} bytes")


def _min_width(ttype: int) -> int:
    width = _MIN_WIDTH.get(ttype)
    if width is None:
        raise MalformedMessage(f"unknown Thrift type {ttype}")
    return width


def _fixed_width(types: tuple[int, ...]) -> int:
    """The bytes one element takes when that is fixed (numbers), else 0."""
    widths = [_FIXED_WIDTH.get(t, 0) for t in types]
    return 0 if 0 in widths else sum(widths)


def message_length(buffer: bytes) -> int | None:
    """The length of the first whole message in ``buffer`` (an unframed stream), or None when
    more bytes are needed. Raises MalformedMessage for bytes that cannot become one."""
    splitter = MessageSplitter(max_message=2**31 - 1)
    splitter.feed(buffer)
    return splitter.scan()


def decode_call(data: bytes) -> Call:
    """The call in one message. Raises MalformedMessage for bytes that are not one."""
    # The shape first, in one pass: thriftpy2 would otherwise loop over whatever count a
    # container declares, and recurse as deep as the bytes nest.
    if message_length(data) is None:
        raise MalformedMessage("a Thrift message cut short")
    protocol = TBinaryProtocol(TMemoryBuffer(data))
    try:
        api, message_type, seqid = protocol.read_message_begin()
    except Exception as exc:
        raise MalformedMessage(f"not a Thrift binary message: {exc}") from exc
    if message_type not in (TMessageType.CALL, TMessageType.ONEWAY):
        raise MalformedMessage(f"message type {message_type} is not a call")
    service = T.TCLIService
    if api not in service.thrift_services:
        return Call(api, seqid, None)
    args = getattr(service, api + "_args")()
    try:
        protocol.read_struct(args)
    except Exception as exc:
        raise MalformedMessage(f"{api}: the arguments cannot be read: {exc}") from exc
    return Call(api, seqid, args.req)


class EncodedRowSet:
    """A TRowSet held as its encoding (``encoded``, made off the event loop): a FetchResults
    reply is written around these bytes. Its fields (``columns``...) are decoded from them only
    if something reads them, or given as ``decoded`` when it was made from a TRowSet."""

    def __init__(self, encoded: bytes, decoded: Any = None) -> None:
        self.encoded = encoded
        self._decoded = decoded

    def __getattr__(self, name: str) -> Any:  # only names that are not attributes of ours
        if name.startswith("_"):
            raise AttributeError(name)
        if self._decoded is None:
            self._decoded = decode_struct(T.TRowSet(), self.encoded)
        return getattr(self._decoded, name)


def encode_struct(value: Any) -> bytes:
    """A struct's Thrift binary encoding (its fields and their STOP), as written in a message."""
    transport = TCyMemoryBuffer()
    protocol = TCyBinaryProtocol(transport)
    protocol.write_struct(value)
    protocol.trans.flush()
    return bytes(transport.getvalue())


def decode_struct(value: Any, data: bytes) -> Any:
    """``value`` (an empty struct) read from its encoding (bytes of ours: ``encode_struct``'s)."""
    TCyBinaryProtocol(TCyMemoryBuffer(data)).read_struct(value)
    return value


_FIELD = struct.Struct(">bh")
_SUCCESS = _FIELD.pack(TType.STRUCT, 0)  # field 0 of every *_result: the response


def encode_reply(call: Call, response: Any) -> bytes:
    if isinstance(getattr(response, "results", None), EncodedRowSet):
        return _fetch_reply(call, response)
    result = getattr(T.TCLIService, call.api + "_result")()
    result.success = response
    transport = TCyMemoryBuffer()
    protocol = TCyBinaryProtocol(transport)
    protocol.write_message_begin(call.api, TMessageType.REPLY, call.seqid)
    protocol.write_struct(result)
    protocol.write_message_end()
    protocol.trans.flush()
    return bytes(transport.getvalue())


def _fetch_reply(call: Call, response: Any) -> bytes:
    """What ``encode_reply`` writes for a TFetchResultsResp, written around its row set's
    encoding: the header, the response's fields in their order (status 1, hasMoreRows 2,
    results 3), then the STOPs of the response and of the result."""
    transport = TCyMemoryBuffer()
    protocol = TCyBinaryProtocol(transport)
    protocol.write_message_begin(call.api, TMessageType.REPLY, call.seqid)
    protocol.trans.flush()
    parts = [bytes(transport.getvalue()), _SUCCESS]
    parts += [_FIELD.pack(TType.STRUCT, 1), encode_struct(response.status)]
    if response.hasMoreRows is not None:
        parts += [_FIELD.pack(TType.BOOL, 2), b"\x01" if response.hasMoreRows else b"\x00"]
    parts += [_FIELD.pack(TType.STRUCT, 3), response.results.encoded, b"\x00\x00"]
    return b"".join(parts)


def encode_exception(call: Call, kind: int, message: str) -> bytes:
    transport = TMemoryBuffer()
    protocol = TBinaryProtocol(transport)
    protocol.write_message_begin(call.api, TMessageType.EXCEPTION, call.seqid)
    protocol.write_struct(TApplicationException(kind, message))
    protocol.write_message_end()
    return bytes(transport.getvalue())
