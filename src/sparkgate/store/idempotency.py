"""Idempotency keys: which query or session a user's submit with an ``Idempotency-Key`` made.

A key is the user's (``owner``): another user's same key is another key. The row is written
in the transaction that makes the query or session (``add(..., conn=)``), so both are there or
neither is; two requests racing with one key both try, and the primary key lets one win.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import sqlalchemy as sa
from sqlalchemy.engine import Connection

from sparkgate.store.database import Database
from sparkgate.store.schema import idempotency_keys


@dataclass(frozen=True)
class KeyClaim:
    """What a request with a key asks: its owner and key, which request it is (``"query"``,
    ``"session"``) and a fingerprint of its content."""

    owner: str
    key: str
    request: str
    fingerprint: str


@dataclass(frozen=True)
class KeyRecord:
    owner: str
    key: str
    request: str
    fingerprint: str
    session_id: int
    statement_id: int | None
    created_at: float

    @classmethod
    def from_row(cls, row: Any) -> KeyRecord:
        return cls(**{c.name: row._mapping[c.name] for c in idempotency_keys.columns})

    def answers(self, claim: KeyClaim) -> bool:
        """True if ``claim`` is the request this key was first used for."""
        return (self.request, self.fingerprint) == (claim.request, claim.fingerprint)


class IdempotencyKeys:
    def __init__(self, db: Database) -> None:
        self._db = db

    def add(
        self,
        claim: KeyClaim,
        *,
        session_id: int,
        statement_id: int | None = None,
        now: float,
        expired_before: float,
        conn: Connection,
    ) -> None:
        """Record what ``claim`` made, in the caller's transaction (the one that makes it). A
        row of the same key older than ``expired_before`` is replaced; a live one raises
        IntegrityError (another request took the key first: roll back, and read theirs).

        keys.add(claim, session_id=3, statement_id=40, now=now, expired_before=now - ttl,
                 conn=conn)
        """
        conn.execute(
            idempotency_keys.delete().where(
                idempotency_keys.c.owner == claim.owner,
                idempotency_keys.c.key == claim.key,
                idempotency_keys.c.created_at < expired_before,
            )
        )
        conn.execute(
            idempotency_keys.insert().values(
                owner=claim.owner,
                key=claim.key,
                request=claim.request,
                fingerprint=claim.fingerprint,
                session_id=session_id,
                statement_id=statement_id,
                created_at=now,
            )
        )

    def find(self, owner: str, key: str, *, since: float) -> KeyRecord | None:
        """The owner's key, if it was used since ``since`` (an older one has expired)."""
        query = sa.select(idempotency_keys).where(
            idempotency_keys.c.owner == owner,
            idempotency_keys.c.key == key,
            idempotency_keys.c.created_at >= since,
        )
        with self._db.read() as conn:
            row = conn.execute(query).first()
        return None if row is None else KeyRecord.from_row(row)

    def delete_expired(self, *, before: float) -> int:
        """Forget the keys used before ``before``; how many were forgotten."""
        stmt = idempotency_keys.delete().where(idempotency_keys.c.created_at < before)
        with self._db.begin() as conn:
            return conn.execute(stmt).rowcount or 0

    def available(self) -> bool:
        """True if the store's schema has the table (a node pinned to an older revision, as
        the release before it, has none: see ``Settings.store_revision``)."""
        with self._db.read() as conn:
            return sa.inspect(conn).has_table(idempotency_keys.name)
