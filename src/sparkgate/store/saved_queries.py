"""Saved queries: SQL kept under a name, private to its owner or shared with a group.

Who sees which is the service's decision (``service/saved_queries.py``); the store filters by
what it is told: the viewer and their groups, an owner, a search text.

record = store.saved_queries.add("bob", "daily revenue", "SELECT ...", now=time.time())
page = store.saved_queries.list_page(viewer="bob", groups={"analysts"}, search="revenue")
"""

from __future__ import annotations

import math
from collections.abc import Collection, Mapping
from dataclasses import dataclass, field
from typing import Any

import sqlalchemy as sa
from sqlalchemy.engine import Connection

from sparkgate.errors import Conflict, InvalidRequest, NotFound
from sparkgate.recorded import ErrorCode
from sparkgate.store.database import Database
from sparkgate.store.records import FIRST_PAGE, Page, Window
from sparkgate.store.schema import ID_MAX, saved_queries


class SavedQueryNotFound(NotFound):
    code = ErrorCode.SAVED_QUERY_NOT_FOUND

    def __init__(self, saved_id: int) -> None:
        super().__init__(f"Saved query {saved_id} does not exist.", saved_query_id=saved_id)


class SavedQueryExists(Conflict):
    code = ErrorCode.SAVED_QUERY_EXISTS

    def __init__(self, owner: str, name: str) -> None:
        super().__init__(
            f"{owner} already has a saved query named {name!r}; names are unique per owner. "
            "Choose another name, or change that one (PUT /v1/saved-queries/{id}).",
            owner=owner,
            name=name,
        )


@dataclass(frozen=True)
class SavedQueryRecord:
    id: int
    owner: str
    name: str
    sql: str
    description: str | None
    group_name: str | None  # None: private to its owner
    created_at: float
    updated_at: float
    tags: dict[str, str] = field(default_factory=dict)

    @classmethod
    def from_row(cls, row: Mapping[Any, Any]) -> SavedQueryRecord:
        return cls(**{**row, "tags": dict(row["tags"] or {})})

    @property
    def cursor(self) -> str:
        """The ``after`` that reads the rows past this one in a list (newest change first):
        its change time (``repr`` of a float reads back exactly) and id, which breaks ties."""
        return f"{self.updated_at!r}:{self.id}"


@dataclass(frozen=True)
class SavedQueryChanges:
    """What a change sets; None leaves a field as it is, except ``group_name`` and
    ``description``, which are set when named in ``given`` (to None: made private, cleared)."""

    name: str | None = None
    sql: str | None = None
    description: str | None = None
    group_name: str | None = None
    tags: Mapping[str, str] | None = None
    given: frozenset[str] = frozenset()

    def values(self) -> dict[str, Any]:
        values: dict[str, Any] = {}
        for key in ("name", "sql", "tags", "description", "group_name"):
            value = getattr(self, key)
            if value is not None or (key in ("description", "group_name") and key in self.given):
                values[key] = dict(value) if key == "tags" and value is not None else value
        return values


