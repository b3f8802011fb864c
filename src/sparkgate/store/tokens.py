"""Personal access tokens: only a hash of each secret is stored."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import sqlalchemy as sa

from sparkgate.errors import NotFound
from sparkgate.recorded import ErrorCode
from sparkgate.store.database import Database
from sparkgate.store.schema import tokens


class TokenNotFound(NotFound):
    code = ErrorCode.TOKEN_NOT_FOUND

    def __init__(self, token_id: int) -> None:
        super().__init__(f"Token {token_id} does not exist.", token_id=token_id)


@dataclass(frozen=True)
class TokenRecord:
    id: int
    owner: str
    name: str | None
    secret_hash: str
    prefix: str
    created_at: float
    expires_at: float | None
    last_used_at: float | None
    revoked_at: float | None

    def usable(self, now: float) -> bool:
        return self.revoked_at is None and (self.expires_at is None or self.expires_at > now)


class Tokens:
    def __init__(self, db: Database) -> None:
        self._db = db

    def add(
        self,
        owner: str,
        secret_hash: str,
        prefix: str,
        *,
        now: float,
        name: str | None = None,
        expires_at: float | None = None,
    ) -> TokenRecord:
        stmt = (
            tokens.insert()
            .values(
                owner=owner,
                name=name,
                secret_hash=secret_hash,
                prefix=prefix,
                created_at=now,
                expires_at=expires_at,
            )
            .returning(*tokens.c)
        )
        with self._db.begin() as conn:
            return TokenRecord(**conn.execute(stmt).mappings().one())

    def find_by_hash(self, secret_hash: str) -> TokenRecord | None:
        with self._db.read() as conn:
            row = (
                conn.execute(sa.select(tokens).where(tokens.c.secret_hash == secret_hash))
                .mappings()
                .first()
            )
        return None if row is None else TokenRecord(**row)

    def get(self, token_id: int) -> TokenRecord:
        with self._db.read() as conn:
            row = conn.execute(sa.select(tokens).where(tokens.c.id == token_id)).mappings().first()
        if row is None:
            raise TokenNotFound(token_id)
        return TokenRecord(**row)

    def list(self, *, owner: str | None = None) -> list[TokenRecord]:
        query = sa.select(tokens).order_by(tokens.c.id)
        if owner is not None:
            query = query.where(tokens.c.owner == owner)
        with self._db.read() as conn:
            return [TokenRecord(**r) for r in conn.execute(query).mappings()]

    def touch(self, token_id: int, *, now: float) -> None:
        with self._db.begin() as conn:
            conn.execute(tokens.update().where(tokens.c.id == token_id).values(last_used_at=now))

    def revoke(self, token_id: int, *, now: float) -> TokenRecord:
        with self._db.begin() as conn:
            conn.execute(
                tokens.update()
                .where(tokens.c.id == token_id, tokens.c.revoked_at.is_(None))
                .values(revoked_at=now)
            )
        return self.get(token_id)


def token_values(record: TokenRecord) -> dict[str, Any]:
    return {k: v for k, v in record.__dict__.items() if k != "secret_hash"}
