"""The users layer every front door calls: who is this (``authenticate``), may they
(``require``, ``check_conf``, ``check_sql``, limits), and what they did (``audit``).

users = Users(settings, store)
user = users.authenticate("Basic Ym9iOnNlY3JldA==", address="10.0.0.7")
users.require(user, "code", "run Python code")  # MissingRight (403) when not granted
"""

from __future__ import annotations

import asyncio
import base64
import binascii
import contextlib
import hashlib
import logging
import threading
import time
from collections import deque
from collections.abc import Callable, Mapping
from functools import partial
from typing import TYPE_CHECKING, Any, Protocol

from sparkgate.auth import tokens
from sparkgate.auth.access import ADMIN, CODE, RIGHTS, SQL, STREAMS, Access, AccessRules
from sparkgate.auth.passwords import PasswordFile
from sparkgate.auth.principal import ANONYMOUS, Identity, Principal, share_key
from sparkgate.auth.sql import SqlNeeds, sql_needs
from sparkgate.errors import (
    ConfigurationError,
    DeniedSetting,
    Forbidden,
    LimitExceeded,
    MissingRight,
    SparkgateError,
    Unauthenticated,
)
from sparkgate.settings import Settings
from sparkgate.states import SessionKind, StatementKind

if TYPE_CHECKING:
    from sqlalchemy.engine import Connection

    from sparkgate.sql.lexed import LexedScript
    from sparkgate.store import Store

log = logging.getLogger("sparkgate.auth")

METHODS = ("password", "ldap", "jwt")
_FAILURE_WINDOW = 300.0  # failed logins from one address count for this long
_FREE_FAILURES = 3  # this many in the window cost nothing extra; then each is slowed down
_MAX_DELAY = 5.0


def statement_right(kind: StatementKind) -> str:
    """The right a statement of ``kind`` needs, as ``Users.require_statement`` asks it:
    ``sql`` for SQL and what the gateway runs as SQL (catalog listings, loads), ``code`` for
    the rest (Python, files)."""
    if kind in (StatementKind.SQL, StatementKind.CATALOG, StatementKind.LOAD):
        return SQL
    return CODE


class _PasswordCheck(Protocol):
    def verify(self, name: str, password: str) -> Identity | None: ...


class _BearerCheck(Protocol):
    def verify_bearer(self, token: str) -> Identity | None: ...


