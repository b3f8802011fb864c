"""End-to-end helpers: sessions on the shared server, ready to take statements."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from sparkgate.client import Client
from sparkgate.testing import ServerProcess


@pytest.fixture
def sg(server: ServerProcess) -> Iterator[Client]:
    with server.client() as client:
        yield client


@pytest.fixture
def interactive(sg: Client) -> Iterator[Any]:
    """Open interactive sessions (idle, ready); all are killed after the test."""
    opened: list[int] = []

    def open_session(**conf: str) -> dict[str, Any]:
        session = sg.create_session(conf=conf or None)
        opened.append(session["id"])
        ready = sg.wait_session(session["id"], {"idle", "error", "dead"}, timeout=240)
        assert ready["state"] == "idle", ready
        return ready

    yield open_session
    for session_id in opened:
        sg.kill_session(session_id)


def run(
    sg: Client, query: str, session_id: int | None = None, timeout: float = 240
) -> dict[str, Any]:
    """Submit and wait; the final query record."""
    submitted = sg.submit(query, session_id=session_id)
    return sg.wait(submitted["id"], timeout=timeout)
