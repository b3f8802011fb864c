"""Idempotency keys in the store, on SQLite and PostgreSQL: per owner, recorded with what they
made in one transaction, one winner when two requests race with one key, and forgotten after
their lifetime."""

from __future__ import annotations

import pytest
import sqlalchemy as sa
from sqlalchemy.exc import IntegrityError

from sparkgate.states import SessionKind
from sparkgate.store import Store
from sparkgate.store.idempotency import KeyClaim
from sparkgate.store.schema import idempotency_keys, sessions
from tests.concurrency import race
from tests.conftest import NOW

TTL = 86400.0
CLAIM = KeyClaim("alice", "k-1", "session", "f" * 64)


def _make_with_key(store: Store, claim: KeyClaim, now: float = NOW) -> int:
    """A session and its key, in one transaction (as the gateway makes them); its id."""
    with store.db.begin() as conn:
        session = store.sessions.add(SessionKind.INTERACTIVE, now=now, owner=claim.owner, conn=conn)
        store.idempotency.add(
            claim, session_id=session.id, now=now, expired_before=now - TTL, conn=conn
        )
    return session.id


def _count(store: Store, table: sa.Table) -> int:
    with store.db.read() as conn:
        return int(conn.execute(sa.select(sa.func.count()).select_from(table)).scalar_one())


def test_a_key_names_what_it_made_for_its_owner_only(store: Store) -> None:
    assert store.idempotency.available()
    session_id = _make_with_key(store, CLAIM)
    found = store.idempotency.find("alice", "k-1", since=NOW - TTL)
    assert found is not None
    assert (found.session_id, found.statement_id, found.created_at) == (session_id, None, NOW)
    assert found.answers(CLAIM)
    assert not found.answers(KeyClaim("alice", "k-1", "session", "0" * 64))  # another body
    assert not found.answers(KeyClaim("alice", "k-1", "query", CLAIM.fingerprint))
    assert store.idempotency.find("bob", "k-1", since=NOW - TTL) is None  # keys are per user
    assert store.idempotency.find("alice", "K-1", since=NOW - TTL) is None  # exact keys
    # Bob's same key is his own.
    _make_with_key(store, KeyClaim("bob", "k-1", "session", "b" * 64))
    assert _count(store, idempotency_keys) == 2


def test_a_live_key_refuses_a_second_request_and_nothing_of_it_stays(store: Store) -> None:
    _make_with_key(store, CLAIM)
    with pytest.raises(IntegrityError):
        _make_with_key(store, CLAIM, now=NOW + 10)
    # The session made in the refused transaction went with it.
    assert _count(store, sessions) == 1
    assert _count(store, idempotency_keys) == 1


def test_a_failed_transaction_leaves_no_key_behind(store: Store) -> None:
    with pytest.raises(RuntimeError), store.db.begin() as conn:
        session = store.sessions.add(SessionKind.INTERACTIVE, now=NOW, owner="alice", conn=conn)
        store.idempotency.add(
            CLAIM, session_id=session.id, now=NOW, expired_before=NOW - TTL, conn=conn
        )
        raise RuntimeError("the node died between the session and its answer")
    assert store.idempotency.find("alice", "k-1", since=NOW - TTL) is None
    assert _count(store, sessions) == 0


def test_two_requests_racing_with_one_key_make_one_thing(store: Store) -> None:
    outcomes = race(*[lambda: _attempt(store) for _ in range(4)])
    assert sorted(o for o in outcomes if o == "refused") == ["refused"] * 3
    made = [o for o in outcomes if o != "refused"]
    assert len(made) == 1
    found = store.idempotency.find("alice", "k-1", since=NOW - TTL)
    assert found is not None and found.session_id == made[0]
    assert _count(store, sessions) == 1


def _attempt(store: Store) -> int | str:
    try:
        return _make_with_key(store, CLAIM)
    except IntegrityError:
        return "refused"


def test_an_expired_key_is_forgotten_and_may_name_a_new_request(store: Store) -> None:
    first = _make_with_key(store, CLAIM)
    later = NOW + TTL + 1
    assert store.idempotency.find("alice", "k-1", since=later - TTL) is None  # expired
    # Used again before the cleanup ran: the old row gives way in the same transaction.
    second = _make_with_key(store, CLAIM, now=later)
    found = store.idempotency.find("alice", "k-1", since=later - TTL)
    assert found is not None and found.session_id == second != first
    _make_with_key(store, KeyClaim("alice", "k-2", "session", "f" * 64), now=NOW)
    assert store.idempotency.delete_expired(before=later - TTL) == 1  # k-2 only
    assert store.idempotency.delete_expired(before=later - TTL) == 0
    assert store.idempotency.find("alice", "k-1", since=later - TTL) is not None
