"""One Thrift message in, one reply out: what both transports (binary TCP and HTTP) share."""

from __future__ import annotations

from thriftpy2.thrift import TApplicationException

from sparkgate.auth.principal import Principal
from sparkgate.hive2.service import HiveService
from sparkgate.hive2.wire import Call, decode_call, encode_exception, encode_reply


class Door:
    def __init__(self, service: HiveService) -> None:
        self.service = service

    async def answer(self, message: bytes, user: Principal) -> bytes:
        """The reply to one call. Raises MalformedMessage for bytes that are not a call."""
        call = decode_call(message)
        if call.request is None:
            return encode_exception(
                call,
                TApplicationException.UNKNOWN_METHOD,
                f"sparkgate does not serve the TCLIService call {call.api!r}.",
            )
        try:
            response = await self.service.call(call.api, call.request, user)
        except Exception as exc:  # a call whose response has no status (GetQueryId)
            return encode_exception(call, TApplicationException.INTERNAL_ERROR, str(exc))
        return encode_reply(call, response)

    @staticmethod
    def refuse(call: Call, message: str) -> bytes:
        return encode_exception(call, TApplicationException.INTERNAL_ERROR, message)
