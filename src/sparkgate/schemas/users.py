"""Users and access: who the server takes you for, personal access tokens, the audit log,
why a user may or may not use a table, and a table's grants.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import Field

from sparkgate.schemas.common import Body, Paging, Timestamp


class Whoami(Body):
    user: str
    groups: list[str]
    admin: bool
    rights: list[Literal["sql", "code", "streams", "jobs", "admin"]]
    via: str = Field(description="How the credentials were checked: password, ldap, jwt, ...")


class Token(Body):
    id: int
    name: str | None
    owner: str
    prefix: str = Field(description="The secret's first characters, to tell tokens apart.")
    created_at: Timestamp
    expires_at: Timestamp | None
    last_used_at: Timestamp | None
    revoked_at: Timestamp | None


class NewToken(Token):
    token: str = Field(description="The secret: shown in this answer only.")


class TokenList(Body):
    tokens: list[Token]


class AuditEvent(Body):
    id: int
    at: Timestamp
    user: str | None
    address: str | None
    action: str
    target: str | None
    outcome: Literal["ok", "denied", "failed"]
    detail: dict[str, Any] | None


class AuditList(Paging):
    events: list[AuditEvent]


class AccessExplanation(Body):
    """``GET /v1/access/explain``: why a user may or may not use a privilege on a table."""

    user: str
    privilege: str
    table: str
    allowed: bool
    privileges: list[str]
    hidden_columns: list[str]
    masks: dict[str, str]
    row_filter: str | None
    reasons: list[str]


class TableGrant(Body):
    grantee_type: str  # "user" | "group"
    grantee: str
    privilege: str
    granted_by: str
    granted_at: float


class TableGrants(Body):
    """``GET /v1/tables/{table}/grants``: a table's owner and what was granted on it."""

    table: str
    owner: str | None
    grants: list[TableGrant]
