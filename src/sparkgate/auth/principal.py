"""Who a request comes from, once authenticated."""

from __future__ import annotations

from dataclasses import dataclass, field

ANONYMOUS = "anonymous"


@dataclass(frozen=True)
class Identity:
    """What an authenticator vouches for: a user name and the groups it knows of."""

    name: str
    groups: frozenset[str] = field(default_factory=frozenset)
    via: str = "none"  # password | ldap | jwt | token | none


@dataclass(frozen=True)
class Principal:
    """An authenticated user with what the access rules give them."""

    name: str
    groups: frozenset[str] = field(default_factory=frozenset)
    admin: bool = False
    rights: frozenset[str] = field(default_factory=frozenset)
    via: str = "none"
    address: str | None = None  # the client's address, for the audit
    # Listed as an impersonator: may act for other users (and see what it made for them; what
    # anyone may see is ``service/visibility.py``'s).
    impersonator: bool = False
    # The door the request came through (rest, cli, dashboard, livy, hive2, connect): the
    # sessions it opens say it, and the access history names it. None: not a door's request.
    door: str | None = None


def share_key(
    level: str, name: str, groups: frozenset[str] = frozenset(), tag: str = ""
) -> str | None:
    """Which engines a session of user ``name`` may share (SPARKGATE_ENGINE_SHARE_LEVEL): one
    user's (``user:bob``), one group's, anyone's (None, level ``server``), or its own
    (``session:<tag>``, level ``connection``). Without groups or a tag, the user's."""
    if level == "server":
        return None
    if level == "group" and groups:
        return f"group:{min(groups)}"
    if level == "connection" and tag:
        return f"session:{tag}"
    return f"user:{name}"
