"""Saved queries, for every door: who sees one, who may change it, and the audit of changes.

A saved query is its owner's, private, or shared with one group the owner is in (groups come
with each request's credentials). Its owner and the group's members see it, admins see all;
anyone else meets it as an id that does not exist. Only its owner changes it; its owner or an
admin deletes it. A group member who is not the owner is refused (403): they see it, so its
existence is no secret to them.

saved = service.saved_queries.add(user=bob, name="daily revenue", sql="SELECT ...",
                                  group="analysts")
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from sparkgate.auth.principal import Principal
from sparkgate.auth.users import Users
from sparkgate.errors import Forbidden
from sparkgate.store import Store
from sparkgate.store.records import Page, Window
from sparkgate.store.saved_queries import SavedQueryChanges, SavedQueryNotFound, SavedQueryRecord


@dataclass
class SavedQueries:
    store: Store
    users: Users

    def list_page(
        self,
        *,
        user: Principal,
        owner: str | None = None,
        search: str | None = None,
        window: Window = Window(),
    ) -> Page[SavedQueryRecord]:
        """The user's saved queries and those shared with their groups, newest change first;
        ``owner``: only that user's (admins: whoever's, shared or not)."""
        if user.admin and owner is not None:
            return self.store.saved_queries.list_page(
                viewer=None, owner=owner, search=search, window=window
            )
        return self.store.saved_queries.list_page(
            viewer=user.name, groups=user.groups, owner=owner, search=search, window=window
        )

    def get(self, saved_id: int, *, user: Principal) -> SavedQueryRecord:
        record = self.store.saved_queries.get(saved_id)
        if not _sees(user, record):
            raise SavedQueryNotFound(saved_id)  # another user's: as unknown as any
        return record

    def add(
        self,
        *,
        user: Principal,
        name: str,
        sql: str,
        group: str | None = None,
        description: str | None = None,
        tags: Mapping[str, str] | None = None,
    ) -> SavedQueryRecord:
        """Save ``sql`` as the user's ``name`` (``SavedQueryExists`` if they have one), private
        or shared with ``group``, which must be one of theirs (admins: any)."""
        self._check_group(user, group, "saved_query.create", None)
        with self.store.db.begin() as conn:
            record = self.store.saved_queries.add(
                user.name,
                name,
                sql,
                now=self.users.clock(),
                description=description,
                group_name=group,
                tags=tags,
                conn=conn,
            )
            self.users.audit(
                user,
                "saved_query.create",
                "ok",
                target=_target(record.id),
                detail={"name": name, "group": group},
                conn=conn,
            )
        return record

    def update(
        self, saved_id: int, changes: SavedQueryChanges, *, user: Principal
    ) -> SavedQueryRecord:
        """Change a saved query: its owner only."""
        record = self.get(saved_id, user=user)
        if record.owner != user.name:
            self._refuse(user, "saved_query.update", record, "change")
        if "group_name" in changes.given or changes.group_name is not None:
            self._check_group(user, changes.group_name, "saved_query.update", record)
        with self.store.db.begin() as conn:
            changed = self.store.saved_queries.update(
                record, changes, now=self.users.clock(), conn=conn
            )
            self.users.audit(
                user,
                "saved_query.update",
                "ok",
                target=_target(record.id),
                detail={"changed": sorted(changes.values())},
                conn=conn,
            )
        return changed

    def delete(self, saved_id: int, *, user: Principal) -> SavedQueryRecord:
        """Delete a saved query: its owner, or an admin."""
        record = self.get(saved_id, user=user)
        if record.owner != user.name and not user.admin:
            self._refuse(user, "saved_query.delete", record, "delete")
        with self.store.db.begin() as conn:
            if not self.store.saved_queries.delete(record.id, conn=conn):
                raise SavedQueryNotFound(saved_id)
            self.users.audit(
                user,
                "saved_query.delete",
                "ok",
                target=_target(record.id),
                detail={"name": record.name, "owner": record.owner},
                conn=conn,
            )
        return record

    def _check_group(
        self, user: Principal, group: str | None, action: str, record: SavedQueryRecord | None
    ) -> None:
        if group is None or group in user.groups or user.admin:
            return
        target = None if record is None else _target(record.id)
        self.users.audit(user, action, "denied", target=target, detail={"group": group})
        raise Forbidden(
            f"You are not a member of group {group!r}, so you cannot share a query with it. "
            "Share it with one of your groups (GET /v1/whoami lists them), or keep it private "
            "(group: null).",
            group=group,
        )

    def _refuse(self, user: Principal, action: str, record: SavedQueryRecord, verb: str) -> None:
        self.users.audit(user, action, "denied", target=_target(record.id))
        raise Forbidden(
            f"Saved query {record.id} is {record.owner}'s; only its owner may {verb} it. "
            "Save a copy of your own instead (POST /v1/saved-queries).",
            saved_query_id=record.id,
            owner=record.owner,
        )


def _sees(user: Principal, record: SavedQueryRecord) -> bool:
    return (
        user.admin
        or record.owner == user.name
        or (record.group_name is not None and record.group_name in user.groups)
    )


def _target(saved_id: int) -> str:
    return f"saved_query:{saved_id}"
