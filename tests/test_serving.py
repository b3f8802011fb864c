"""The node's HTTP server loop (http/serving.py): it ticks once a second, renews uvicorn's Date
header on every tick, and a stopping signal ends it at once rather than at the next tick."""

from __future__ import annotations

import asyncio
import signal
import socket

import pytest
import uvicorn

from sparkgate.http import serving


async def _app(scope: object, receive: object, send: object) -> None:
    return None


def _server() -> serving._Server:
    return serving._Server(uvicorn.Config(_app, log_config=None))


def test_a_stopping_signal_ends_the_loop_without_waiting_for_the_tick(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # An hour-long tick: only the signal's wake-up can end the loop within the test's bound.
    monkeypatch.setattr(serving, "_TICK", 3600.0)
    server = _server()

    async def run() -> None:
        loop = asyncio.get_running_loop()
        # What uvicorn's signal handler calls, a moment after the loop starts waiting.
        loop.call_later(0.05, server.handle_exit, signal.SIGTERM, None)
        await asyncio.wait_for(server.main_loop(), timeout=60)

    asyncio.run(run())
    assert server.should_exit


def test_every_tick_renews_the_date_header(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(serving, "_TICK", 0.001)
    server = _server()
    seen: list[int] = []

    async def on_tick(counter: int) -> bool:
        seen.append(counter)
        return len(seen) >= 5

    monkeypatch.setattr(server, "on_tick", on_tick)
    asyncio.run(server.main_loop())
    # uvicorn renews the header when counter % 10 == 0: each of our ticks is a tenth of its.
    assert len(seen) == 5
    assert all(counter % 10 == 0 for counter in seen)
    assert len(set(seen)) == 5


def test_the_bound_port_answers_without_nagle_delays() -> None:
    """A connection to the node's pre-bound HTTP socket has Nagle's algorithm off, as one to
    uvicorn's own listener does: an answer written in two pieces does not wait 40 ms for the
    client's delayed ACK (every request took 44 ms when the socket was made without TCP)."""
    bound = serving._bind(uvicorn.Config(_app, host="127.0.0.1", port=0, log_config=None))
    seen: list[int] = []

    async def run() -> None:
        async def accepted(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
            sock = writer.get_extra_info("socket")
            seen.append(sock.getsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY))
            writer.close()

        server = await asyncio.start_server(accepted, sock=bound)
        port = bound.getsockname()[1]
        _, writer = await asyncio.open_connection("127.0.0.1", port)
        for _ in range(100):
            if seen:
                break
            await asyncio.sleep(0.05)
        writer.close()
        server.close()
        await server.wait_closed()

    asyncio.run(run())
    assert seen and seen[0] != 0
