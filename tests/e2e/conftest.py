"""End-to-end helpers: sessions on the shared server, ready to take statements."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from sparkgate.client import Client
from sparkgate_dev import ServerProcess, eventually


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


def wait_idle(sg: Client, session_id: int) -> None:
    """Wait for a session to be idle again after its statement. The engine records the
    statement's outcome, then releases the session in a second write, so a long poll (woken
    by the first) may return just before the second."""
    eventually(
        lambda: sg.session(session_id)["state"] == "idle",
        timeout=30,
        what=f"session {session_id} back to idle",
    )