class SavedQueries:
    def __init__(self, db: Database) -> None:
        self._db = db

    def add(
        self,
        owner: str,
        name: str,
        sql: str,
        *,
        now: float,
        description: str | None = None,
        group_name: str | None = None,
        tags: Mapping[str, str] | None = None,
        conn: Connection | None = None,
    ) -> SavedQueryRecord:
        """Keep ``sql`` as ``owner``'s ``name``; ``SavedQueryExists`` when they have one of that
        name (the unique constraint decides, so two nodes saving at once cannot both win)."""
        stmt = (
            saved_queries.insert()
            .values(
                owner=owner,
                name=name,
                sql=sql,
                description=description,
                group_name=group_name,
                tags=dict(tags) if tags else None,
                created_at=now,
                updated_at=now,
            )
            .returning(*saved_queries.c)
        )
        with self._db.within(conn) as c:
            try:
                row = c.execute(stmt).mappings().one()
            except sa.exc.IntegrityError as exc:
                raise SavedQueryExists(owner, name) from exc
        return SavedQueryRecord.from_row(row)

    def get(self, saved_id: int) -> SavedQueryRecord:
        with self._db.read() as conn:
            row = (
                conn.execute(sa.select(saved_queries).where(saved_queries.c.id == saved_id))
                .mappings()
                .first()
            )
        if row is None:
            raise SavedQueryNotFound(saved_id)
        return SavedQueryRecord.from_row(row)

    def update(
        self,
        record: SavedQueryRecord,
        changes: SavedQueryChanges,
        *,
        now: float,
        conn: Connection | None = None,
    ) -> SavedQueryRecord:
        """Apply ``changes`` to ``record`` (its owner's; the caller checked): the record as
        changed; ``SavedQueryNotFound`` if it was deleted meanwhile, ``SavedQueryExists`` when
        the new name is another of the owner's."""
        stmt = (
            saved_queries.update()
            .where(saved_queries.c.id == record.id)
            .values(**changes.values(), updated_at=now)
            .returning(*saved_queries.c)
        )
        with self._db.within(conn) as c:
            try:
                row = c.execute(stmt).mappings().first()
            except sa.exc.IntegrityError as exc:
                raise SavedQueryExists(record.owner, changes.name or record.name) from exc
        if row is None:
            raise SavedQueryNotFound(record.id)
        return SavedQueryRecord.from_row(row)

    def delete(self, saved_id: int, *, conn: Connection | None = None) -> bool:
        """Delete a saved query; False when it was not there (deleted meanwhile)."""
        with self._db.within(conn) as c:
            deleted = c.execute(saved_queries.delete().where(saved_queries.c.id == saved_id))
        return deleted.rowcount == 1

    def list_page(
        self,
        *,
        viewer: str | None,
        groups: Collection[str] = (),
        owner: str | None = None,
        search: str | None = None,
        window: Window = FIRST_PAGE,
    ) -> Page[SavedQueryRecord]:
        """Saved queries, newest change first: ``viewer``'s own and those shared with one of
        ``groups`` (``viewer`` None: everyone's), only ``owner``'s when given, only those whose
        name or SQL holds ``search`` (any case). ``window.after`` is a record's ``cursor``."""
        where: list[sa.ColumnElement[bool]] = []
        if viewer is not None:
            seen = saved_queries.c.owner == viewer
            if groups:
                seen = sa.or_(seen, saved_queries.c.group_name.in_(sorted(groups)))
            where.append(seen)
        if owner is not None:
            where.append(saved_queries.c.owner == owner)
        if search:
            where.append(
                sa.or_(
                    saved_queries.c.name.icontains(search, autoescape=True),
                    saved_queries.c.sql.icontains(search, autoescape=True),
                )
            )
        counting = sa.select(sa.func.count()).select_from(saved_queries).where(*where)
        query = sa.select(saved_queries).where(*where)
        if window.after is not None:
            changed, saved_id = _parse_cursor(window.after)
            query = query.where(
                sa.or_(
                    saved_queries.c.updated_at < changed,
                    sa.and_(saved_queries.c.updated_at == changed, saved_queries.c.id < saved_id),
                )
            )
        query = query.order_by(saved_queries.c.updated_at.desc(), saved_queries.c.id.desc())
        with self._db.read() as conn:
            total = conn.execute(counting).scalar_one() if window.count else None
            rows = conn.execute(query.offset(window.offset).limit(window.limit + 1)).mappings()
            items = [SavedQueryRecord.from_row(row) for row in rows]
        more = len(items) > window.limit
        items = items[: window.limit]
        next_after = items[-1].cursor if more and items else None
        return Page(items, total, window.offset, window.limit, next_after)


def _parse_cursor(after: int | str) -> tuple[float, int]:
    changed, _, saved_id = str(after).partition(":")
    try:
        cursor = float(changed), int(saved_id)
    except ValueError:
        cursor = math.nan, -1
    if not math.isfinite(cursor[0]) or not 0 <= cursor[1] <= ID_MAX:
        raise InvalidRequest(
            f"after: {after!r} is not a cursor of this list; pass the `next` of a page.",
            field="after",
        )
    return cursor
