"""The dashboard's page links follow the API's cursors (no server needed)."""

from __future__ import annotations

from typing import Any

from sparkgate.web.paging import page_links


def test_first_page_links_to_the_next_by_cursor() -> None:
    page = {"queries": [], "next": "951", "total": 1000, "offset": 0, "limit": 50}
    links = page_links(page, {"state": "failed", "owner": "", "after": ""})
    assert links["query_string"] == "state=failed"
    assert links["next_page"] == "state=failed&after=951"
    assert links["first_page"] is None and links["total"] == 1000


def test_a_deeper_page_polls_itself_and_links_back_to_the_first() -> None:
    page: dict[str, Any] = {"queries": [], "next": None, "total": None, "offset": None, "limit": 50}
    links = page_links(page, {"state": "", "owner": "", "after": "951"})
    assert links["query_string"] == "after=951" and links["after"] == "951"
    assert links["next_page"] is None and links["first_page"] == ""
