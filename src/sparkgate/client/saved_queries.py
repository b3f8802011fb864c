"""The calls on saved queries: list (and search), read, save, change and delete them."""

from __future__ import annotations

from typing import Any

from sparkgate.client._params import given, paging
from sparkgate.client.transport import Transport
from sparkgate.schemas.saved_queries import SavedQuery, SavedQueryList


class SavedQueryCalls(Transport):
    """Saved queries."""

    def saved_queries(
        self,
        *,
        search: str | None = None,
        owner: str | None = None,
        offset: int = 0,
        limit: int = 100,
        after: str | None = None,
        total: bool | None = None,
    ) -> SavedQueryList:
        """Yours and those shared with your groups, newest change first; ``search``: only
        those whose name or SQL holds it (any case)."""
        params = paging(offset, limit, after, total, q=search or None, owner=owner)
        return SavedQueryList.read(self._call("GET", "/v1/saved-queries", params=params))

    def saved_query(self, saved_id: int) -> SavedQuery:
        return SavedQuery.read(self._call("GET", f"/v1/saved-queries/{saved_id}"))

    def save_query(
        self,
        name: str,
        sql: str,
        *,
        group: str | None = None,
        description: str | None = None,
        tags: dict[str, str] | None = None,
    ) -> SavedQuery:
        """Save ``sql`` as ``name``, private, or shared with ``group`` (one of yours). Not
        sent twice: a retry after a lost answer would meet the name it saved (409)."""
        body = {"name": name, "sql": sql, **given(group=group, description=description, tags=tags)}
        return SavedQuery.read(self._call("POST", "/v1/saved-queries", json=body))

    def update_saved_query(
        self,
        saved_id: int,
        *,
        name: str | None = None,
        sql: str | None = None,
        group: str | None = None,
        private: bool = False,
        description: str | None = None,
        tags: dict[str, str] | None = None,
    ) -> SavedQuery:
        """Change what is given; ``private`` unshares it (``group`` null)."""
        body: dict[str, Any] = given(
            name=name, sql=sql, group=group, description=description, tags=tags
        )
        if private:
            body["group"] = None
        return SavedQuery.read(self._call("PUT", f"/v1/saved-queries/{saved_id}", json=body))

    def delete_saved_query(self, saved_id: int) -> SavedQuery:
        return SavedQuery.read(self._call("DELETE", f"/v1/saved-queries/{saved_id}"))
