"""Saved queries in the store, identical on SQLite and PostgreSQL: names unique per owner,
lists of one's own and one's groups', search in any case, paging newest change first."""

from __future__ import annotations

import pytest

from sparkgate.errors import InvalidRequest
from sparkgate.store import Store
from sparkgate.store.records import Window
from sparkgate.store.saved_queries import SavedQueryChanges, SavedQueryExists, SavedQueryNotFound
from tests.conftest import NOW


def test_a_name_is_unique_per_owner(store: Store) -> None:
    first = store.saved_queries.add("bob", "revenue", "SELECT 1", now=NOW)
    store.saved_queries.add("alice", "revenue", "SELECT 2", now=NOW)  # another owner: fine
    with pytest.raises(SavedQueryExists):
        store.saved_queries.add("bob", "revenue", "SELECT 3", now=NOW + 1)
    other = store.saved_queries.add("bob", "costs", "SELECT 4", now=NOW + 2)
    with pytest.raises(SavedQueryExists):
        store.saved_queries.update(other, SavedQueryChanges(name="revenue"), now=NOW + 3)
    assert store.saved_queries.get(first.id).sql == "SELECT 1"
    assert store.saved_queries.get(other.id).name == "costs"


def test_changes_set_what_is_given_and_clear_what_is_named(store: Store) -> None:
    saved = store.saved_queries.add(
        "bob",
        "revenue",
        "SELECT 1",
        now=NOW,
        description="daily",
        group_name="analysts",
        tags={"team": "finance"},
    )
    assert saved.tags == {"team": "finance"} and saved.group_name == "analysts"
    changed = store.saved_queries.update(saved, SavedQueryChanges(sql="SELECT 2"), now=NOW + 5)
    assert (changed.sql, changed.group_name, changed.description) == (
        "SELECT 2",
        "analysts",
        "daily",
    )
    assert changed.created_at == NOW and changed.updated_at == NOW + 5
    private = store.saved_queries.update(
        changed, SavedQueryChanges(given=frozenset({"group_name", "description"})), now=NOW + 6
    )
    assert private.group_name is None and private.description is None
    assert store.saved_queries.delete(saved.id)
    assert not store.saved_queries.delete(saved.id)
    with pytest.raises(SavedQueryNotFound):
        store.saved_queries.get(saved.id)
    with pytest.raises(SavedQueryNotFound):
        store.saved_queries.update(saved, SavedQueryChanges(sql="SELECT 3"), now=NOW + 7)


def test_a_viewer_lists_their_own_and_their_groups_and_searches_any_case(store: Store) -> None:
    add = store.saved_queries.add
    bobs = add("bob", "Daily Revenue", "SELECT sum(x) FROM sales", now=NOW)
    shared = add("alice", "churn", "SELECT * FROM Revenue_100%", now=NOW + 1, group_name="a")
    add("alice", "private", "SELECT revenue", now=NOW + 2)
    add("carol", "elsewhere", "SELECT revenue", now=NOW + 3, group_name="b")

    def names(**filters: object) -> list[str]:
        page = store.saved_queries.list_page(**filters)  # type: ignore[arg-type]
        assert page.total == len(page.items)
        return [r.name for r in page.items]

    assert names(viewer="bob", groups={"a"}) == ["churn", "Daily Revenue"]
    assert names(viewer="bob") == ["Daily Revenue"]
    assert names(viewer="bob", groups={"a"}, search="REVENUE") == ["churn", "Daily Revenue"]
    assert names(viewer="bob", groups={"a"}, search="sales") == ["Daily Revenue"]
    # LIKE's wildcards are text like any other.
    assert names(viewer="bob", groups={"a"}, search="_100%") == ["churn"]
    assert names(viewer="bob", groups={"a"}, search="0_1") == []
    assert names(viewer="bob", groups={"a"}, owner="alice") == ["churn"]
    assert names(viewer=None, owner="alice") == ["private", "churn"]
    assert len(names(viewer=None)) == 4
    # A change puts it first.
    store.saved_queries.update(bobs, SavedQueryChanges(sql="SELECT 1"), now=NOW + 10)
    assert names(viewer="bob", groups={"a"}) == ["Daily Revenue", "churn"]
    assert shared.id != bobs.id


def test_pages_follow_the_cursor_through_equal_change_times(store: Store) -> None:
    made = [store.saved_queries.add("bob", f"q{i}", "SELECT 1", now=NOW) for i in range(5)]
    made += [store.saved_queries.add("bob", "newest", "SELECT 1", now=NOW + 1)]
    seen: list[int] = []
    after: str | None = None
    while True:
        page = store.saved_queries.list_page(
            viewer="bob", window=Window(limit=2, after=after, count=False)
        )
        seen += [r.id for r in page.items]
        if page.next_after is None:
            break
        after = str(page.next_after)
    assert seen == [made[-1].id, *[r.id for r in reversed(made[:-1])]]
    with pytest.raises(InvalidRequest):
        store.saved_queries.list_page(viewer="bob", window=Window(after="yesterday"))
    with pytest.raises(InvalidRequest):
        store.saved_queries.list_page(viewer="bob", window=Window(after=f"{NOW!r}:{2**70}"))
