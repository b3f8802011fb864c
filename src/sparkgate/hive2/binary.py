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

Until a connection has logged in (the SASL handshake complete; for NOSASL with authentication
off, its first message read), anyone who can reach the port is talking to it, so:

- ``SPARKGATE_THRIFT_LOGIN_TIMEOUT`` (seconds, default 20 like Hive's
  ``hive.server2.thrift.login.timeout``; 0: none) bounds the time from the connection's
  start to its login; then it is closed. With TLS the handshake has a deadline of the same
  length before that.
- ``SPARKGATE_THRIFT_MAX_PENDING_LOGINS_PER_ADDRESS`` (default 16; 0: no cap) connections
  from one address may be logging in at once; one more is closed at once. Logged-in
  connections do not count.
- A message before login is at most 64 KiB (SASL, or NOSASL's first); a frame after it at
  most ``SPARKGATE_REQUEST_MAX_BYTES``.
- Whatever a client sends that cannot be served (bytes that are neither SASL nor Thrift, a
  length that is never met, a mechanism other than PLAIN, wrong credentials, NOSASL when
  authentication is on, a message that does not decode, before or after login) closes its
  connection with one WARNING line that names the address and the reason, and no traceback:
  a client must not be able to fill the log. A client that connects and leaves without a
  byte (a load balancer's health check) is not logged.
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import logging
import ssl
import struct
from dataclasses import dataclass
from typing import NoReturn

from sparkgate import logs
from sparkgate.auth.principal import Principal
from sparkgate.auth.users import Users
from sparkgate.errors import Unauthenticated
from sparkgate.hive2.door import Door
from sparkgate.hive2.idl import T
from sparkgate.hive2.wire import (
    Call,
    MalformedMessage,
    MessageSplitter,
    decode_call,
    encode_reply,
)
from sparkgate.settings import Settings

log = logging.getLogger("sparkgate.hive2")

START, OK, BAD, ERROR, COMPLETE = 1, 2, 3, 4, 5
_THRIFT_STRICT = 0x80
# The largest message before login: a SASL message (PLAIN's user and password) or NOSASL's
# first call (an OpenSession and its settings). Kept small because an unauthenticated client
# chooses what is buffered and parsed.
_LOGIN_MESSAGE_MAX = 65536
_REASON_MAX = 200  # characters of a reason in the log: a client may choose some of them


class Refused(Exception):
    """Something a client sent, or did not send in time, ends its connection: one warning."""


@dataclass
class _Login:
    user: Principal
    # NOSASL: the stream so far and its first message (read before the login deadline);
    # None after a SASL handshake, whose messages come in frames.
    splitter: MessageSplitter | None = None
    first: bytes | None = None


class BinaryServer:
    def __init__(self, door: Door, users: Users, settings: Settings) -> None:
        self.door = door
        self.users = users
        self.settings = settings
        self.max_message = settings.request_max_bytes
        self.login_timeout = settings.thrift_login_timeout
        self.max_pending = settings.thrift_max_pending_logins_per_address
        self.port: int | None = None
        self._server: asyncio.Server | None = None
        self._connections: set[asyncio.Task[None]] = set()
        self._pending: dict[str, int] = {}  # connections not logged in yet, by address

    async def start(self) -> None:
        context = None
        if self.settings.ssl_certfile is not None and self.settings.ssl_keyfile is not None:
            context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
            context.load_cert_chain(
                str(self.settings.ssl_certfile.expanduser()),
                str(self.settings.ssl_keyfile.expanduser()),
            )
        # The TLS handshake happens before a connection reaches _connection, so it gets the
        # login deadline of its own (asyncio's default would be 60 s).
        tls_deadline = None
        if context is not None and self.login_timeout > 0:
            tls_deadline = self.login_timeout
        self._server = await asyncio.start_server(
            self._connection,
            self.settings.host,
            self.settings.thrift_port,
            ssl=context,
            ssl_handshake_timeout=tls_deadline,
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
        key = address or "?"
        # Counted before the first await: connections are admitted in the order they came.
        pending = self._pending.get(key, 0)
        logging_in = not self.max_pending or pending < self.max_pending
        if logging_in:
            self._pending[key] = pending + 1
        try:
            if not logging_in:
                raise Refused(
                    f"{pending} connections from this address are logging in already "
                    "(SPARKGATE_THRIFT_MAX_PENDING_LOGINS_PER_ADDRESS)"
                )
            login = await self._login(reader, writer, address)
            self._uncount(key)
            logging_in = False
            if login is None:
                return  # connected and left without a byte
            logs.bind(user=login.user.name)  # this connection's task: its records name the user
            if login.splitter is None:
                await self._serve_framed(reader, writer, login.user)
            else:
                await self._serve_unframed(reader, writer, login.user, login.splitter, login.first)
        except (Refused, MalformedMessage) as exc:
            log.warning("HiveServer2 connection from %s closed: %s", address, _one_line(exc))
        except (asyncio.IncompleteReadError, ConnectionError):
            pass  # the client went away
        except asyncio.CancelledError:
            raise
        except OSError as exc:  # the transport's (a TLS record that does not decode...)
            log.warning("HiveServer2 connection from %s failed: %s", address, _one_line(exc))
        except Exception:
            log.exception("HiveServer2 connection from %s failed", address)
        finally:
            if logging_in:
                self._uncount(key)
            self._connections.discard(task)
            writer.close()
            with contextlib.suppress(Exception):
                await writer.wait_closed()

    def _uncount(self, key: str) -> None:
        """The connection no longer counts against its address (it logged in, or ended)."""
        left = self._pending.pop(key, 1) - 1
        if left > 0:
            self._pending[key] = left

    async def _login(
        self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter, address: str | None
    ) -> _Login | None:
        """Who the client is, within the login deadline; None if it left without a byte."""
        deadline = asyncio.timeout(self.login_timeout if self.login_timeout > 0 else None)
        try:
            async with deadline:
                first = await reader.read(1)
                if not first:
                    return None
                if first[0] == _THRIFT_STRICT:
                    return await self._login_unframed(reader, writer, first, address)
                return _Login(await self._handshake(reader, writer, first[0], address))
        except TimeoutError:
            if deadline.expired():
                raise Refused(f"no login within {self.login_timeout:g} s") from None
            raise
        except asyncio.IncompleteReadError:
            raise Refused("the client closed the connection in the middle of logging in") from None

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
        if length > _LOGIN_MESSAGE_MAX:
            await self._refuse(writer, ERROR, f"SASL message of {length} bytes is too long.")
        return await reader.readexactly(length)

    def _send(self, writer: asyncio.StreamWriter, status: int, payload: bytes) -> None:
        writer.write(bytes([status]) + struct.pack(">I", len(payload)) + payload)

    async def _refuse(self, writer: asyncio.StreamWriter, status: int, message: str) -> NoReturn:
        self._send(writer, status, message.encode())
        with contextlib.suppress(ConnectionError):
            await writer.drain()
        raise Refused(message)

    # -- NOSASL ----------------------------------------------------------------------------

    async def _login_unframed(
        self,
        reader: asyncio.StreamReader,
        writer: asyncio.StreamWriter,
        first: bytes,
        address: str | None,
    ) -> _Login:
        splitter = MessageSplitter(_LOGIN_MESSAGE_MAX)
        splitter.feed(first)
        message = await _next_message(reader, splitter)
        if message is None:
            raise asyncio.IncompleteReadError(b"", None)
        if self.users.enabled:
            # NOSASL gives no credentials: tell the client how to connect, then close.
            writer.write(_refusal(decode_call(message)))
            with contextlib.suppress(ConnectionError):
                await writer.drain()
            raise Refused("NOSASL (no credentials) while authentication is on")
        splitter.max_message = self.max_message  # the anonymous user's requests, as framed
        return _Login(self.users.authenticate(None, address=address), splitter, message)

    # -- after the login -------------------------------------------------------------------

    async def _serve_framed(
        self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter, user: Principal
    ) -> None:
        while True:
            (length,) = struct.unpack(">I", await reader.readexactly(4))
            if length > self.max_message:
                raise Refused(
                    f"a frame of {length} bytes, over SPARKGATE_REQUEST_MAX_BYTES "
                    f"({self.max_message})"
                )
            message = await reader.readexactly(length)
            reply = await self.door.answer(message, user)
            writer.write(struct.pack(">I", len(reply)) + reply)
            await writer.drain()

    async def _serve_unframed(
        self,
        reader: asyncio.StreamReader,
        writer: asyncio.StreamWriter,
        user: Principal,
        splitter: MessageSplitter,
        message: bytes | None,
    ) -> None:
        while message is not None:
            writer.write(await self.door.answer(message, user))
            await writer.drain()
            message = await _next_message(reader, splitter)


async def _next_message(reader: asyncio.StreamReader, splitter: MessageSplitter) -> bytes | None:
    """The next whole message of an unframed stream, or None when the client closed it.
    Raises MalformedMessage for bytes that cannot become one."""
    while (message := splitter.next_message()) is None:
        more = await reader.read(65536)
        if not more:
            return None
        splitter.feed(more)
    return message


def _one_line(exc: BaseException) -> str:
    """A reason fit for one log line: control characters escaped (no forged second line),
    cut short (a client may have chosen some of it)."""
    text = repr(str(exc))[1:-1]
    return text if len(text) <= _REASON_MAX else text[:_REASON_MAX] + "..."


def _refusal(call: Call) -> bytes:
    message = (
        "This server requires authentication: connect with SASL PLAIN and a user name and "
        "password (PyHive auth='CUSTOM' or 'LDAP'; JDBC: user and password), not NOSASL."
    )
    if call.api == "OpenSession":
        status = T.TStatus(statusCode=T.TStatusCode.ERROR_STATUS, errorMessage=message)
        return encode_reply(call, T.TOpenSessionResp(status=status, serverProtocolVersion=0))
    return Door.refuse(call, message)
