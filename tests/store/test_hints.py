"""Wake-up hints on both stores: sent by the store's writers when their change commits, to the
listeners of the right channel only, never for a change rolled back."""

from __future__ import annotations

import queue
import socket
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from sparkgate.states import EngineState, SessionKind, SessionState, StatementState
from sparkgate.store import Store
from sparkgate.store.hints import (
    NEW_STATEMENT,
    NODES,
    Listener,
    SocketHints,
    engine_channel,
    for_url,
)
from tests.conftest import NOW

# Hints arrive in milliseconds; this is only how long a test waits before calling one lost.
ARRIVES = 20.0
# How long to wait for a hint that must not come.
SILENCE = 1.5


class Inbox:
    """A listener whose hints (payloads) queue up for the test; "" (look once) is dropped."""

    def __init__(self, store: Store, channel: str) -> None:
        self.hints: queue.Queue[str] = queue.Queue()
        self.ready: queue.Queue[None] = queue.Queue()
        self.listener: Listener = store.db.hints.listen(channel, self._on_hint)
        self.ready.get(timeout=ARRIVES)  # listening (the first call says "look once")

    def _on_hint(self, payload: str) -> None:
        if payload:
            self.hints.put(payload)
        else:
            self.ready.put(None)

    def next(self) -> str:
        return self.hints.get(timeout=ARRIVES)

    def silent(self) -> bool:
        try:
            self.hints.get(timeout=SILENCE)
        except queue.Empty:
            return True
        return False


@pytest.fixture
def inboxes(store: Store) -> Iterator[Any]:
    made: list[Inbox] = []

    def make(channel: str) -> Inbox:
        inbox = Inbox(store, channel)
        made.append(inbox)
        return inbox

    yield make
    for inbox in made:
        inbox.listener.close()


def test_a_new_statement_wakes_its_sessions_engine_only(
    store: Store, inboxes: Any, make_session: Any, make_engine: Any
) -> None:
    mine, other = make_engine(), make_engine()
    to_mine, to_other = inboxes(engine_channel(mine.id)), inboxes(engine_channel(other.id))
    session = make_session(engine_id=mine.id)
    statement = store.statements.add(session.id, "SELECT 1", now=NOW)
    assert to_mine.next() == f"{NEW_STATEMENT}{statement.id}"
    assert to_other.silent()


def test_final_states_wake_the_nodes_and_cancels_wake_the_engine(
    store: Store, inboxes: Any, make_session: Any, make_engine: Any
) -> None:
    engine = make_engine()
    session = make_session(engine_id=engine.id)
    done = store.statements.add(session.id, "SELECT 1", now=NOW)
    running = store.statements.add(session.id, "SELECT 2", now=NOW)
    nodes, to_engine = inboxes(NODES), inboxes(engine_channel(engine.id))
    store.transitions.statement(done.id, StatementState.RUNNING, now=NOW)
    store.transitions.statement(done.id, StatementState.SUCCESS, now=NOW)
    assert nodes.next() == str(done.id)
    store.transitions.statement(running.id, StatementState.RUNNING, now=NOW)
    store.transitions.statement(running.id, StatementState.CANCELLING, now=NOW)
    assert to_engine.next() == str(running.id)
    assert nodes.silent()  # cancelling is not final


def test_placing_a_session_and_stopping_an_engine_wake_it(
    store: Store, inboxes: Any, make_engine: Any
) -> None:
    engine = make_engine()
    to_engine = inboxes(engine_channel(engine.id))
    session = store.sessions.add(SessionKind.INTERACTIVE, now=NOW)
    store.transitions.session(session.id, SessionState.STARTING, now=NOW, engine_id=engine.id)
    assert to_engine.next() == str(session.id)
    store.transitions.engine(engine.id, EngineState.STOPPING, now=NOW)
    assert to_engine.next() == "engine"


def test_no_hint_for_a_change_rolled_back(
    store: Store, inboxes: Any, make_session: Any, make_engine: Any
) -> None:
    engine = make_engine()
    session = make_session(engine_id=engine.id)
    to_engine = inboxes(engine_channel(engine.id))
    with pytest.raises(RuntimeError), store.db.begin() as conn:
        store.statements.add(session.id, "SELECT 1", now=NOW, conn=conn)
        raise RuntimeError("the writer changed its mind")
    assert to_engine.silent()
    assert store.statements.list_page(session_id=session.id).items == []


def test_hints_beside_a_deep_database_fall_back_to_a_short_directory(tmp_path: Path) -> None:
    deep = tmp_path / ("d" * 80) / "store.db"
    hints = SocketHints.beside(deep)
    assert len(str(hints.directory)) <= 60 and "sparkgate-hints-" in hints.directory.name
    assert SocketHints.beside(deep).directory == hints.directory  # every process agrees
    near = SocketHints.beside(Path("/tmp/s/store.db"))
    assert near.directory == Path("/tmp/s/hints")
    assert type(for_url("sqlite:///:memory:")).__name__ == "Hints"  # nothing to deliver


def test_a_dead_listeners_socket_is_removed_by_the_sender(tmp_path: Path) -> None:
    hints = SocketHints(tmp_path / "hints")
    hints.directory.mkdir()
    stale = hints.directory / f"{engine_channel(1)}.999-dead.sock"
    with socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM) as sock:
        sock.bind(str(stale))  # bound, then closed: nobody reads it any more
    hints.send([(engine_channel(1), "7")])
    assert not stale.exists()
    hints.close()
