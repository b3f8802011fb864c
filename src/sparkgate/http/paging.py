"""Paging of the native API's lists: keyset cursors (``?after=``), offsets kept for old clients.

A list answers ``{..., "next", "total", "offset", "limit"}``. ``next`` is an opaque cursor, or
null on the last page: pass it back as ``?after=`` for the following page. A keyset page reads
only its own rows however deep it is; an offset page reads every row it skips, and its rows
shift when rows are added in front of it. ``total`` counts every matching row, which reads them
all: it is given by default only for a first page (no ``after``), or when ``?total=true``.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Annotated, Any, TypedDict

from fastapi import Depends, Query

from sparkgate.errors import InvalidRequest
from sparkgate.http.params import ListLimit, Offset
from sparkgate.store.records import Page, Window

After = Annotated[
    str | None,
    Query(
        min_length=1,
        description="The `next` cursor of the previous page: the page that follows it.",
    ),
]
Total = Annotated[
    bool | None,
    Query(description="Count every matching row (default: only without `after`)."),
]


def id_after(after: str | None, offset: int) -> int | None:
    """The id a cursor stands for (lists in id order): ``"41"`` -> 41."""
    _one_of(after, offset)
    if after is None:
        return None
    if not (after.isascii() and after.isdigit() and len(after) <= 18):
        raise InvalidRequest(
            f"after: {after!r} is not a cursor of this list; pass the `next` of a page.",
            field="after",
        )
    return int(after)


def name_after(after: str | None, offset: int) -> str | None:
    """The name a cursor stands for (lists in name order)."""
    _one_of(after, offset)
    return after


def counted(total: bool | None, after: str | None) -> bool:
    """Whether to count every matching row: when asked, else only for a first page."""
    return total if total is not None else after is None


def window(
    offset: int, limit: int, after: str | None, total: bool | None = None, *, by_name: bool = False
) -> Window:
    """The page a request asks for: ``?offset=&limit=``, or ``?after=`` (an id, or a name
    for lists in name order); ``?total=``, else counted on a first page only."""
    key = name_after(after, offset) if by_name else id_after(after, offset)
    return Window(offset, limit, key, counted(total, after))


class PagingFields(TypedDict):
    """The paging keys of a list answer (``schemas.common.Paging``), to spread into the list's
    model: ``QueryList(queries=[...], **listing.paging(page))``."""

    next: str | None
    total: int | None
    offset: int | None
    limit: int


def next_cursor(page: Page[Any]) -> str | None:
    """The ``?after=`` that reads the page after ``page`` (None: it is the last), as every
    list answer (``next``) and the dashboard's page links give it."""
    return None if page.next_after is None else str(page.next_after)


def paging(page: Page[Any], after: str | None) -> PagingFields:
    """The paging fields of a list answer. A keyset page has no offset (null)."""
    return {
        "next": next_cursor(page),
        "total": page.total,
        "offset": None if after is not None else page.offset,
        "limit": page.limit,
    }


@dataclass(frozen=True)
class ListRequest:
    """What a list request asks for: ``?offset=&limit=``, or ``?after=``; ``?total=``."""

    offset: int
    limit: int
    after: str | None
    total: bool | None

    def window(self, *, by_name: bool = False) -> Window:
        return window(self.offset, self.limit, self.after, self.total, by_name=by_name)

    def paging(self, page: Page[Any]) -> PagingFields:
        return paging(page, self.after)


def _list_request(default_limit: int) -> Callable[..., ListRequest]:
    def read(
        offset: Offset = 0,
        limit: ListLimit = default_limit,
        after: After = None,
        total: Total = None,
    ) -> ListRequest:
        return ListRequest(offset, limit, after, total)

    return read


# A list route's paging parameters: 100 items a page by default (RecentList: 20).
ListParams = Annotated[ListRequest, Depends(_list_request(100))]
RecentList = Annotated[ListRequest, Depends(_list_request(20))]


def _one_of(after: str | None, offset: int) -> None:
    if after is not None and offset:
        raise InvalidRequest(
            f"after: give a cursor or an offset ({offset}), not both; cursors are the way.",
            field="after",
        )
