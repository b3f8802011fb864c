"""The node's HTTP server: uvicorn's, ticking once a second instead of ten times.

uvicorn's main loop wakes every 0.1 s to see whether it should stop and, every tenth wake, to
renew its Date header. On an idle node that wake-up alone cost 0.25 % of a core (an idle
uvicorn with nothing mounted, 60 s of /proc ticks: 0.25 % at 0.1 s, 0.02 % at 1 s), a quarter
of everything the node spent idle. Here the loop wakes once a second, when the Date header
changes anyway, and at once when a signal asks it to stop, so shutting down is no slower.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import socket
import sys
from types import FrameType
from typing import Any

import uvicorn
from uvicorn.config import STARTUP_FAILURE  # its exit status when it could not start

_TICK = 1.0  # seconds: the Date header's resolution, and how often the loop looks at limits
# uvicorn renews the Date header on every tenth of its 0.1 s ticks; each of ours is a tenth.
_TICKS_PER_SECOND = 10

log = logging.getLogger("sparkgate.server")


class _Server(uvicorn.Server):
    """uvicorn's server with a main loop that sleeps a second at a time, woken by a signal."""

    def __init__(self, config: uvicorn.Config) -> None:
        super().__init__(config)
        self._wake: asyncio.Event | None = None
        self._loop: asyncio.AbstractEventLoop | None = None

    async def main_loop(self) -> None:
        self._loop = asyncio.get_running_loop()
        self._wake = asyncio.Event()
        counter = 0
        should_exit = await self.on_tick(counter)
        while not should_exit:
            counter = (counter + _TICKS_PER_SECOND) % 864_000
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._wake.wait(), _TICK)
            should_exit = await self.on_tick(counter)

    async def startup(self, sockets: list[socket.socket] | None = None) -> None:
        await super().startup(sockets)
        if sockets is not None:  # uvicorn announces only the sockets it bound itself
            self._log_started_message(sockets)

    def handle_exit(self, sig: int, frame: FrameType | None) -> None:
        super().handle_exit(sig, frame)
        # Runs in the signal handler, between two steps of the loop: the loop is told through
        # its own thread-safe wake-up, not by touching the event directly.
        if self._loop is not None and self._wake is not None:
            self._loop.call_soon_threadsafe(self._wake.set)


def _bind(config: uvicorn.Config) -> socket.socket:
    """The HTTP port, bound before the app starts rather than after it (uvicorn's order), so
    that a node that cannot listen exits before its duties launch engines that would outlive
    it. uvicorn's own ``Config.bind_socket`` would do the same but announce the server as
    running while the app is still starting (the embedded metastore alone takes seconds)."""
    family = socket.AF_INET6 if ":" in config.host else socket.AF_INET
    # Made as getaddrinfo would make it (TCP by name): asyncio turns Nagle's algorithm off only
    # on connections of a socket whose protocol says TCP. Without it (protocol 0) each answer
    # written in two pieces waited for the client's delayed ACK: 40 ms a request.
    bound = socket.socket(family, socket.SOCK_STREAM, socket.IPPROTO_TCP)
    bound.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)  # as uvicorn binds it
    try:
        bound.bind((config.host, config.port))
    except OSError as exc:
        bound.close()
        log.error(
            "cannot listen for HTTP clients on %s:%s: %s. Choose another port with "
            "SPARKGATE_PORT or --port.",
            config.host,
            config.port,
            exc,
        )
        sys.exit(STARTUP_FAILURE)
    return bound


def serve(app: Any, **options: Any) -> None:
    """Serve ``app`` until a signal stops it, as ``uvicorn.run(app, **options)`` does for one
    process without reload; exits with uvicorn's status 3 if the server could not start."""
    config = uvicorn.Config(app, **options)
    server = _Server(config)
    bound = _bind(config)
    with contextlib.suppress(KeyboardInterrupt):
        server.run(sockets=[bound])
    if not server.started:
        sys.exit(STARTUP_FAILURE)
