"""The dashboard's page links follow the API's cursors (no server needed)."""

from __future__ import annotations

from sparkgate.store.records import Page
from sparkgate.web.paging import shown


def test_first_page_links_to_the_next_by_cursor() -> None:
    page = Page([1, 2], total=1000, offset=0, limit=50, next_after=951)
    links = shown(page, str, {"state": "failed", "owner": "", "after": ""})
    assert links.items == ["1", "2"]
    assert links.query_string == "state=failed"
    assert links.next_page == "state=failed&after=951"
    assert links.first_page is None and links.total == 1000


def test_a_deeper_page_polls_itself_and_links_back_to_the_first() -> None:
    page: Page[int] = Page([], total=None, offset=0, limit=50, next_after=None)
    links = shown(page, str, {"state": "", "owner": "", "after": "951"})
    assert links.query_string == "after=951" and links.after == "951"
    assert links.next_page is None and links.first_page == ""
