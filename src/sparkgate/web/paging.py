"""Links between the pages of a list: the filters in force, and the offset of each page."""

from __future__ import annotations

from typing import Any
from urllib.parse import urlencode


def page_links(page: dict[str, Any], filters: dict[str, Any], size: int) -> dict[str, Any]:
    """``page`` (an API list answer, with ``total``) plus the query strings of this page (for
    its poll), of the newer page and of the older one (None at either end)."""
    offset = filters["offset"]
    shown = {k: v for k, v in filters.items() if v and k != "offset"}
    return {
        **page,
        "query_string": urlencode({**shown, "offset": offset}),
        "older": urlencode({**shown, "offset": offset + size})
        if offset + size < page["total"]
        else None,
        "newer": urlencode({**shown, "offset": max(0, offset - size)}) if offset > 0 else None,
    }
