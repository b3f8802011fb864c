"""LDAP users: a simple bind as the user, then (optionally) the groups whose members include them.

One connection per verification, closed at once; verified credentials are cached a layer up
(``auth_cache_ttl``), so a bind is not paid on every request. A server that cannot be reached
raises ConfigurationError (503) instead of answering "wrong password" for everyone.
"""

from __future__ import annotations

import contextlib
import ssl
import warnings
from typing import Any

from sparkgate.auth.principal import Identity
from sparkgate.errors import ConfigurationError
from sparkgate.settings import Settings

# ldap3 2.9.1 (its latest) imports names that pyasn1 >= 0.6 deprecates, once, at import.
with warnings.catch_warnings():
    warnings.simplefilter("ignore", DeprecationWarning)
    from ldap3 import BASE, NONE, SUBTREE, Connection, Server, Tls
    from ldap3.core.exceptions import (
        LDAPCommunicationError,
        LDAPException,
        LDAPMaximumRetriesError,
        LDAPResponseTimeoutError,
    )
    from ldap3.utils.conv import escape_filter_chars
    from ldap3.utils.dn import escape_rdn

CONNECT_TIMEOUT = 5.0
RECEIVE_TIMEOUT = 5  # whole seconds: ldap3 packs it into SO_RCVTIMEO as an integer

SUCCESS = 0
SIZE_LIMIT_EXCEEDED = 4  # some groups came back; better than none

# The server did not answer, or not in time.
_UNREACHABLE = (LDAPCommunicationError, LDAPResponseTimeoutError, LDAPMaximumRetriesError)


