"""Personal access tokens, dashboard sign-ins and the audit log, for every door.

A token is its owner's (admins see all); tokens are made with a password or a JWT, never with
another token, so that a stolen token cannot outlive its revocation. The audit log is whole
for admins; a user reads their own events, and the whole history of a table they own.
"""

from __future__ import annotations

from dataclasses import dataclass

from sparkgate.auth import tokens
from sparkgate.auth.access import ADMIN
from sparkgate.auth.principal import Principal
from sparkgate.auth.users import Users
from sparkgate.errors import Forbidden
from sparkgate.service.visibility import list_owner, sees
from sparkgate.store import Store
from sparkgate.store.audit import AuditRecord
from sparkgate.store.records import Page, Window
from sparkgate.store.table_access import TableName
from sparkgate.store.tokens import TokenNotFound, TokenRecord

# The name of the tokens the dashboard makes at sign-in (and revokes at sign-out).
DASHBOARD_TOKEN = "dashboard sign-in"


@dataclass(frozen=True)
class NewToken:
    record: TokenRecord
    secret: str  # shown once: the store keeps its hash


@dataclass
class Accounts:
    store: Store
    users: Users

    def create_token(
        self, *, user: Principal, name: str | None, expires_in: float | None
    ) -> NewToken:
        if not self.users.enabled:
            raise Forbidden(
                "Tokens need authentication: the server runs with SPARKGATE_AUTH=none, where "
                "every request is already the anonymous user's."
            )
        if user.via == "token":
            # A token cannot mint tokens: a stolen one must not outlive its revocation.
            raise Forbidden("Create tokens with your password or a JWT, not with another token.")
        record, secret = tokens.create(
            self.store, user.name, now=self.users.clock(), name=name, expires_in=expires_in
        )
        self.users.audit(user, "token.create", "ok", target=f"token:{record.id}")
        return NewToken(record, secret)

    def tokens(self, *, user: Principal, owner: str | None = None) -> list[TokenRecord]:
        """The user's tokens (admins: ``owner``'s, or everyone's)."""
        return self.store.tokens.list(owner=list_owner(user, owner))

    def revoke_token(self, token_id: int, *, user: Principal) -> TokenRecord:
        """Revoke a token: it stops working at once. Revoking it again changes nothing."""
        record = self.store.tokens.get(token_id)
        if not sees(user, record.owner):
            raise TokenNotFound(token_id)  # another user's: as unknown as any
        self.users.audit(user, "token.revoke", "ok", target=f"token:{record.id}")
        return self.store.tokens.revoke(record.id, now=self.users.clock())

    # -- the dashboard's sign-in -----------------------------------------------------------

    def sign_in(self, *, user: Principal, secret: str, ttl: float) -> str:
        """The dashboard cookie's token for a user who just signed in with ``secret``: that
        token itself when it is one (minting a new one from it would let a stolen token
        outlive its revocation), else a new token that lives ``ttl`` seconds."""
        if tokens.looks_like_token(secret):
            cookie = secret
        else:
            now = self.users.clock()
            _, cookie = tokens.create(
                self.store, user.name, now=now, name=DASHBOARD_TOKEN, expires_in=ttl
            )
        self.users.audit(user, "dashboard.login", "ok")
        return cookie

    def sign_out(self, secret: str) -> None:
        """Revoke a token made at sign-in; a token the user signed in with stays theirs."""
        if not tokens.looks_like_token(secret):
            return
        record = self.store.tokens.find_by_hash(tokens.secret_hash(secret))
        if record is not None and record.revoked_at is None and record.name == DASHBOARD_TOKEN:
            self.store.tokens.revoke(record.id, now=self.users.clock())

    # -- the audit log -----------------------------------------------------------------------

    def audit_events(
        self,
        *,
        user: Principal,
        by: str | None = None,
        action: str | None = None,
        outcome: str | None = None,
        since: float | None = None,
        until: float | None = None,
        obj: str | None = None,
        door: str | None = None,
        window: Window = Window(),
    ) -> Page[AuditRecord]:
        """Audit events, newest first, with the access history (who read and wrote which
        table, through which door): admins see every event; a user sees their own, and the
        whole history of a table they own (``obj``)."""
        if not self._sees_all(user, obj):
            if by is not None and by != user.name:
                return Page([], 0 if window.count else None, window.offset, window.limit)
            by = user.name
        return self.store.audit.list_page(
            user=by,
            action=action,
            outcome=outcome,
            since=since,
            until=until,
            obj=obj,
            door=door,
            window=window,
        )

    def _sees_all(self, user: Principal, obj: str | None) -> bool:
        if ADMIN in user.rights:  # without authentication, everyone is (``Users.principal``)
            return True
        if obj is None:
            return False
        name = table_name(obj)
        return name is not None and self.store.table_access.owner(name) == user.name


def table_name(obj: str) -> TableName | None:
    """``hr.salaries`` or ``spark_catalog.hr.salaries`` as a table's name (None: not one)."""
    parts = [p.strip().strip("`") for p in obj.strip().split(".")]
    if len(parts) == 2:
        parts.insert(0, "spark_catalog")
    if len(parts) != 3 or not all(parts):
        return None
    return TableName.of(*parts)
