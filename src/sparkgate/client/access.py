"""The calls on users and access: who the server takes you for, personal access tokens,
the audit log, and why a user may or may not use a table.
"""

from __future__ import annotations

from sparkgate.client._params import given, paging
from sparkgate.client.transport import Transport
from sparkgate.schemas.usage import UsageReport
from sparkgate.schemas.users import (
    AccessExplanation,
    AuditList,
    NewToken,
    TableGrants,
    Token,
    TokenList,
    Whoami,
)


class AccessCalls(Transport):
    """Users, tokens, the audit log and table access."""

    # users and access
    def whoami(self) -> Whoami:
        """Who the server takes these credentials for: user, groups, admin, rights, via."""
        return Whoami.read(self._call("GET", "/v1/whoami"))

    def create_token(self, name: str | None = None, expires_in: float | None = None) -> NewToken:
        """A new personal access token; its secret (``token``) is in this answer only."""
        body = {"name": name, "expires_in": expires_in}
        return NewToken.read(self._call("POST", "/v1/tokens", json=body))

    def tokens(self, owner: str | None = None) -> TokenList:
        return TokenList.read(self._call("GET", "/v1/tokens", params=given(owner=owner)))

    def revoke_token(self, token_id: str | int) -> Token:
        return Token.read(self._call("DELETE", f"/v1/tokens/{token_id}"))

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
        until: float | None = None,
        door: str | None = None,
        total: bool | None = None,
    ) -> AuditList:
        """Audit events and the access history, newest first (admins see all, a user their
        own and the history of tables they own); ``action`` matches a prefix, ``since`` and
        ``until`` are epoch seconds, ``obj`` a table (``hr.salaries``), ``door`` the door an
        access came through; the next page is ``audit(..., after=page.next)``."""
        filters = {
            "user": user,
            "action": action,
            "outcome": outcome,
            "since": since,
            "until": until,
            "object": obj,
            "door": door,
        }
        params = paging(offset, limit, after, total, **filters)
        return AuditList.read(self._call("GET", "/v1/audit", params=params))

    def usage(
        self,
        *,
        since: float | None = None,
        until: float | None = None,
        bucket: str | None = None,
        user: str | None = None,
        group_by: str | None = None,
    ) -> UsageReport:
        """What queries that ended in ``[since, until)`` (epoch seconds) cost, by ``group_by``
        (``user``, ``group``, ``resource_group``, ``tag:<key>``) and, with ``bucket="day"``, by
        day; yours, or (admins) everyone's or ``user``'s."""
        params = given(since=since, until=until, bucket=bucket, user=user, group_by=group_by)
        return UsageReport.read(self._call("GET", "/v1/usage", params=params))

    def explain_access(self, user: str, privilege: str, table: str) -> AccessExplanation:
        """Why ``user`` may or may not use ``privilege`` on ``table`` (admins only)."""
        params = {"who": user, "privilege": privilege, "table": table}
        return AccessExplanation.read(self._call("GET", "/v1/access/explain", params=params))

    def table_grants(self, table: str) -> TableGrants:
        """A table's owner and grants (its owner and admins)."""
        return TableGrants.read(self._call("GET", f"/v1/tables/{table}/grants"))