class LdapAuthenticator:
    def __init__(self, settings: Settings) -> None:
        if not settings.auth_ldap_url:
            raise ConfigurationError(
                "auth=ldap needs the server's address: set SPARKGATE_AUTH_LDAP_URL "
                "(ldap://host:389 or ldaps://host:636).",
                setting="SPARKGATE_AUTH_LDAP_URL",
            )
        if not settings.auth_ldap_user_dn or "{user}" not in settings.auth_ldap_user_dn:
            raise ConfigurationError(
                "auth=ldap needs a user DN template with {user}: set SPARKGATE_AUTH_LDAP_USER_DN "
                f"(e.g. uid={{user}},ou=people,dc=example,dc=org), got "
                f"{settings.auth_ldap_user_dn!r}.",
                setting="SPARKGATE_AUTH_LDAP_USER_DN",
            )
        if not settings.auth_ldap_url.lower().startswith(("ldap://", "ldaps://")):
            raise ConfigurationError(
                "SPARKGATE_AUTH_LDAP_URL must start with ldap:// or ldaps://, "
                f"got {settings.auth_ldap_url!r}.",
                setting="SPARKGATE_AUTH_LDAP_URL",
            )
        self.url = settings.auth_ldap_url
        self.user_dn = settings.auth_ldap_user_dn
        self.search_base = settings.auth_ldap_search_base or None
        self.group_filter = settings.auth_ldap_group_filter
        self.group_attribute = settings.auth_ldap_group_attribute
        # The attribute the user's name is in ("uid" in uid={user},ou=people,...).
        self.name_attribute = self.user_dn.partition("=")[0].strip()

    def dn_for(self, name: str) -> str:
        return self.user_dn.replace("{user}", escape_rdn(name))

    def verify(self, name: str, password: str) -> Identity | None:
        if not name or not password:
            # An empty password is an unauthenticated bind (RFC 4513 5.1.2): servers "accept" it.
            return None
        if name != name.strip():
            return None  # " alice" binds as alice (spaces are insignificant in LDAP names)
        dn = self.dn_for(name)
        # A new Server too: ldap3 keeps per-address availability and DNS state on it.
        # ldap3 does not check the server's certificate unless asked: passwords go over this.
        server = Server(
            self.url,
            get_info=NONE,
            connect_timeout=CONNECT_TIMEOUT,
            tls=Tls(validate=ssl.CERT_REQUIRED),
        )
        connection = Connection(
            server,
            user=dn,
            password=password,
            receive_timeout=RECEIVE_TIMEOUT,
            raise_exceptions=False,
        )
        try:
            if not connection.bind():
                return None  # invalidCredentials, invalidDNSyntax, ...: not this user
            name = self._stored_name(connection, name, dn)
            groups = self._groups(connection, name, dn) if self.search_base else frozenset()
        except _UNREACHABLE as exc:
            raise ConfigurationError(
                f"The LDAP server {self.url} cannot be reached: {_reason(exc)}",
                url=self.url,
            ) from exc
        finally:
            _close(connection)
        return Identity(name, groups=groups, via="ldap")

    def _stored_name(self, connection: Any, name: str, dn: str) -> str:
        """The name as the directory spells it: "ALICE" binds as alice and must be alice here.

        LDAP compares names ignoring case and extra spaces; sparkgate's owners and access rules
        do not. Where the user may not read their own entry, the name stays as typed.
        """
        try:
            connection.search(
                dn, "(objectClass=*)", search_scope=BASE, attributes=[self.name_attribute]
            )
        except _UNREACHABLE:
            raise
        except LDAPException:
            return name
        wanted = " ".join(name.split()).casefold()
        for entry in connection.response or []:
            if entry.get("type") != "searchResEntry":
                continue
            for value in _texts(entry.get("attributes", {}).get(self.name_attribute)):
                if " ".join(value.split()).casefold() == wanted:
                    return value
        return name

    def _groups(self, connection: Any, name: str, dn: str) -> frozenset[str]:
        query = self.group_filter.replace("{dn}", escape_filter_chars(dn)).replace(
            "{user}", escape_filter_chars(name)
        )
        try:
            connection.search(
                self.search_base,
                query,
                search_scope=SUBTREE,
                attributes=[self.group_attribute],
            )
        except _UNREACHABLE:
            raise
        except LDAPException as exc:  # the filter itself is malformed
            raise ConfigurationError(
                f"SPARKGATE_AUTH_LDAP_GROUP_FILTER {self.group_filter!r} is not a valid LDAP "
                f"filter: {_reason(exc)}",
                setting="SPARKGATE_AUTH_LDAP_GROUP_FILTER",
            ) from exc
        result = connection.result or {}
        if result.get("result") not in (SUCCESS, SIZE_LIMIT_EXCEEDED):
            detail = " ".join(str(result.get(k) or "") for k in ("description", "message"))
            raise ConfigurationError(
                f"Searching groups under SPARKGATE_AUTH_LDAP_SEARCH_BASE {self.search_base!r} on "
                f"{self.url} failed: {detail.strip()}.",
                setting="SPARKGATE_AUTH_LDAP_SEARCH_BASE",
            )
        groups: set[str] = set()
        for entry in connection.response or []:
            if entry.get("type") == "searchResEntry":  # not a referral
                groups.update(_texts(entry.get("attributes", {}).get(self.group_attribute)))
        return frozenset(groups)


def _texts(values: Any) -> list[str]:
    if values is None:
        return []
    if isinstance(values, str | bytes):
        values = [values]
    texts = [v.decode(errors="replace") if isinstance(v, bytes) else str(v) for v in values]
    return [t for t in texts if t]


def _close(connection: Any) -> None:
    with contextlib.suppress(LDAPException):
        connection.unbind()
    sock = getattr(connection, "socket", None)
    if sock is not None:  # ldap3 leaves the socket of a failed connect open
        sock.close()


def _reason(exc: BaseException) -> str:
    """One line from an ldap3 error; "unable to open socket" nests one error per address."""
    args = exc.args
    if len(args) == 2 and isinstance(args[1], list) and args[1]:
        first = args[1][0]
        if isinstance(first, tuple) and first and isinstance(first[0], BaseException):
            return _reason(first[0])
    text = " ".join(str(exc).split())
    return text or type(exc).__name__
