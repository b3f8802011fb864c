"""HiveServer2's binary transport: Thrift over TCP, after a SASL PLAIN handshake (or none).

The SASL exchange (as Hive's ``TSaslServerTransport`` frames it): each message is a status
byte (START 1, OK 2, BAD 3, ERROR 4, COMPLETE 5), a 4-byte big-endian length and a payload.
The client sends START with the mechanism's name, then OK with PLAIN's
``authzid NUL user NUL password``; the server answers COMPLETE, or BAD with the reason (beeline
shows it as "Peer indicated failure: ..."). Then every Thrift message is a frame: a 4-byte
length and the message (PLAIN has no integrity layer).

Without SASL (NOSASL, only when ``SPARKGATE_AUTH=none``) the stream is bare Thrift messages;
one is told from the other by the first byte (0x80 starts a strict binary message).

Each connection is a task on the server's event loop; a call that waits (a synchronous
execute) holds only its own connection. Nothing a client sends can stop the listener.
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import logging
import ssl
import struct
from typing import NoReturn

from sparkgate import logs
from sparkgate.auth.principal import Principal
from sparkgate.auth.users import Users
from sparkgate.errors import Unauthenticated
from sparkgate.hive2.door import Door
from sparkgate.hive2.idl import T
from sparkgate.hive2.wire import Call, MalformedMessage, decode_call, encode_reply, message_length
from sparkgate.settings import Settings

log = logging.getLogger("sparkgate.hive2")

START, OK, BAD, ERROR, COMPLETE = 1, 2, 3, 4, 5
_THRIFT_STRICT = 0x80


class HandshakeFailed(Exception):
    pass


class BinaryServer:
    def __init__(self, door: Door, users: Users, settings: Settings) -> None:
        self.door = door
        self.users = users
        self.settings = settings
        self.max_message = settings.request_max_bytes
        self.port: int | None = None
        self._server: asyncio.Server | None = None
        self._connections: set[asyncio.Task[None]] = set()

    async def start(self) -> None:
        context = None
        if self.settings.ssl_certfile is not None and self.settings.ssl_keyfile is not None:
            context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
            context.load_cert_chain(
                str(self.settings.ssl_certfile.expanduser()),
                str(self.settings.ssl_keyfile.expanduser()),
            )
        self._server = await asyncio.start_server(
            self._connection, self.settings.host, self.settings.thrift_port, ssl=context
        )
        self.port = self._server.sockets[0].getsockname()[1]
        log.info("HiveServer2 binary transport on %s:%s", self.settings.host, self.port)

    async def close(self) -> None:
        if self._server is not None:
            self._server.close()
        for task in list(self._connections):
            task.cancel()
        for task in list(self._connections):
            with contextlib.suppress(BaseException):
                await task
        if self._server is not None:
            with contextlib.suppress(Exception):
                await self._server.wait_closed()

    async def _connection(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        task = asyncio.current_task()
        assert task is not None
        self._connections.add(task)
        peer = writer.get_extra_info("peername")
        address = peer[0] if isinstance(peer, tuple) else None
        try:
            first = await reader.readexactly(1)
            if first[0] == _THRIFT_STRICT:
                await self._serve_unframed(reader, writer, first, address)
            else:
                user = await self._handshake(reader, writer, first[0], address)
                logs.bind(user=user.name)  # this connection's task: its records name the user
                await self._serve_framed(reader, writer, user)
        except (asyncio.IncompleteReadError, ConnectionError, HandshakeFailed):
            pass  # the client went away, or was told why it is refused
        except asyncio.CancelledError:
            raise
        except Exception:
            log.exception("HiveServer2 connection from %s failed", address)
        finally:
            self._connections.discard(task)
            writer.close()
            with contextlib.suppress(Exception):
                await writer.wait_closed()

    # -- SASL ------------------------------------------------------------------------------

    async def _handshake(
        self,
        reader: asyncio.StreamReader,
        writer: asyncio.StreamWriter,
        status: int,
        address: str | None,
    ) -> Principal:
        mechanism = await self._sasl_message(reader, writer, status)
        if status != START:
            await self._refuse(writer, ERROR, "Expected a SASL START message.")
        name = mechanism.decode("utf-8", "replace")
        if name.upper() != "PLAIN":
            await self._refuse(
                writer,
                BAD,
                f"Unsupported SASL mechanism {name!r}: sparkgate accepts PLAIN (a user name "
                "and a password or personal access token).",
            )
        status = (await reader.readexactly(1))[0]
        response = await self._sasl_message(reader, writer, status)
        if status not in (OK, COMPLETE):
            await self._refuse(writer, ERROR, "Expected the PLAIN response in a SASL OK message.")
        parts = response.split(b"\0")
        if len(parts) != 3:
            await self._refuse(writer, BAD, "Malformed PLAIN response.")
        name, password = (p.decode("utf-8", "replace") for p in parts[1:])
        header = "Basic " + base64.b64encode(f"{name}:{password}".encode()).decode()
        try:  # with authentication off, anyone is the anonymous user
            user = await self.users.authenticate_later(header, address=address)
        except Unauthenticated:
            await self._refuse(
                writer,
                BAD,
                f"Authentication failed: wrong user name or password (or token) for {name!r}.",
            )
        self._send(writer, COMPLETE, b"")
        await writer.drain()
        return user

    async def _sasl_message(
        self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter, status: int
    ) -> bytes:
        if status not in (START, OK, BAD, ERROR, COMPLETE):
            await self._refuse(
                writer, ERROR, f"Not a SASL message (status byte {status}): use SASL PLAIN."
            )
        (length,) = struct.unpack(">I", await reader.readexactly(4))
        if length > 65536:
            await self._refuse(writer, ERROR, f"SASL message of {length} bytes is too long.")
        return await reader.readexactly(length)

    def _send(self, writer: asyncio.StreamWriter, status: int, payload: bytes) -> None:
        writer.write(bytes([status]) + struct.pack(">I", len(payload)) + payload)

    async def _refuse(self, writer: asyncio.StreamWriter, status: int, message: str) -> NoReturn:
        self._send(writer, status, message.encode())
        with contextlib.suppress(ConnectionError):
            await writer.drain()
        raise HandshakeFailed(message)

    # -- after the handshake ---------------------------------------------------------------

    async def _serve_framed(
        self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter, user: Principal
    ) -> None:
        while True:
            (length,) = struct.unpack(">I", await reader.readexactly(4))
            if length > self.max_message:
                log.warning("closing a HiveServer2 connection: a %d-byte frame", length)
                return
            message = await reader.readexactly(length)
            try:
                reply = await self.door.answer(message, user)
            except MalformedMessage as exc:
                log.warning("closing a HiveServer2 connection: %s", exc)
                return
            writer.write(struct.pack(">I", len(reply)) + reply)
            await writer.drain()

    async def _serve_unframed(
        self,
        reader: asyncio.StreamReader,
        writer: asyncio.StreamWriter,
        buffer: bytes,
        address: str | None,
    ) -> None:
        user = None if self.users.enabled else self.users.authenticate(None, address=address)
        while True:
            length = message_length(buffer)
            while length is None:
                if len(buffer) > self.max_message:
                    return
                more = await reader.read(65536)
                if not more:
                    return
                buffer += more
                length = message_length(buffer)
            message, buffer = buffer[:length], buffer[length:]
            if user is None:
                # NOSASL gives no credentials: tell the client how to connect, then close.
                writer.write(_refusal(decode_call(message)))
                await writer.drain()
                return
            writer.write(await self.door.answer(message, user))
            await writer.drain()


def _refusal(call: Call) -> bytes:
    message = (
        "This server requires authentication: connect with SASL PLAIN and a user name and "
        "password (PyHive auth='CUSTOM' or 'LDAP'; JDBC: user and password), not NOSASL."
    )
    if call.api == "OpenSession":
        status = T.TStatus(statusCode=T.TStatusCode.ERROR_STATUS, errorMessage=message)
        return encode_reply(call, T.TOpenSessionResp(status=status, serverProtocolVersion=0))
    return Door.refuse(call, message)
