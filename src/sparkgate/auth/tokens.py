"""Personal access tokens: ``sgp_`` and 43 random characters; the store keeps a SHA-256.

A token is random enough that a plain hash is safe to store (no salt or slow hash needed:
there is no dictionary to attack), and one indexed lookup verifies it. A door whose clients
make many calls a second (Spark Connect) may keep what it read for a second
(:class:`RecentTokens`).
"""

from __future__ import annotations

import dataclasses
import hashlib
import secrets
import threading

from sparkgate.auth.principal import Identity
from sparkgate.store import Store
from sparkgate.store.tokens import TokenRecord

PREFIX = "sgp_"
_TOUCH_EVERY = 60.0  # last_used_at is written at most this often per token
RECENT_FOR = 1.0  # seconds a RecentTokens entry is used without reading the store again
_RECENT_MAX = 10_000


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


class RecentTokens:
    """Token records read from the store in the last ``ttl`` seconds, by the secret's hash.

    Spark Connect's client makes a call per answer it reads (a ``ReleaseExecute`` each), about
    nine for ``spark.range(1).collect()``: with this, a busy client costs the store one read a
    second instead of one a call. What a revocation changes is read again within ``ttl``, so a
    revoked token stops working at most that much later; expiry is checked against the time
    of each call, so an expired token stops at once. Only tokens that exist are kept: a wrong
    secret is looked up every time, and never passes.
    """

    def __init__(self, ttl: float = RECENT_FOR) -> None:
        self.ttl = ttl
        self._lock = threading.Lock()
        self._records: dict[str, tuple[float, TokenRecord]] = {}  # hash -> (read at, record)

    def get(self, hashed: str, *, now: float) -> TokenRecord | None:
        with self._lock:
            entry = self._records.get(hashed)
        # A clock that went back also reads again: an entry is never used beyond its second.
        if entry is None or not entry[0] <= now < entry[0] + self.ttl:
            return None
        return entry[1]

    def put(self, hashed: str, record: TokenRecord, *, now: float) -> None:
        with self._lock:
            if len(self._records) >= _RECENT_MAX:
                self._records.clear()
            self._records[hashed] = (now, record)

    def touched(self, hashed: str, *, now: float) -> None:
        """``last_used_at`` was written: the entry says so too (its age is unchanged)."""
        with self._lock:
            entry = self._records.get(hashed)
            if entry is not None:
                self._records[hashed] = (entry[0], dataclasses.replace(entry[1], last_used_at=now))


def verify(
    store: Store,
    secret: str,
    *,
    now: float,
    user: str | None = None,
    recent: RecentTokens | None = None,
) -> Identity | None:
    """The token's owner, if the token exists, is not revoked or expired, and (when a user
    name came with it, as in Basic auth) belongs to that user. With ``recent``, a record read
    less than its ``ttl`` ago is used again instead of reading the store."""
    if not looks_like_token(secret):
        return None
    hashed = secret_hash(secret)
    record = recent.get(hashed, now=now) if recent is not None else None
    if record is None:
        record = store.tokens.find_by_hash(hashed)
        if record is not None and recent is not None:
            recent.put(hashed, record, now=now)
    if record is None or not record.usable(now):
        return None
    if user is not None and user != record.owner:
        return None
    if record.last_used_at is None or now - record.last_used_at > _TOUCH_EVERY:
        store.tokens.touch(record.id, now=now)
        if recent is not None:
            recent.touched(hashed, now=now)
    return Identity(record.owner, via="token")
