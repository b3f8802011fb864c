"""Links between the pages of a list: the filters in force, and the cursor of each page.

Pages follow the API's keyset cursors (``?after=<next>``): a page deep in a long list costs what
the first one does, and it does not shift while new rows arrive in front of it. Going back is
the browser's Back, or the link to the first page.
"""

from __future__ import annotations

from typing import Any
from urllib.parse import urlencode


def page_links(page: dict[str, Any], filters: dict[str, Any]) -> dict[str, Any]:
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
