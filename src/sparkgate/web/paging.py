"""Links between the pages of a list: the filters in force, and the cursor of each page.

Pages follow the API's keyset cursors (``?after=<next>``): a page deep in a long list costs what
the first one does, and it does not shift while new rows arrive in front of it. Going back is
the browser's Back, or the link to the first page.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from enum import Enum
from typing import Any, TypeVar
from urllib.parse import urlencode

from sparkgate.errors import InvalidRequest
from sparkgate.http.paging import paging, window
from sparkgate.store.records import Page, Window

T = TypeVar("T")

PAGE = 50  # items on a page of a list


def checked_choice(field: str, value: str | None, choices: type[Enum], what: str) -> str:
    """A filter from the form that is one of ``choices`` (a state, a kind), or "" for none;
    any other value is refused, naming ``what`` it should have been."""
    if value and value not in {c.value for c in choices}:
        raise InvalidRequest(f"{field}: unknown {what} {value!r}.", field=field)
    return value or ""


def window_of(filters: Mapping[str, str], *, by_name: bool = False) -> Window:
    """The page of a list the filters' cursor asks for (``PAGE`` items)."""
    return window(0, PAGE, filters["after"] or None, by_name=by_name)


def shown(
    key: str, page: Page[T], view: Callable[[T], object], filters: Mapping[str, str]
) -> dict[str, Any]:
    """A list page as its template reads it: the items as the API shows them under ``key``
    (a schema model, or a view's dict: the template reads either), the API's paging fields,
    and the links (``page_links``)."""
    listed = {key: [view(item) for item in page.items], **paging(page, filters["after"] or None)}
    return page_links(listed, filters)


def page_links(page: Mapping[str, Any], filters: Mapping[str, str]) -> dict[str, Any]:
    """``page`` (an API list answer, with its ``next`` cursor) plus the query strings of this
    page (for its poll), of the next page (None on the last) and of the first (None on it)."""
    after = filters["after"]
    shown = {k: v for k, v in filters.items() if v and k != "after"}
    return {
        **page,
        "after": after,
        "query_string": urlencode({**shown, "after": after} if after else shown),
        "next_page": urlencode({**shown, "after": page["next"]}) if page["next"] else None,
        "first_page": urlencode(shown) if after else None,
    }
