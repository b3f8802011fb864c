"""Who may see what: the one rule every door's reads, lists and changes go through.

A user sees what they own; an impersonator also sees what it created for another user
(``created_by``), by id and in lists, for as long as it is an impersonator; admins see
everything. Whatever a user may not see is reported exactly as an id that does not exist, so ids
of other users' objects tell nothing.
"""

from __future__ import annotations

from dataclasses import dataclass

from sparkgate.auth.principal import Principal
from sparkgate.store.records import SessionRecord


@dataclass(frozen=True)
class Scope:
    """Whose rows a read may return: everyone's when neither is set; else those ``owner``
    owns and, with ``creator``, those ``creator`` made for another user (a session's
    ``attributes.created_by``: an impersonator's). Lists filter by it in SQL (the store's
    ``owner=``/``creator=``), by-id reads check a row with ``admits``: the same rule."""

    owner: str | None = None
    creator: str | None = None

    def admits(self, owner: str | None, created_by: object = None) -> bool:
        if self.owner is None and self.creator is None:
            return True
        return (self.owner is not None and owner == self.owner) or (
            self.creator is not None and created_by == self.creator
        )


def scope(user: Principal, requested: str | None = None) -> Scope:
    """What ``user`` may see: everyone's (admins; or ``?owner=``'s), else their own and, for
    an impersonator, what it made for others. Only impersonators get the second part: it is
    the one a list cannot read through the owner index."""
    if user.admin:
        return Scope(owner=requested)
    return Scope(owner=user.name, creator=user.name if user.impersonator else None)


def sees(user: Principal, owner: str | None, *, created_by: object = None) -> bool:
    """Whether ``user`` may see an object owned by ``owner`` (made by ``created_by``)."""
    return scope(user).admits(owner, created_by)


def sees_session(user: Principal, session: SessionRecord) -> bool:
    return sees(user, session.owner, created_by=session.attributes.created_by)


def list_owner(user: Principal, requested: str | None = None) -> str | None:
    """The owner a list of things no one makes for another (tokens, stream jobs,
    deployments) is limited to: one's own, or for admins ``?owner=`` (or everyone's)."""
    return scope(user, requested).owner
