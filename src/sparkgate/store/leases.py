"""Leases: who holds a background duty (reaping dead engines, placing sessions, ...).

A lease is a row (name, owner, expires_at). The holder renews it well before it expires; when
the holder dies, the lease lapses and the next node to ask takes it. Every function takes
``now`` so tests can move time without sleeping.
"""

from __future__ import annotations

import sqlalchemy as sa
from sqlalchemy.exc import IntegrityError

from sparkgate.store.database import Database
from sparkgate.store.records import LeaseRecord
from sparkgate.store.schema import leases

_T = leases.c.expires_at.type
# A round of duties takes or renews its leases, and the deployments duty reads one: built
# once, their values bound per call (as the statement path's are). The bound names differ
# from the columns', which SQLAlchemy keeps for an UPDATE's own SET values.
_TAKE_MANY = (
    leases.update()
    .where(leases.c.name.in_(sa.bindparam("names", expanding=True)))
    .where(
        sa.or_(
            leases.c.owner == sa.bindparam("holder"),
            leases.c.expires_at < sa.bindparam("at", type_=_T),
        )
    )
    .values(
        owner=sa.bindparam("holder"),
        expires_at=sa.bindparam("until", type_=_T),
        acquired_at=sa.case(
            (leases.c.owner == sa.bindparam("holder"), leases.c.acquired_at),
            else_=sa.bindparam("at", type_=_T),
        ),
    )
    .returning(leases.c.name)
)
_NAMES_OF = sa.select(leases.c.name).where(leases.c.name.in_(sa.bindparam("names", expanding=True)))
_BY_NAME = sa.select(leases).where(leases.c.name == sa.bindparam("name"))


class Leases:
    def __init__(self, db: Database) -> None:
        self._db = db

    def acquire(self, name: str, owner: str, *, now: float, ttl: float) -> bool:
        """Take the lease if it is free, expired, or already ours; True if we hold it now."""
        taken = (
            leases.update()
            .where(leases.c.name == name)
            .where(sa.or_(leases.c.owner == owner, leases.c.expires_at < now))
            .values(
                owner=owner,
                expires_at=now + ttl,
                acquired_at=sa.case((leases.c.owner == owner, leases.c.acquired_at), else_=now),
            )
        )
        with self._db.begin() as conn:
            if conn.execute(taken).rowcount == 1:
                return True
            exists = conn.execute(sa.select(leases.c.name).where(leases.c.name == name)).first()
        if exists:
            return False
        try:
            with self._db.begin() as conn:
                conn.execute(
                    leases.insert().values(
                        name=name, owner=owner, acquired_at=now, expires_at=now + ttl
                    )
                )
        except IntegrityError:
            return False  # another node inserted it first
        return True

    def acquire_many(self, names: list[str], owner: str, *, now: float, ttl: float) -> set[str]:
        """``acquire`` for several leases in one transaction (a node's round of duties costs
        one write, not one per duty); the names held now."""
        values = {"names": names, "holder": owner, "at": now, "until": now + ttl}
        with self._db.begin() as conn:
            held = {row.name for row in conn.execute(_TAKE_MANY, values)}
            existing = {row.name for row in conn.execute(_NAMES_OF, {"names": names})}
        missing = [name for name in names if name not in existing]
        for name in missing:  # first round ever: rows to create (a race decides who holds)
            if self.acquire(name, owner, now=now, ttl=ttl):
                held.add(name)
        return held

    def renew(self, name: str, owner: str, *, now: float, ttl: float) -> bool:
        """Extend our lease; False means someone else holds it now: stop the duty."""
        stmt = (
            leases.update()
            .where(leases.c.name == name, leases.c.owner == owner)
            .values(expires_at=now + ttl)
        )
        with self._db.begin() as conn:
            return conn.execute(stmt).rowcount == 1

    def release(self, name: str, owner: str) -> None:
        with self._db.begin() as conn:
            conn.execute(leases.delete().where(leases.c.name == name, leases.c.owner == owner))

    def get(self, name: str) -> LeaseRecord | None:
        with self._db.read() as conn:
            row = conn.execute(_BY_NAME, {"name": name}).mappings().first()
        return None if row is None else LeaseRecord(**row)

    def reap_expired(self, *, now: float) -> list[str]:
        """Delete lapsed leases; the names removed."""
        with self._db.begin() as conn:
            rows = conn.execute(
                leases.delete().where(leases.c.expires_at < now).returning(leases.c.name)
            )
            return sorted(row.name for row in rows)
