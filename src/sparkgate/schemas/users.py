"""Users and access: who the server takes you for, personal access tokens, the audit log,
why a user may or may not use a table, and a table's grants.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Literal

from pydantic import Field, TypeAdapter

from sparkgate.schemas.common import Body, OptionalTimestamp, Paging, Timestamp

if TYPE_CHECKING:  # the records its models are built from, for the type checker only
    from sparkgate.store.audit import AuditRecord
    from sparkgate.store.table_access import GrantRecord
    from sparkgate.store.tokens import TokenRecord

Right = Literal["sql", "code", "streams", "jobs", "admin"]
Outcome = Literal["ok", "denied", "failed"]
# The users layer keeps rights as text: checked where they become a field.
RIGHTS: TypeAdapter[list[Right]] = TypeAdapter(list[Right])


class Whoami(Body):
    user: str
    groups: list[str]
    admin: bool
    rights: list[Right]
    via: str = Field(description="How the credentials were checked: password, ldap, jwt, ...")


class Token(Body):
    id: int
    name: str | None
    owner: str
    prefix: str = Field(description="The secret's first characters, to tell tokens apart.")
    created_at: Timestamp
    expires_at: OptionalTimestamp
    last_used_at: OptionalTimestamp
    revoked_at: OptionalTimestamp

    @classmethod
    def of(cls, record: TokenRecord) -> Token:
        """A personal access token, never its secret (a field the model lacks)."""
        return cls.model_validate(record)


class NewToken(Token):
    token: str = Field(description="The secret: shown in this answer only.")

    @classmethod
    def made(cls, record: TokenRecord, secret: str) -> NewToken:
        return cls.from_record(record, token=secret)


class TokenList(Body):
    tokens: list[Token]


class AuditEvent(Body):
    id: int
    at: Timestamp
    user: str | None
    address: str | None
    action: str
    target: str | None
    outcome: Outcome
    detail: dict[str, Any] | None
    door: str | None = None
    """The access history's: the door its statement came through."""
    query_id: int | None = None
    """The access history's: its statement."""

    @classmethod
    def of(cls, event: AuditRecord) -> AuditEvent:
        return cls.model_validate(event)


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

    @classmethod
    def of(cls, grant: GrantRecord) -> TableGrant:
        return cls.from_record(grant, grantee_type=grant.grantee_kind)


class TableGrants(Body):
    """``GET /v1/tables/{table}/grants``: a table's owner and what was granted on it."""

    table: str
    owner: str | None
    grants: list[TableGrant]
