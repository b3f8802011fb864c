"""Who may see what: the one rule every door's reads, lists and changes go through.

A user sees what they own; an impersonator also sees what it created for the user it acted
for (``created_by``); admins see everything. Whatever a user may not see is reported exactly as
an id that does not exist, so ids of other users' objects tell nothing.
"""

from __future__ import annotations

from sparkgate.auth.principal import Principal
from sparkgate.store.records import SessionRecord


def sees(user: Principal, owner: str | None, *, created_by: object = None) -> bool:
    """Whether ``user`` may see an object owned by ``owner`` (made by ``created_by``)."""
    return user.owns(owner) or (created_by is not None and created_by == user.name)


def sees_session(user: Principal, session: SessionRecord) -> bool:
    return sees(user, session.owner, created_by=session.attributes.get("created_by"))


def list_owner(user: Principal, requested: str | None = None) -> str | None:
    """The owner a list is limited to: one's own, or for admins ``?owner=`` (or everyone's).

    Lists show what a user owns: sessions an impersonator made for others are opened by id
    (``sees_session``), not listed among its own."""
    return user.owner_filter(requested)
