"""Leases: one holder at a time, renewal, release, and takeover when the holder lapses."""

from __future__ import annotations

import pytest

from sparkgate.store import Store
from tests.concurrency import race
from tests.conftest import NOW


def test_acquire_renew_release(store: Store) -> None:
    leases = store.leases
    assert leases.acquire("reaper", "a", now=NOW, ttl=10)
    assert leases.acquire("reaper", "a", now=NOW + 1, ttl=10)  # ours already: renewed
    assert not leases.acquire("reaper", "b", now=NOW + 5, ttl=10)
    assert leases.renew("reaper", "a", now=NOW + 6, ttl=10)
    held = leases.get("reaper")
    assert held is not None and held.owner == "a" and held.expires_at == NOW + 16
    assert held.acquired_at == NOW
    leases.release("reaper", "a")
    assert leases.get("reaper") is None
    assert leases.acquire("reaper", "b", now=NOW + 7, ttl=10)


def test_lapsed_lease_is_taken_over_and_old_holder_learns_it(store: Store) -> None:
    leases = store.leases
    assert leases.acquire("reaper", "a", now=NOW, ttl=10)
    assert not leases.acquire("reaper", "b", now=NOW + 9, ttl=10)
    assert leases.acquire("reaper", "b", now=NOW + 11, ttl=10)
    assert not leases.renew("reaper", "a", now=NOW + 12, ttl=10)
    leases.release("reaper", "a")  # a stale holder's release must not free b's lease
    held = leases.get("reaper")
    assert held is not None and held.owner == "b"


def test_a_round_of_leases_in_one_call(store: Store) -> None:
    leases = store.leases
    assert leases.acquire("placement", "b", now=NOW, ttl=10)
    # New rows are created, ours renewed, another's live lease left alone.
    assert leases.acquire_many(["reaper", "placement"], "a", now=NOW, ttl=10) == {"reaper"}
    assert leases.acquire_many(["reaper", "placement"], "a", now=NOW + 5, ttl=10) == {"reaper"}
    reaper = leases.get("reaper")
    assert reaper is not None and reaper.expires_at == NOW + 15 and reaper.acquired_at == NOW
    # b lapses: a takes placement over in its next round.
    taken = leases.acquire_many(["reaper", "placement"], "a", now=NOW + 11, ttl=10)
    assert taken == {"reaper", "placement"}


def test_a_round_on_existing_leases_is_one_write(
    store: Store, monkeypatch: pytest.MonkeyPatch
) -> None:
    names = ["reaper", "placement", "janitor"]
    store.leases.acquire_many(names, "a", now=NOW, ttl=10)  # creates the rows

    def one_by_one(*_args: object, **_kwargs: object) -> bool:
        raise AssertionError("a lease row that exists was taken on its own")

    monkeypatch.setattr(store.leases, "acquire", one_by_one)
    assert store.leases.acquire_many(names, "a", now=NOW + 1, ttl=10) == set(names)


def test_reap_expired(store: Store) -> None:
    store.leases.acquire("x", "a", now=NOW, ttl=1)
    store.leases.acquire("y", "a", now=NOW, ttl=100)
    assert store.leases.reap_expired(now=NOW + 2) == ["x"]


@pytest.mark.parametrize("round_", range(5))
def test_concurrent_acquire_has_one_winner(store: Store, round_: int) -> None:
    takes = [
        lambda owner=f"node-{i}": store.leases.acquire("duty", owner, now=NOW, ttl=10)
        for i in range(4)
    ]
    assert sorted(race(*takes)) == [False, False, False, True]
