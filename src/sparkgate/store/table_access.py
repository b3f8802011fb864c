"""Owners and grants of tables and views: what ``GRANT``/``REVOKE`` write and what the engine's
policy (sparkgate.engine.authz) reads. A table's rows go with it when it is dropped and move
with it when it is renamed; creating a table makes its creator the owner and clears what an
earlier table of that name left."""

from __future__ import annotations

from dataclasses import dataclass

import sqlalchemy as sa
from sqlalchemy.engine import Connection

from sparkgate.store.database import Database
from sparkgate.store.schema import table_grants, table_owners


@dataclass(frozen=True)
class TableName:
    catalog: str
    schema: str
    table: str

    @classmethod
    def of(cls, catalog: str, schema: str, table: str) -> TableName:
        return cls(catalog.lower(), schema.lower(), table.lower())

    @property
    def dotted(self) -> str:
        return f"{self.catalog}.{self.schema}.{self.table}"


@dataclass(frozen=True)
class GrantRecord:
    grantee_kind: str  # "user" | "group"
    grantee: str
    privilege: str
    granted_by: str
    granted_at: float


@dataclass(frozen=True)
class TableFacts:
    owner: str | None
    grants: list[GrantRecord]

    def as_triples(self) -> list[tuple[str, str, str]]:
        """(grantee kind, grantee, privilege) of each grant, as the rules take them."""
        return [(g.grantee_kind, g.grantee, g.privilege) for g in self.grants]


def _where(table: sa.Table, name: TableName) -> sa.ColumnElement[bool]:
    return sa.and_(
        table.c.catalog == name.catalog,
        table.c.schema_name == name.schema,
        table.c.table_name == name.table,
    )


class TableAccess:
    def __init__(self, db: Database) -> None:
        self._db = db

    def owner(self, name: TableName) -> str | None:
        with self._db.read() as conn:
            return self._owner(conn, name)

    def grants(self, name: TableName) -> list[GrantRecord]:
        with self._db.read() as conn:
            return self._grants(conn, name)

    def facts(self, name: TableName) -> TableFacts:
        """The owner and the grants, in one read: what a decision about the table needs."""
        with self._db.read() as conn:
            return TableFacts(self._owner(conn, name), self._grants(conn, name))

    @staticmethod
    def _owner(conn: Connection, name: TableName) -> str | None:
        owner: str | None = conn.execute(
            sa.select(table_owners.c.owner).where(_where(table_owners, name))
        ).scalar_one_or_none()
        return owner

    @staticmethod
    def _grants(conn: Connection, name: TableName) -> list[GrantRecord]:
        rows = conn.execute(
            sa.select(
                table_grants.c.grantee_kind,
                table_grants.c.grantee,
                table_grants.c.privilege,
                table_grants.c.granted_by,
                table_grants.c.granted_at,
            )
            .where(_where(table_grants, name))
            .order_by(table_grants.c.grantee_kind, table_grants.c.grantee, table_grants.c.privilege)
        ).all()
        return [GrantRecord(**row._mapping) for row in rows]

    def schemas_of(self, catalog: str, user: str, groups: frozenset[str]) -> set[str]:
        """The schemas of ``catalog`` holding a table ``user`` owns or was granted something
        on (to them or one of ``groups``): schemas a listing shows them."""
        grantee = table_grants.c.grantee
        to_them = sa.or_(
            sa.and_(table_grants.c.grantee_kind == "user", grantee == user),
            sa.and_(table_grants.c.grantee_kind == "group", grantee.in_(sorted(groups))),
        )
        with self._db.read() as conn:
            owned: set[str] = set(
                conn.execute(
                    sa.select(table_owners.c.schema_name).where(
                        table_owners.c.catalog == catalog.lower(), table_owners.c.owner == user
                    )
                ).scalars()
            )
            granted: set[str] = set(
                conn.execute(
                    sa.select(table_grants.c.schema_name).where(
                        table_grants.c.catalog == catalog.lower(), to_them
                    )
                ).scalars()
            )
            return owned | granted

    def created(self, name: TableName, owner: str, *, now: float) -> None:
        with self._db.begin() as conn:
            self._forget(conn, name)
            conn.execute(
                table_owners.insert().values(
                    catalog=name.catalog,
                    schema_name=name.schema,
                    table_name=name.table,
                    owner=owner,
                    created_at=now,
                )
            )

    def dropped(self, name: TableName) -> None:
        with self._db.begin() as conn:
            self._forget(conn, name)

    def renamed(self, old: TableName, new: TableName) -> None:
        with self._db.begin() as conn:
            self._forget(conn, new)
            for table in (table_owners, table_grants):
                conn.execute(
                    table.update()
                    .where(_where(table, old))
                    .values(catalog=new.catalog, schema_name=new.schema, table_name=new.table)
                )

    def grant(
        self,
        name: TableName,
        kind: str,
        grantee: str,
        privileges: list[str],
        by: str,
        *,
        now: float,
    ) -> None:
        with self._db.begin() as conn:
            for privilege in privileges:
                conn.execute(
                    table_grants.delete().where(
                        _where(table_grants, name),
                        table_grants.c.grantee_kind == kind,
                        table_grants.c.grantee == grantee,
                        table_grants.c.privilege == privilege,
                    )
                )
                conn.execute(
                    table_grants.insert().values(
                        catalog=name.catalog,
                        schema_name=name.schema,
                        table_name=name.table,
                        grantee_kind=kind,
                        grantee=grantee,
                        privilege=privilege,
                        granted_by=by,
                        granted_at=now,
                    )
                )

    def revoke(self, name: TableName, kind: str, grantee: str, privileges: list[str]) -> int:
        with self._db.begin() as conn:
            result = conn.execute(
                table_grants.delete().where(
                    _where(table_grants, name),
                    table_grants.c.grantee_kind == kind,
                    table_grants.c.grantee == grantee,
                    table_grants.c.privilege.in_(privileges),
                )
            )
            return int(result.rowcount or 0)

    @staticmethod
    def _forget(conn: Connection, name: TableName) -> None:
        conn.execute(table_owners.delete().where(_where(table_owners, name)))
        conn.execute(table_grants.delete().where(_where(table_grants, name)))
