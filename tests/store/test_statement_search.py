"""Searching a user's query history by its text (``GET /v1/queries?q=``), identical on SQLite
and PostgreSQL: any case, LIKE's wildcards taken as text, within the owner's scope, paged."""

from __future__ import annotations

from sparkgate.states import SessionKind, SessionState
from sparkgate.store import Store
from sparkgate.store.records import Window
from tests.conftest import NOW, force_state


def test_history_is_searched_by_text_in_any_case_within_the_owner(store: Store) -> None:
    sessions = {}
    for owner in ("bob", "alice"):
        session = store.sessions.add(SessionKind.INTERACTIVE, now=NOW, owner=owner)
        force_state(store, "sessions", session.id, SessionState.IDLE.value)
        sessions[owner] = session.id
    add = store.statements.add
    orders = add(sessions["bob"], "SELECT * FROM Sales.Orders", now=NOW).id
    add(sessions["bob"], "SELECT 1", now=NOW)
    percent = add(sessions["bob"], "SELECT '100%' AS orders_pct", now=NOW).id
    add(sessions["alice"], "SELECT * FROM sales.orders", now=NOW)

    def found(search: str, owner: str | None = "bob", limit: int = 100) -> list[int]:
        page = store.statements.list_page(
            owner=owner, search=search, newest_first=True, window=Window(limit=limit)
        )
        return [s.id for s in page.items]

    assert found("ORDERS") == [percent, orders]
    assert found("sales.orders") == [orders]
    assert found("0%") == [percent]
    assert found("_pct") == [percent]
    assert found("s_les") == []  # _ is not a wildcard
    assert len(found("orders", owner=None)) == 3
    page = store.statements.list_page(
        owner="bob", search="orders", newest_first=True, window=Window(limit=1)
    )
    assert [s.id for s in page.items] == [percent] and page.total == 2
    after = store.statements.list_page(
        owner="bob",
        search="orders",
        newest_first=True,
        window=Window(limit=1, after=page.next_after),
    )
    assert [s.id for s in after.items] == [orders] and after.next_after is None
