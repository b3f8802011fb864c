"""The calls on users and access: who the server takes you for, personal access tokens,
the audit log, and why a user may or may not use a table.
"""

from __future__ import annotations

from typing import Any

from sparkgate.client._params import given, paging
from sparkgate.client.transport import Transport


class AccessCalls(Transport):
    """Users, tokens, the audit log and table access."""

    # users and access
    def whoami(self) -> dict[str, Any]:
        """Who the server takes these credentials for: user, groups, admin, rights, via."""
        return self._call("GET", "/v1/whoami")

    def create_token(
        self, name: str | None = None, expires_in: float | None = None
    ) -> dict[str, Any]:
        """A new personal access token; its secret (``token``) is in this answer only."""
        body = {"name": name, "expires_in": expires_in}
        return self._call("POST", "/v1/tokens", json=body)

    def tokens(self, owner: str | None = None) -> dict[str, Any]:
        return self._call("GET", "/v1/tokens", params=given(owner=owner))

    def revoke_token(self, token_id: str | int) -> dict[str, Any]:
        return self._call("DELETE", f"/v1/tokens/{token_id}")

    def audit(
        self,
        user: str | None = None,
        action: str | None = None,
        outcome: str | None = None,
        offset: int = 0,
        limit: int = 100,
        since: float | None = None,
        after: str | None = None,
        obj: str | None = None,
    ) -> dict[str, Any]:
        """Audit events, newest first (admins only); ``action`` matches a prefix, ``since`` is
        epoch seconds, ``obj`` a table (``hr.salaries``); the next page is
        ``audit(..., after=page["next"])``."""
        filters = {
            "user": user,
            "action": action,
            "outcome": outcome,
            "since": since,
            "object": obj,
        }
        return self._call("GET", "/v1/audit", params=paging(offset, limit, after, None, **filters))

    def usage(
        self,
        *,
        since: float | None = None,
        until: float | None = None,
        bucket: str | None = None,
        user: str | None = None,
        group_by: str | None = None,
    ) -> dict[str, Any]:
        """What queries that ended in ``[since, until)`` (epoch seconds) cost, by ``group_by``
        (``user``, ``group``, ``resource_group``, ``tag:<key>``) and, with ``bucket="day"``, by
        day; yours, or (admins) everyone's or ``user``'s."""
        params = given(since=since, until=until, bucket=bucket, user=user, group_by=group_by)
        return self._call("GET", "/v1/usage", params=params)

    def explain_access(self, user: str, privilege: str, table: str) -> dict[str, Any]:
        """Why ``user`` may or may not use ``privilege`` on ``table`` (admins only)."""
        return self._call(
            "GET",
            "/v1/access/explain",
            params={"who": user, "privilege": privilege, "table": table},
        )

    def table_grants(self, table: str) -> dict[str, Any]:
        """A table's owner and grants (its owner and admins)."""
        return self._call("GET", f"/v1/tables/{table}/grants")
