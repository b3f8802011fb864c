"""Wake-up hints: telling whoever waits that the store changed, so that nobody polls fast.

A hint names a channel and carries an id. It says "look again", never what to see: the
receiver reads the store, which stays the only truth. Hints can be lost (a listener
reconnecting, a full socket buffer, a receiver that was not listening yet), so every receiver
also looks on a slow safety timer (``hint_safety_poll``); correctness never depends on a hint.

Channels:
- ``sparkgate_engine_<id>``: the engine's sessions got work (a statement, a new session, a
  cancel, a kill) or it was asked to stop;
- ``sparkgate_nodes``: a statement reached a final state (the payload: its id), or a queued
  Spark Connect operation was admitted (``admitted:<id>``: its door forwards it); every node
  listens, and a node whose requests do not wait for that id ignores it. (One channel for all
  nodes rather than one per node: the writer cannot know which node's request waits, and
  PostgreSQL fans one NOTIFY out to every listener at no cost to the writer.)

Delivery:
- PostgreSQL: ``pg_notify`` inside the writer's transaction, so a hint arrives when its change
  commits, never for a rolled-back one, and costs no transaction of its own; a listener holds
  one ``LISTEN`` connection and reconnects after an outage.
- SQLite (one machine): a Unix datagram socket per listener, in a directory beside the
  database, sent to after the commit. A datagram is one system call with no connection to keep,
  and a listener that died leaves a socket nobody reads: the sender removes it.
- In-memory SQLite (tests of the store alone): no delivery; the safety timer does the work.
"""

from __future__ import annotations

import contextlib
import hashlib
import logging
import os
import select
import socket
import tempfile
import threading
import uuid
from collections.abc import Callable, Iterable
from pathlib import Path

log = logging.getLogger("sparkgate.hints")

NODES = "sparkgate_nodes"
ENGINE_CHANGED = "engine"  # the payload on an engine's channel when the engine's own row moved
# The payload's prefix (then its id) when a session of the engine got a new statement: the
# engine reads its sessions' work, but need not read its running statements' states for
# cancels. Any other payload (a bare id: a cancel, a kill, a placed session) means "read all".
NEW_STATEMENT = "statement:"
# The payload's prefix (then a query id) when a Spark Connect operation of the engine was
# cancelled: the engine cancels the operation's Spark jobs for a while.
CONNECT_CANCELLED = "connect-cancelled:"

# The payload's prefix on the nodes' channel (then a query id) when a queued Spark Connect
# operation was admitted: the door holding its call forwards it now.
ADMITTED = "admitted:"

# Unix socket paths are limited to 108 bytes (sun_path); a listener's name adds about 40.
_MAX_DIR = 60

OnHint = Callable[[str], None]


def engine_channel(engine_id: int) -> str:
    return f"sparkgate_engine_{engine_id}"


class Listener:
    """A thread calling ``on_hint(payload)`` for every hint on one channel."""

    def __init__(self, name: str) -> None:
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name=name, daemon=True)

    def start(self) -> Listener:
        self._thread.start()
        return self

    def close(self) -> None:
        self._stop.set()
        self._thread.join(timeout=5)

    def _run(self) -> None:
        raise NotImplementedError


class Hints:
    """No delivery: listeners never fire and sending does nothing (the safety timer works)."""

    def send(self, pending: Iterable[tuple[str, str]]) -> None:
        """Deliver hints whose transaction has committed (SQLite)."""

    def notify_sql(self) -> str | None:
        """SQL that sends a hint inside the writer's transaction, if the store has it."""
        return None

    def listen(self, channel: str, on_hint: OnHint) -> Listener:
        return _Silent(channel).start()

    def close(self) -> None:
        """Release what sending holds (listeners are closed by their owners)."""


class _Silent(Listener):
    def __init__(self, channel: str) -> None:
        super().__init__(f"hints-{channel}")

    def _run(self) -> None:
        self._stop.wait()


