"""Idempotent submits: a query or session made with an ``Idempotency-Key`` is made once.

A client whose submit got no answer (its node died, the connection broke) cannot know whether
the query was taken. With a key it sends the request again, to any node: a repeat of the same
request with the same key, by the same user, within ``idempotency_key_ttl``, answers what the
first one made (its current state, as a read would) instead of making another. The key is
recorded in the transaction that makes the query or session (``Queries.submit``,
``Sessions.create``, through :class:`KeyedReplay`), so there is no "in progress" to report: a
key is either unused or names what its request made. Two requests racing with one key both try
to record it; the loser's transaction rolls back whole and it answers the winner's result.

A key names one request: the same key with another request (another body, or another kind of
request) is refused with ``IDEMPOTENCY_KEY_REUSED``. Requests are compared by a fingerprint of
what they ask, after defaults are applied (``{"query": q}`` and ``{"query": q, "isolation":
"session"}`` are the same request), in the way of Stripe's keys and the IETF draft
"The Idempotency-Key HTTP Header Field".
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, TypeVar

from sqlalchemy import Connection
from sqlalchemy.exc import IntegrityError

from sparkgate.auth.principal import Principal
from sparkgate.errors import IdempotencyKeyInvalid, IdempotencyKeyReused, SparkgateError
from sparkgate.settings import Settings
from sparkgate.store import Store
from sparkgate.store.idempotency import KeyClaim, KeyRecord

T = TypeVar("T")

KEY_MAX_LENGTH = 255
# Visible ASCII, with inner spaces: what a UUID, a hash or a job's run id is written in.
_KEY = re.compile(r"[\x21-\x7e]([\x20-\x7e]*[\x21-\x7e])?")


def parse_key(header: str | None) -> str | None:
    """The key an ``Idempotency-Key`` header names (None: no header), or
    IdempotencyKeyInvalid. The IETF draft's form, a quoted string, names the same key as the
    bare one: ``"8e03..."`` is ``8e03...``.

    parse_key('"8e03978e-40d5-43e8-bc93-6894a57f9324"') == "8e03978e-40d5-43e8-bc93-6894a57f9324"
    """
    if header is None:
        return None
    key = header.strip()
    if len(key) >= 2 and key[0] == key[-1] == '"':
        key = key[1:-1]
    if not key:
        raise IdempotencyKeyInvalid("the key is empty")
    if len(key) > KEY_MAX_LENGTH:
        raise IdempotencyKeyInvalid(f"the key has {len(key)} characters, over {KEY_MAX_LENGTH}")
    if not _KEY.fullmatch(key):
        raise IdempotencyKeyInvalid(
            "the key holds characters other than printable ASCII (or starts or ends with a space)"
        )
    return key


def fingerprint(request: str, **fields: Any) -> str:
    """A hash of what a request asks: its kind and its fields, as canonical JSON."""
    canonical = json.dumps(
        {"request": request, **fields}, sort_keys=True, separators=(",", ":"), ensure_ascii=False
    )
    return hashlib.sha256(canonical.encode()).hexdigest()


@dataclass
class KeyedReplay:
    """The mechanism of requests made once per key: ``claim`` a request's key, make it
    ``once`` (or answer what the key made), ``record`` the key in the making transaction.
    ``Sessions.create`` and ``Queries.submit`` use it; the doors pass them the header."""

    settings: Settings
    store: Store
    # False on a node pinned to a schema without the table (the release before, which did
    # not know the header): keys are then ignored, as that release ignores them.
    enabled: bool = True

    def claim(
        self, key: str | None, user: Principal, request: str, **fields: Any
    ) -> KeyClaim | None:
        """The claim of ``user``'s ``request`` on ``key`` (a bad key is refused even when keys
        are ignored); None without a key, or when keys are ignored."""
        key = parse_key(key)
        if key is None or not self.enabled:
            return None
        return KeyClaim(user.name, key, request, fingerprint(request, **fields))

    def once(
        self,
        claim: KeyClaim | None,
        make: Callable[[], T],
        replay: Callable[[KeyRecord], T],
        *,
        now: float,
        look_first: bool = True,
    ) -> tuple[T, bool]:
        """``make()``, or, if the key already names what an earlier request made,
        ``replay(its record)``; and whether it was a replay.

        With ``look_first`` False, ``make()`` is tried before the key is looked up: for a
        ``make`` that is one transaction recording the key (a statement in a session), so a
        repeat is known by its refused insert, and a first request (nearly all of them) saves
        a read. A repeat that ``make`` refuses for another reason (a limit reached, a session
        ended since) is still answered by the key, as when the key is looked up first."""
        if claim is None:
            return make(), False
        if look_first:
            found = self._find(claim, now)
            if found is not None:
                return replay(found), True
        try:
            return make(), False
        except SparkgateError:
            found = None if look_first else self._find(claim, now)
            if found is None:
                raise
            return replay(found), True
        except IntegrityError:
            # Another request with this key committed first (its row is what refused ours,
            # and our query or session went with our transaction): answer theirs.
            found = self._find(claim, now)
            if found is None:
                raise  # refused by some other constraint
            return replay(found), True

    def record(
        self,
        claim: KeyClaim,
        *,
        session_id: int,
        statement_id: int | None,
        now: float,
        conn: Connection,
    ) -> None:
        """The key names what its request made, in the transaction that makes it."""
        self.store.idempotency.add(
            claim,
            session_id=session_id,
            statement_id=statement_id,
            now=now,
            expired_before=now - self.settings.idempotency_key_ttl,
            conn=conn,
        )

    def _find(self, claim: KeyClaim, now: float) -> KeyRecord | None:
        since = now - self.settings.idempotency_key_ttl
        found = self.store.idempotency.find(claim.owner, claim.key, since=since)
        if found is not None and not found.answers(claim):
            raise IdempotencyKeyReused(claim.key, claim.request, found.request)
        return found
