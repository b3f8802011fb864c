"""Links between the pages of a list: the filters in force, and the cursor of each page.

Pages follow the API's keyset cursors (``?after=<next>``): a page deep in a long list costs what
the first one does, and it does not shift while new rows arrive in front of it. Going back is
the browser's Back, or the link to the first page.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from enum import Enum
from typing import Generic, TypeVar
from urllib.parse import urlencode

from sparkgate.errors import InvalidRequest
from sparkgate.http.paging import next_cursor, window
from sparkgate.store.records import Page, Window

T = TypeVar("T")
V = TypeVar("V")

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


@dataclass(frozen=True)
class ListPage(Generic[V]):
    """A page of a list as its template reads it: the items as the API shows them, the count
    of the whole list (None when not counted), this page's cursor ("" on the first), and the
    query strings of this page (for its poll), of the next page (None on the last) and of
    the first (None on it)."""

    items: list[V]
    total: int | None
    after: str
    query_string: str
    next_page: str | None
    first_page: str | None


def shown(page: Page[T], view: Callable[[T], V], filters: Mapping[str, str]) -> ListPage[V]:
    """The page ``page`` of a list, each item through ``view``, with the links between
    pages that keep ``filters``."""
    after = filters["after"]
    kept = {k: v for k, v in filters.items() if v and k != "after"}
    next_after = next_cursor(page)
    return ListPage(
        items=[view(item) for item in page.items],
        total=page.total,
        after=after,
        query_string=urlencode({**kept, "after": after} if after else kept),
        next_page=urlencode({**kept, "after": next_after}) if next_after else None,
        first_page=urlencode(kept) if after else None,
    )
