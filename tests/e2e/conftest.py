"""End-to-end helpers: sessions on the shared server, ready to take statements."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import httpx
import pytest

from sparkgate.client import Client
from sparkgate.schemas.queries import Query, Session
from sparkgate_dev import ServerProcess, eventually


@pytest.fixture
def sg(server: ServerProcess) -> Iterator[Client]:
    with server.client() as client:
        yield client


# The ``interactive`` fixture: opens a session with the given Spark settings, ready.
OpenSession = Callable[..., Session]


@pytest.fixture
def interactive(sg: Client) -> Iterator[OpenSession]:
    """Open interactive sessions (idle, ready); all are killed after the test."""
    opened: list[int] = []

    def open_session(**conf: str) -> Session:
        session = sg.create_session(conf=conf or None)
        opened.append(session.id)
        ready = sg.wait_session(session.id, {"idle", "error", "dead"}, timeout=240)
        assert ready.state == "idle", ready
        return ready

    yield open_session
    for session_id in opened:
        sg.kill_session(session_id)


def run(sg: Client, query: str, session_id: int | None = None, timeout: float = 240) -> Query:
    """Submit and wait; the final query record."""
    submitted = sg.submit(query, session_id=session_id)
    return sg.wait(submitted.id, timeout=timeout)


def wait_idle(sg: Client, session_id: int) -> None:
    """Wait for a session to be idle again after its statement. The engine records the
    statement's outcome, then releases the session in a second write, so a long poll (woken
    by the first) may return just before the second."""
    eventually(
        lambda: sg.session(session_id).state == "idle",
        timeout=30,
        what=f"session {session_id} back to idle",
    )


def livy_output(api: httpx.Client, session_id: int, code: str) -> str:
    """Run ``code`` in a Livy session (PySpark's); what it printed."""
    answer = api.post(f"/sessions/{session_id}/statements", json={"code": code})
    assert answer.status_code == 201, answer.text
    statement_id = answer.json()["id"]

    def done() -> dict[str, Any] | None:
        statement: dict[str, Any] = api.get(
            f"/sessions/{session_id}/statements/{statement_id}"
        ).json()
        return statement if statement["state"] == "available" else None

    output = eventually(done, timeout=240, what="the statement's output")["output"]
    assert output["status"] == "ok", output
    return str(output["data"]["text/plain"])
