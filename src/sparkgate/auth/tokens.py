"""Personal access tokens: ``sgp_`` and 43 random characters; the store keeps a SHA-256.

A token is random enough that a plain hash is safe to store (no salt or slow hash needed:
there is no dictionary to attack), and one indexed lookup verifies it.
"""

from __future__ import annotations

import hashlib
import secrets

from sparkgate.auth.principal import Identity
from sparkgate.store import Store
from sparkgate.store.tokens import TokenRecord

PREFIX = "sgp_"
_TOUCH_EVERY = 60.0  # last_used_at is written at most this often per token


def new_secret() -> str:
    return PREFIX + secrets.token_urlsafe(32)


def secret_hash(secret: str) -> str:
    return hashlib.sha256(secret.encode()).hexdigest()


def looks_like_token(value: str) -> bool:
    return value.startswith(PREFIX) and len(value) > len(PREFIX) + 20


def create(
    store: Store, owner: str, *, now: float, name: str | None, expires_in: float | None
) -> tuple[TokenRecord, str]:
    secret = new_secret()
    record = store.tokens.add(
        owner,
        secret_hash(secret),
        secret[: len(PREFIX) + 6],
        now=now,
        name=name,
        expires_at=now + expires_in if expires_in else None,
    )
    return record, secret


def verify(store: Store, secret: str, *, now: float, user: str | None = None) -> Identity | None:
    """The token's owner, if the token exists, is not revoked or expired, and (when a user
    name came with it, as in Basic auth) belongs to that user."""
    if not looks_like_token(secret):
        return None
    record = store.tokens.find_by_hash(secret_hash(secret))
    if record is None or not record.usable(now):
        return None
    if user is not None and user != record.owner:
        return None
    if record.last_used_at is None or now - record.last_used_at > _TOUCH_EVERY:
        store.tokens.touch(record.id, now=now)
    return Identity(record.owner, via="token")