class Users:
    def __init__(
        self,
        settings: Settings,
        store: Store,
        *,
        clock: Callable[[], float] = time.time,
        on_failed_login: Callable[[str], None] | None = None,
    ) -> None:
        self.settings = settings
        self.store = store
        self.clock = clock
        # Told the scheme of each failed login (a node counts them for /metrics).
        self.on_failed_login = on_failed_login
        self.methods = settings.auth_methods
        unknown = [m for m in self.methods if m not in METHODS]
        if unknown:
            raise ConfigurationError(
                f"SPARKGATE_AUTH: unknown method(s) {', '.join(unknown)}; use none or a comma "
                f"list of {', '.join(METHODS)}."
            )
        self.password_file: PasswordFile | None = None
        self._password: list[_PasswordCheck] = []  # in SPARKGATE_AUTH's order
        self._bearer: list[_BearerCheck] = []
        for method in self.methods:
            if method == "password":
                self.password_file = self._password_file(settings)
                self._password.append(self.password_file)
            elif method == "ldap":
                from sparkgate.auth.ldap import LdapAuthenticator

                self._password.append(LdapAuthenticator(settings))
            elif method == "jwt":
                from sparkgate.auth.jwt import JwtAuthenticator

                self._bearer.append(JwtAuthenticator(settings, clock=clock))
        self.access = Access(settings.access_file, settings.admins)
        if self.methods and self.access.rules().tables is None:
            # Said once, where a platform team looks first: who can read what.
            log.warning(
                "data access control is off: the access file has no tables: section, so every "
                "user with the sql right may read, change and drop every table"
            )
        self._lock = threading.Lock()
        # sha256(Authorization header) -> (expires at, identity, the password file's hash of
        # the user when verified against it: the entry holds only while the file still does)
        self._cache: dict[str, tuple[float, Identity, str | None]] = {}
        # Personal access tokens read in the last second, for doors that ask for it.
        self._recent_tokens = tokens.RecentTokens()
        self._failures: dict[str, deque[float]] = {}

    @staticmethod
    def _password_file(settings: Settings) -> PasswordFile:
        if settings.auth_password_file is None:
            raise ConfigurationError(
                "SPARKGATE_AUTH includes password but SPARKGATE_AUTH_PASSWORD_FILE is not set."
            )
        return PasswordFile(settings.auth_password_file)

    @property
    def enabled(self) -> bool:
        return bool(self.methods)

    def rules(self) -> AccessRules:
        return self.access.rules()

    # -- who is it -----------------------------------------------------------------------

    def authenticate(
        self, authorization: str | None, *, address: str | None, recent_tokens: bool = False
    ) -> Principal:
        """The caller of a request with this Authorization header. Raises Unauthenticated,
        the same for an unknown user as for a wrong password.

        ``recent_tokens``: a personal access token read from the store less than a second ago
        is not read again, so a revocation takes effect up to a second later (for Spark
        Connect, whose client makes several calls per operation). Without it, at once."""
        if not self.enabled:
            return self.principal(Identity(ANONYMOUS), address=address)
        if not authorization:
            raise Unauthenticated(
                "Credentials are required: Authorization: Basic (user and password, or a "
                "personal access token as the password) or Bearer (a token)."
            )
        identity = self.identify(authorization, recent_tokens=recent_tokens)
        if identity is None:
            self._failed(address, authorization)
            raise Unauthenticated()
        return self.principal(identity, address=address)

    def identify(self, authorization: str, *, recent_tokens: bool = False) -> Identity | None:
        scheme, _, value = authorization.strip().partition(" ")
        value = value.strip()
        scheme = scheme.lower()
        recent = self._recent_tokens if recent_tokens else None
        if scheme == "bearer":
            return self._bearer_identity(value, recent)
        if scheme == "basic":
            try:
                name, sep, password = base64.b64decode(value, validate=True).decode().partition(":")
            except (binascii.Error, UnicodeDecodeError):
                return None
            if not sep or not name:
                return None
            return self._basic_identity(authorization, name, password, recent)
        return None

    def _bearer_identity(
        self, token: str, recent: tokens.RecentTokens | None = None
    ) -> Identity | None:
        if tokens.looks_like_token(token):
            # One indexed read, so a revoked token stops working at once; with ``recent`` (the
            # Spark Connect door's calls), at most a second later.
            return self._current(tokens.verify(self.store, token, now=self.clock(), recent=recent))
        for check in self._bearer:
            identity = check.verify_bearer(token)
            if identity is not None:
                return identity
        return None

    def _basic_identity(
        self, header: str, name: str, password: str, recent: tokens.RecentTokens | None = None
    ) -> Identity | None:
        if tokens.looks_like_token(password):
            return self._current(
                tokens.verify(self.store, password, now=self.clock(), user=name, recent=recent)
            )
        key = hashlib.sha256(header.encode()).hexdigest()
        now = self.clock()
        with self._lock:
            hit = self._cache.get(key)
        if hit is not None and hit[0] > now and self._still_valid(hit[1], hit[2]):
            return hit[1]
        # Read before verifying: if the file changes in between, the entry names the older
        # hash and the next request verifies again (never the other way round).
        hashed = self.password_file.hash_of(name) if self.password_file is not None else None
        for check in self._password:
            identity = check.verify(name, password)
            if identity is not None:
                held = hashed if identity.via == "password" else None
                with self._lock:
                    if len(self._cache) > 10_000:
                        self._cache.clear()
                    self._cache[key] = (now + self.settings.auth_cache_ttl, identity, held)
                return identity
        return None

    def _still_valid(self, identity: Identity, hashed: str | None) -> bool:
        """A cached password-file login holds while the file holds the same hash for the user:
        a changed password or a removed user is refused on the next request (the file is
        re-read when it changes; this is a dict lookup). LDAP logins hold for the TTL."""
        if identity.via != "password" or self.password_file is None:
            return True
        return hashed is not None and self.password_file.hash_of(identity.name) == hashed

    def _current(self, identity: Identity | None) -> Identity | None:
        """A token's owner, if still a user: when the password file is the only source of
        users, removing a user from it ends their tokens too. (LDAP and JWT users cannot be
        listed; revoke their tokens with ``sparkgate tokens revoke``.)"""
        if identity is None or self.methods != ["password"]:
            return identity
        listed = self._still_listed(Identity(identity.name, via="password"))
        return identity if listed else None

    def _still_listed(self, identity: Identity) -> bool:
        if identity.via != "password" or self.password_file is None:
            return True
        return self.password_file.hash_of(identity.name) is not None

    def principal(self, identity: Identity, *, address: str | None = None) -> Principal:
        if not self.enabled:
            # One user on loopback: the machine's owner, with every right.
            return Principal(
                ANONYMOUS, admin=True, rights=frozenset(RIGHTS), via="none", address=address
            )
        rules = self.rules()
        groups = rules.groups_of(identity.name, identity.groups)
        admin = rules.is_admin(identity.name, groups)
        return Principal(
            identity.name,
            groups=groups,
            admin=admin,
            rights=rules.rights_of(identity.name, groups),
            via=identity.via,
            address=address,
            impersonator=identity.name in rules.impersonators,
        )

    def as_user(self, acting: Principal, name: str) -> Principal:
        """The principal of a user someone else acts for (Livy's proxyUser)."""
        return self.principal(Identity(name, via=f"proxy:{acting.name}"), address=acting.address)

    def _failed(self, address: str | None, authorization: str) -> None:
        now = self.clock()
        key = address or "?"
        with self._lock:
            recent = self._failures.setdefault(key, deque())
            recent.append(now)
            while recent and recent[0] < now - _FAILURE_WINDOW:
                recent.popleft()
            if len(self._failures) > 10_000:
                self._failures.clear()
        claimed = _claimed(authorization)
        if self.on_failed_login is not None:
            self.on_failed_login(claimed["scheme"])
        self.audit(None, "login", "failed", address=address, detail=claimed)

    async def authenticate_later(
        self, authorization: str | None, *, address: str | None
    ) -> Principal:
        """``authenticate`` for a front door's event loop: a password check may take a bcrypt
        hash or an LDAP bind, so it runs off the loop; a failed attempt from an address that
        failed often is answered late, slowing guessing down without holding a thread."""
        try:
            if not self.enabled:
                return self.authenticate(authorization, address=address)
            return await asyncio.to_thread(self.authenticate, authorization, address=address)
        except Unauthenticated:
            delay = self.failure_delay(address)
            if delay > 0:
                await asyncio.sleep(delay)
            raise

    def failure_delay(self, address: str | None) -> float:
        """How long to hold the answer to a failed login from ``address``: nothing for the
        first few in the window, then doubling up to a few seconds."""
        now = self.clock()
        with self._lock:
            recent = self._failures.get(address or "?")
            count = sum(1 for t in recent if t >= now - _FAILURE_WINDOW) if recent else 0
        if count <= _FREE_FAILURES:
            return 0.0
        return float(min(_MAX_DELAY, 0.25 * 2 ** (count - _FREE_FAILURES - 1)))

    # -- may they ------------------------------------------------------------------------

    def require(
        self, user: Principal, right: str, action: str, *, target: str | None = None
    ) -> None:
        if right in user.rights or user.admin:
            return
        error = MissingRight(user.name, right, action)
        self.denied(user, action, error, target=target)
        raise error

    def require_admin(self, user: Principal, action: str, *, target: str | None = None) -> None:
        self.require(user, ADMIN, action, target=target)

    def require_statement(
        self,
        user: Principal,
        kind: StatementKind,
        code: str,
        *,
        target: str | None = None,
        script: LexedScript | None = None,
    ) -> None:
        """The rights a statement needs: ``code`` for Python, ``sql`` for SQL (and ``streams``
        for stream statements), and no denied setting in a SET. Catalog listings are SQL.
        ``script``: ``code`` already lexed (``LexedScript.of(code)``), so it is not lexed again."""
        if kind is StatementKind.CATALOG:
            self.require(user, SQL, "read the catalog", target=target)
            return
        if kind is StatementKind.LOAD:  # SQL the engine writes; the table rules decide
            self.require(user, SQL, "load a file into a table", target=target)
            return
        if kind is not StatementKind.SQL:
            self.require(user, CODE, "run Python code", target=target)
            return
        self.require(user, SQL, "run SQL", target=target)
        self.check_sql(user, code, target=target, script=script)

    def check_sql(
        self,
        user: Principal,
        code: str,
        *,
        target: str | None = None,
        where: str | None = None,
        script: LexedScript | None = None,
    ) -> None:
        """What SQL text asks beyond running SQL: ``streams`` for stream statements, and no
        denied setting in a ``SET key=value``. ``script``: ``code`` already lexed."""
        if user.admin:
            return
        needs = _sql_needs(code, script)
        if needs.streams:
            self.require(user, STREAMS, "start or stop streams", target=target)
        self.check_conf(user, dict.fromkeys(needs.settings, ""), target=target, where=where)

    def check_sql_settings(
        self,
        user: Principal,
        code: str,
        *,
        target: str | None = None,
        where: str | None = None,
        script: LexedScript | None = None,
    ) -> None:
        """No denied setting in a ``SET key=value`` of SQL text the gateway wrote around the
        user's (a deployed job's steps: its stream statements are the gateway's).
        ``script``: ``code`` already lexed."""
        if user.admin:
            return
        settings = _sql_needs(code, script).settings
        self.check_conf(user, dict.fromkeys(settings, ""), target=target, where=where)

    def check_conf(
        self,
        user: Principal,
        conf: Mapping[str, str],
        *,
        target: str | None = None,
        where: str | None = None,
    ) -> None:
        """No denied Spark setting among ``conf``'s keys (admins may set anything); a denied
        one is audited and raised (``where``: where the user wrote it, for the message)."""
        if user.admin:
            return
        try:
            self.rules().check_settings(conf, where=where)
        except DeniedSetting as error:
            self.denied(user, "set " + error.params["key"], error, target=target)
            raise

    def denied_settings(self, user: Principal) -> list[str]:
        """The deny patterns of Spark settings that apply to ``user`` now (none for admins):
        for the engine, which alone reads a batch file's SQL, to check it with."""
        return [] if user.admin else list(self.rules().conf_deny)

    def check_impersonation(self, user: Principal, proxy_user: str, *, field: str) -> Principal:
        if user.admin or user.impersonator:
            self.audit(user, "impersonate", "ok", target=f"user:{proxy_user}")
            return self.as_user(user, proxy_user)
        error = Forbidden(
            f"{field}: user {user.name} may not act for another user; only users listed as "
            "impersonators in the access rules may.",
            field=field,
        )
        self.denied(user, "impersonate", error, target=f"user:{proxy_user}")
        raise error

    def check_session_limit(self, user: Principal) -> None:
        limit = self.rules().sessions_per_user
        if limit is None or user.admin:
            return
        kinds = [SessionKind.INTERACTIVE, SessionKind.BATCH]
        if self.store.sessions.count_active(user.name, kinds) >= limit:
            error = LimitExceeded(
                f"User {user.name} has {limit} active sessions, the limit "
                "(sessions_per_user); end one first.",
                limit=limit,
            )
            self.denied(user, "session.create", error)
            raise error

    def check_query_limit(self, user: Principal) -> None:
        limit = self.rules().running_queries_per_user
        if limit is None or user.admin:
            return
        if self.store.statements.count_unfinished(user.name) >= limit:
            error = LimitExceeded(
                f"User {user.name} has {limit} queries waiting or running, the limit "
                "(running_queries_per_user); wait for one to finish.",
                limit=limit,
            )
            self.denied(user, "query.submit", error)
            raise error

    def share_key(self, user: Principal, session_tag: str) -> str | None:
        """Which engine sessions of this user may share (SPARKGATE_ENGINE_SHARE_LEVEL)."""
        return share_key(self.settings.share_level, user.name, user.groups, session_tag)

    # -- what they did -------------------------------------------------------------------

    def audit(
        self,
        user: Principal | None,
        action: str,
        outcome: str,
        *,
        target: str | None = None,
        detail: dict[str, Any] | None = None,
        address: str | None = None,
        conn: Connection | None = None,
    ) -> None:
        """Record what a user did. With ``conn``, in the transaction that does it (one round
        trip, and the event commits or rolls back with the action); else on its own, where a
        failure is logged: the audit must never turn a done action into an error."""
        add = partial(
            self.store.audit.add,
            action,
            outcome,
            now=self.clock(),
            user=user.name if user is not None else None,
            address=address or (user.address if user is not None else None),
            target=target,
            detail=detail,
        )
        if conn is not None:
            add(conn=conn)
            return
        try:
            add()
        except Exception:
            log.exception("could not record audit event %s %s", action, outcome)

    def denied(
        self, user: Principal, action: str, error: SparkgateError, *, target: str | None = None
    ) -> None:
        self.audit(user, action, "denied", target=target, detail=error.to_dict())


def _sql_needs(code: str, script: LexedScript | None) -> SqlNeeds:
    if script is None:
        return sql_needs(code)
    # Checking one text and running another would let anything through: refuse loudly.
    if script.text != code:
        raise ValueError("the lexed script given is not of the SQL text being checked")
    return sql_needs(script)


def _claimed(authorization: str) -> dict[str, Any]:
    """What a failed login claimed to be, for the audit: the scheme and user name, never the
    secret."""
    scheme, _, value = authorization.strip().partition(" ")
    detail: dict[str, Any] = {"scheme": scheme.lower()}
    if scheme.lower() == "basic":
        with contextlib.suppress(binascii.Error, UnicodeDecodeError):
            detail["user"] = base64.b64decode(value.strip()).decode().partition(":")[0][:255]
    return detail
