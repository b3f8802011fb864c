"""A TCP proxy that tests and the chaos suite put in front of PostgreSQL, to take the store
away from everything at once: ``pause()`` cuts every open connection and refuses new ones
(as a store that went down, or a network partition, looks to its clients); ``resume()``
forwards again."""

from __future__ import annotations

import contextlib
import selectors
import socket
import threading


class TcpProxy:
    def __init__(
        self, target: tuple[str, int], host: str = "127.0.0.1", *, source: str | None = None
    ) -> None:
        self.target = target
        # The address it connects from (another loopback address, 127.0.0.x, makes the
        # server see another client address: failed logins are counted by address).
        self.source = source
        self._listener = socket.create_server((host, 0))
        self.port: int = self._listener.getsockname()[1]
        self._paused = threading.Event()
        self._stopped = threading.Event()
        self._lock = threading.Lock()
        self._open: set[socket.socket] = set()
        self._thread = threading.Thread(target=self._accept, name="tcp-proxy", daemon=True)

    def start(self) -> TcpProxy:
        self._thread.start()
        return self

    def pause(self) -> None:
        """Cut every connection and refuse new ones until :meth:`resume`."""
        self._paused.set()
        self._cut_all()

    def resume(self) -> None:
        self._paused.clear()

    @property
    def paused(self) -> bool:
        return self._paused.is_set()

    def stop(self) -> None:
        self._stopped.set()
        with contextlib.suppress(OSError):
            # Wakes the thread waiting in accept() (closing alone does not, on Linux).
            self._listener.shutdown(socket.SHUT_RDWR)
        with contextlib.suppress(OSError):
            self._listener.close()
        self._cut_all()
        self._thread.join(timeout=5)

    def _cut_all(self) -> None:
        with self._lock:
            sockets, self._open = list(self._open), set()
        for sock in sockets:
            with contextlib.suppress(OSError):
                # RST rather than FIN: the peer sees the connection die, as in an outage.
                sock.setsockopt(
                    socket.SOL_SOCKET, socket.SO_LINGER, b"\x01\x00\x00\x00\x00\x00\x00\x00"
                )
            with contextlib.suppress(OSError):
                sock.close()

    def _accept(self) -> None:
        while not self._stopped.is_set():
            try:
                client, _ = self._listener.accept()
            except OSError:
                return
            if self._paused.is_set():
                client.close()
                continue
            try:
                source = (self.source, 0) if self.source else None
                upstream = socket.create_connection(self.target, timeout=5, source_address=source)
            except OSError:
                client.close()
                continue
            upstream.settimeout(None)
            with self._lock:
                self._open |= {client, upstream}
            threading.Thread(
                target=self._pipe, args=(client, upstream), name="tcp-proxy-pipe", daemon=True
            ).start()

    def _pipe(self, a: socket.socket, b: socket.socket) -> None:
        peer = {a: b, b: a}
        with selectors.DefaultSelector() as selector:
            selector.register(a, selectors.EVENT_READ)
            selector.register(b, selectors.EVENT_READ)
            try:
                while True:
                    for key, _ in selector.select(timeout=1.0):
                        source: socket.socket = key.fileobj  # type: ignore[assignment]
                        data = source.recv(65536)
                        if not data:
                            return
                        peer[source].sendall(data)
                    if self._stopped.is_set():
                        return
            except (OSError, ValueError):
                return
            finally:
                with self._lock:
                    self._open -= {a, b}
                for sock in (a, b):
                    with contextlib.suppress(OSError):
                        sock.close()