class SocketHints(Hints):
    """Unix datagram sockets in one directory: ``<channel>.<listener>.sock``."""

    def __init__(self, directory: Path) -> None:
        self.directory = directory
        self._sender: socket.socket | None = None  # made on first send
        self._lock = threading.Lock()

    @classmethod
    def beside(cls, database: Path) -> SocketHints:
        directory = database.resolve().parent / "hints"
        if len(str(directory)) > _MAX_DIR:
            digest = hashlib.sha256(str(database.resolve()).encode()).hexdigest()[:16]
            directory = Path(tempfile.gettempdir()) / f"sparkgate-hints-{digest}"
        return cls(directory)

    def send(self, pending: Iterable[tuple[str, str]]) -> None:
        by_channel: dict[str, list[str]] = {}
        for channel, payload in pending:
            by_channel.setdefault(channel, []).append(payload)
        try:
            entries = list(os.scandir(self.directory))
        except FileNotFoundError:
            return  # nobody has listened yet
        with self._lock:
            if self._sender is None:
                self._sender = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
                self._sender.setblocking(False)
            sender = self._sender
        for entry in entries:
            channel = entry.name.split(".", 1)[0]
            for payload in by_channel.get(channel, ()):
                try:
                    sender.sendto(payload.encode(), entry.path)
                except (ConnectionRefusedError, FileNotFoundError):
                    # Its listener is gone (a crashed process leaves its socket behind).
                    with contextlib.suppress(FileNotFoundError):
                        os.unlink(entry.path)
                    break
                except OSError:
                    break  # buffer full: it has hints enough to wake it

    def listen(self, channel: str, on_hint: OnHint) -> Listener:
        return _SocketListener(self.directory, channel, on_hint).start()

    def close(self) -> None:
        with self._lock:
            if self._sender is not None:
                self._sender.close()
                self._sender = None


class _SocketListener(Listener):
    def __init__(self, directory: Path, channel: str, on_hint: OnHint) -> None:
        super().__init__(f"hints-{channel}")
        self.path = directory / f"{channel}.{os.getpid()}-{uuid.uuid4().hex[:8]}.sock"
        self.on_hint = on_hint
        self._sock: socket.socket | None = None
        self._bind()

    def _bind(self) -> None:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
        with contextlib.suppress(FileNotFoundError):
            os.unlink(self.path)
        sock.bind(str(self.path))
        self._sock = sock

    def _run(self) -> None:
        self.on_hint("")  # hints sent before we listened went nowhere: look once
        while not self._stop.is_set():
            assert self._sock is not None
            readable, _, _ = select.select([self._sock], [], [], 1.0)
            if readable:
                with contextlib.suppress(OSError):
                    self.on_hint(self._sock.recv(256).decode())
            elif not self.path.exists():
                # Someone removed our socket (a cleaned tmp dir): bind again, and look once,
                # as hints sent meanwhile went nowhere.
                self._close_socket()
                try:
                    self._bind()
                except OSError:
                    log.warning("cannot bind hint socket %s", self.path, exc_info=True)
                    self._stop.wait(1.0)
                    continue
                self.on_hint("")
        self._close_socket()
        with contextlib.suppress(FileNotFoundError):
            os.unlink(self.path)

    def _close_socket(self) -> None:
        if self._sock is not None:
            self._sock.close()
            self._sock = None


class PostgresHints(Hints):
    """``NOTIFY`` in the writer's transaction; ``LISTEN`` on a connection of the listener's own."""

    def __init__(self, conninfo: str) -> None:
        self.conninfo = conninfo

    def notify_sql(self) -> str:
        return "SELECT pg_notify(:channel, :payload)"

    def listen(self, channel: str, on_hint: OnHint) -> Listener:
        return _PostgresListener(self.conninfo, channel, on_hint).start()


class _PostgresListener(Listener):
    def __init__(self, conninfo: str, channel: str, on_hint: OnHint) -> None:
        super().__init__(f"hints-{channel}")
        self.conninfo = conninfo
        self.channel = channel
        self.on_hint = on_hint

    def _run(self) -> None:
        import psycopg
        from psycopg import sql

        delay = 0.5
        while not self._stop.is_set():
            try:
                with psycopg.connect(self.conninfo, autocommit=True, connect_timeout=5) as conn:
                    conn.execute(sql.SQL("LISTEN {}").format(sql.Identifier(self.channel)))
                    delay = 0.5
                    self.on_hint("")  # hints sent before we listened (or while reconnecting)
                    while not self._stop.is_set():
                        for notify in conn.notifies(timeout=1.0):
                            self.on_hint(notify.payload)
            except Exception as exc:
                # The store is out of reach: the safety timer carries on; try again later.
                log.warning("hint listener %s: %s; retrying in %.1fs", self.channel, exc, delay)
                self._stop.wait(delay)
                delay = min(delay * 2, 10.0)


def for_url(url: str) -> Hints:
    """The hint delivery that fits the store at ``url``."""
    import sqlalchemy as sa

    parsed = sa.engine.make_url(url)
    if parsed.get_backend_name() == "sqlite":
        if not parsed.database or parsed.database == ":memory:":
            return Hints()
        return SocketHints.beside(Path(parsed.database))
    conninfo = parsed.set(drivername="postgresql").render_as_string(hide_password=False)
    return PostgresHints(conninfo)
