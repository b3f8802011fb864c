"""Keyset paging of the store's lists (``after``), identical on SQLite and PostgreSQL."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from sparkgate.states import SessionKind, SessionState, StatementState
from sparkgate.store import Store
from sparkgate.store.records import DeploymentFiles, Page, Window
from sparkgate.store.session_attributes import SessionAttributes
from tests.conftest import NOW, force_state


def walk(read: Callable[[Any], Page[Any]], key: Callable[[Any], Any]) -> list[list[Any]]:
    """Every page of a list, following ``next_after`` from the first page to the last."""
    pages = []
    after = None
    while True:
        page = read(after)
        pages.append([key(item) for item in page.items])
        if page.next_after is None:
            return pages
        assert page.next_after == key(page.items[-1])
        after = page.next_after


def test_statements_page_by_cursor_newest_first(store: Store) -> None:
    alice = store.sessions.add(SessionKind.INTERACTIVE, now=NOW, owner="alice")
    bob = store.sessions.add(SessionKind.INTERACTIVE, now=NOW, owner="bob")
    for session in (alice, bob):
        force_state(store, "sessions", session.id, SessionState.IDLE.value)
    ids = [
        store.statements.add((alice, bob)[i % 2].id, f"SELECT {i}", now=NOW).id for i in range(7)
    ]
    newest = sorted(ids, reverse=True)

    def read(after: Any) -> Page[Any]:
        return store.statements.list_page(
            newest_first=True, window=Window(limit=3, after=after, count=False)
        )

    pages = walk(read, lambda s: s.id)
    assert pages == [newest[:3], newest[3:6], newest[6:]]
    assert read(None).total is None
    # Counted on request, over the whole list whatever the cursor; the page is full at the end.
    counted = store.statements.list_page(newest_first=True, window=Window(limit=7, after=None))
    assert (counted.total, counted.next_after, len(counted.items)) == (7, None, 7)
    deep = store.statements.list_page(newest_first=True, window=Window(limit=2, after=newest[4]))
    assert [s.id for s in deep.items] == newest[5:] and deep.next_after is None

    mine = walk(
        lambda after: store.statements.list_page(
            owner="alice", newest_first=True, window=Window(limit=2, after=after)
        ),
        lambda s: s.id,
    )
    assert [item for page in mine for item in page] == [i for i in newest if i in ids[::2]]


def test_statements_page_by_cursor_with_filters(store: Store) -> None:
    session = store.sessions.add(SessionKind.INTERACTIVE, now=NOW, owner="alice")
    force_state(store, "sessions", session.id, SessionState.IDLE.value)
    ids = [store.statements.add(session.id, f"SELECT {i}", now=NOW).id for i in range(6)]
    for statement_id in ids[1::2]:
        force_state(store, "statements", statement_id, StatementState.FAILED.value)
    failed = walk(
        lambda after: store.statements.list_page(
            states=[StatementState.FAILED], owner="alice", window=Window(limit=2, after=after)
        ),
        lambda s: s.id,
    )
    assert failed == [ids[1:4:2], ids[5:]]  # oldest first without newest_first
    in_session = store.statements.list_page(
        session_id=session.id, newest_first=True, window=Window(limit=10, after=ids[3])
    )
    assert [s.id for s in in_session.items] == ids[2::-1] and in_session.total == 6


def test_sessions_page_by_cursor(store: Store) -> None:
    made = [store.sessions.add(SessionKind.BATCH, now=NOW, owner="bob").id for _ in range(5)]
    store.sessions.add(SessionKind.BATCH, now=NOW, owner="alice")
    pages = walk(
        lambda after: store.sessions.list_page(
            owner="bob", window=Window(limit=2, after=after, count=False)
        ),
        lambda s: s.id,
    )
    assert pages == [made[:2], made[2:4], made[4:]]
    assert store.sessions.list_page(owner="bob", window=Window(after=made[0])).total == 5


def test_sessions_and_statements_an_impersonator_made_page_with_its_own(store: Store) -> None:
    """``creator=``: what a user made for others is listed with what it owns, by cursor."""
    made = SessionAttributes(created_by="airflow")
    ids = [
        store.sessions.add(SessionKind.BATCH, now=NOW, owner=owner, attributes=attributes).id
        for owner, attributes in (
            ("airflow", None),
            ("bob", made),
            ("carol", None),
            ("bob", None),
            ("carol", made),
            ("airflow", SessionAttributes(created_by="someone")),
        )
    ]
    for session_id in ids:
        force_state(store, "sessions", session_id, SessionState.IDLE.value)
    queries = {sid: store.statements.add(sid, "SELECT 1", now=NOW).id for sid in ids}
    airflows = [ids[0], ids[1], ids[4], ids[5]]

    def sessions(after: Any) -> Page[Any]:
        return store.sessions.list_page(
            owner="airflow", creator="airflow", window=Window(limit=3, after=after)
        )

    assert walk(sessions, lambda s: s.id) == [airflows[:3], airflows[3:]]
    assert sessions(None).total == 4
    assert [s.id for s in store.sessions.list_page(owner="bob").items] == [ids[1], ids[3]]
    assert [s.id for s in store.sessions.list_page(creator="airflow").items] == [ids[1], ids[4]]

    def statements(after: Any) -> Page[Any]:
        return store.statements.list_page(
            owner="airflow",
            creator="airflow",
            newest_first=True,
            window=Window(limit=3, after=after),
        )

    newest = [queries[sid] for sid in reversed(airflows)]
    assert walk(statements, lambda q: q.id) == [newest[:3], newest[3:]]
    assert statements(None).total == 4
    assert [q.owner for q in statements(None).items] == ["airflow", "carol", "bob"]


def test_stream_jobs_page_by_name(store: Store) -> None:
    for name in ("c", "a", "d", "b"):
        store.stream_jobs.add(name, "SAVE STREAM v TO console", now=NOW)
    pages = walk(
        lambda after: store.stream_jobs.list_page(window=Window(limit=3, after=after)),
        lambda j: j.name,
    )
    assert pages == [["a", "b", "c"], ["d"]]


def test_audit_and_deployments_page_newest_first(store: Store) -> None:
    for n in range(5):
        store.audit.add("login", "ok", now=NOW + n, user="carol", detail={"n": n})
    events = walk(
        lambda after: store.audit.list_page(window=Window(limit=2, after=after)), lambda e: e.id
    )
    assert [len(page) for page in events] == [2, 2, 1]
    flat = [event for page in events for event in page]
    assert flat == sorted(flat, reverse=True)
    made = [
        store.deployments.add([], files=DeploymentFiles(), now=NOW, owner="carol").id
        for _ in range(3)
    ]
    pages = walk(
        lambda after: store.deployments.list_page(window=Window(limit=2, after=after)),
        lambda d: d.id,
    )
    assert pages == [made[:0:-1], made[:1]]
