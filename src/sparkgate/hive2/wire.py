"""Thrift messages in and out of bytes: one call decoded, one reply encoded.

Requests are small and may be hostile: they are decoded by thriftpy2's pure-Python binary
protocol, which fails cleanly on garbage. Replies can be large (a page of a result) and are
ours: they are encoded by its Cython protocol.
"""

from __future__ import annotations

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


def message_length(buffer: bytes) -> int | None:
    """The length of the first whole message in ``buffer`` (an unframed stream), or None when
    more bytes are needed. Raises MalformedMessage for bytes that cannot become one."""
    transport = TMemoryBuffer(buffer)
    protocol = TBinaryProtocol(transport, decode_response=False)
    try:
        protocol.read_message_begin()
        protocol.skip(TType.STRUCT)
    except Exception as exc:
        if transport._pos >= len(buffer):
            return None  # ran off the end: the rest has not arrived yet
        raise MalformedMessage(f"not a Thrift binary message: {exc}") from exc
    return int(transport._pos)


def decode_call(data: bytes) -> Call:
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


def encode_reply(call: Call, response: Any) -> bytes:
    result = getattr(T.TCLIService, call.api + "_result")()
    result.success = response
    transport = TCyMemoryBuffer()
    protocol = TCyBinaryProtocol(transport)
    protocol.write_message_begin(call.api, TMessageType.REPLY, call.seqid)
    protocol.write_struct(result)
    protocol.write_message_end()
    protocol.trans.flush()
    return bytes(transport.getvalue())


def encode_exception(call: Call, kind: int, message: str) -> bytes:
    transport = TMemoryBuffer()
    protocol = TBinaryProtocol(transport)
    protocol.write_message_begin(call.api, TMessageType.EXCEPTION, call.seqid)
    protocol.write_struct(TApplicationException(kind, message))
    protocol.write_message_end()
    return bytes(transport.getvalue())
