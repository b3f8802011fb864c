"""Personal access tokens read again within a second (``RecentTokens``, asked for by the Spark
Connect door): fewer store reads, revocation seen within the second, expiry and wrong tokens
exactly as without it. The clock is a fake one: nothing here sleeps."""

from __future__ import annotations

import base64
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from sparkgate.auth import tokens
from sparkgate.auth.passwords import PasswordFile
from sparkgate.auth.users import Users
from sparkgate.errors import Unauthenticated
from sparkgate.settings import Settings
from sparkgate.store import Store

T0 = 1_000_000.0


class Clock:
    def __init__(self) -> None:
        self.now = T0

    def __call__(self) -> float:
        return self.now


@pytest.fixture
def reads(store: Store, monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The hashes the store is asked for, in order."""
    seen: list[str] = []
    real = store.tokens.find_by_hash

    def counting(secret_hash: str) -> Any:
        seen.append(secret_hash)
        return real(secret_hash)

    monkeypatch.setattr(store.tokens, "find_by_hash", counting)
    return seen


@pytest.fixture
def touches(store: Store, monkeypatch: pytest.MonkeyPatch) -> list[float]:
    seen: list[float] = []
    real = store.tokens.touch

    def counting(token_id: int, *, now: float) -> None:
        seen.append(now)
        real(token_id, now=now)

    monkeypatch.setattr(store.tokens, "touch", counting)
    return seen


def checker(store: Store, recent: tokens.RecentTokens) -> Callable[..., str | None]:
    def check(secret: str, now: float, user: str | None = None) -> str | None:
        identity = tokens.verify(store, secret, now=now, user=user, recent=recent)
        return None if identity is None else identity.name

    return check


def test_a_token_read_less_than_a_second_ago_is_not_read_again(
    store: Store, reads: list[str]
) -> None:
    _, secret = tokens.create(store, "bob", now=T0, name=None, expires_in=None)
    check = checker(store, tokens.RecentTokens())
    assert [check(secret, T0 + dt) for dt in (0, 0.1, 0.5, 0.999)] == ["bob"] * 4
    assert len(reads) == 1
    assert check(secret, T0 + 1.0) == "bob"  # the second is over: read again
    assert len(reads) == 2
    # Without RecentTokens, every call reads.
    assert tokens.verify(store, secret, now=T0 + 1.0) is not None
    assert len(reads) == 3


def test_a_revoked_token_stops_working_within_the_second(store: Store) -> None:
    record, secret = tokens.create(store, "bob", now=T0, name=None, expires_in=None)
    check = checker(store, tokens.RecentTokens())
    assert check(secret, T0) == "bob"
    store.tokens.revoke(record.id, now=T0 + 0.2)
    assert tokens.verify(store, secret, now=T0 + 0.2) is None  # uncached: at once
    assert check(secret, T0 + 0.9) == "bob"  # the bound: at most a second after the read
    assert check(secret, T0 + 1.0) is None
    assert check(secret, T0 + 1.1) is None  # and from then on
    assert check(secret, T0 + 5.0) is None


def test_expiry_is_checked_at_every_call_even_when_kept(store: Store, reads: list[str]) -> None:
    _, secret = tokens.create(store, "bob", now=T0, name=None, expires_in=0.5)
    check = checker(store, tokens.RecentTokens())
    assert check(secret, T0) == "bob"
    assert check(secret, T0 + 0.49) == "bob"
    assert check(secret, T0 + 0.5) is None
    assert len(reads) == 1  # refused from the kept record, at the time of the call


def test_a_wrong_token_never_passes_and_is_not_kept(store: Store, reads: list[str]) -> None:
    _, secret = tokens.create(store, "bob", now=T0, name=None, expires_in=None)
    check = checker(store, tokens.RecentTokens())
    wrong = tokens.new_secret()
    assert check(wrong, T0) is None
    assert check(wrong, T0 + 0.1) is None
    assert len(reads) == 2  # looked up each time
    assert check(secret[:-1] + ("A" if secret[-1] != "A" else "B"), T0) is None
    assert check(secret, T0) == "bob"
    assert check(secret, T0 + 0.1, user="alice") is None  # someone else's, from the kept record
    assert check(secret, T0 + 0.1, user="bob") == "bob"
    assert check("sgp_short", T0) is None  # not even a token's shape: not looked up
    assert len(reads) == 4


def test_last_used_is_still_written_once_a_minute(store: Store, touches: list[float]) -> None:
    record, secret = tokens.create(store, "bob", now=T0, name=None, expires_in=None)
    check = checker(store, tokens.RecentTokens())
    for dt in (0, 0.3, 0.6, 1.5, 30, 59.9):
        assert check(secret, T0 + dt) == "bob"
    assert touches == [T0]  # the kept record knows it was touched: not once per call
    assert check(secret, T0 + 61) == "bob"
    assert touches == [T0, T0 + 61]
    assert store.tokens.get(record.id).last_used_at == T0 + 61


def test_a_clock_that_went_back_reads_again(store: Store, reads: list[str]) -> None:
    _, secret = tokens.create(store, "bob", now=T0 - 10, name=None, expires_in=None)
    check = checker(store, tokens.RecentTokens())
    assert check(secret, T0) == "bob"
    assert check(secret, T0 - 0.5) == "bob"
    assert len(reads) == 2


def test_the_kept_records_are_bounded(store: Store) -> None:
    recent = tokens.RecentTokens()
    record, _ = tokens.create(store, "bob", now=T0, name=None, expires_in=None)
    for number in range(10_001):
        recent.put(f"hash-{number}", record, now=T0)
    assert recent.get("hash-0", now=T0) is None  # cleared when full
    assert recent.get("hash-10000", now=T0) is record


# -- through the users layer -----------------------------------------------------------------


@pytest.fixture
def users(tmp_path: Path, store: Store) -> tuple[Users, Clock]:
    PasswordFile(tmp_path / "passwords").set("bob", "bob-pw")
    settings = Settings(home=tmp_path, auth="password", auth_password_file=tmp_path / "passwords")
    clock = Clock()
    return Users(settings, store, clock=clock), clock


def basic(user: str, password: str) -> str:
    return "Basic " + base64.b64encode(f"{user}:{password}".encode()).decode()


def test_users_keep_tokens_only_when_asked(
    users: tuple[Users, Clock], store: Store, reads: list[str]
) -> None:
    layer, clock = users
    record, secret = tokens.create(store, "bob", now=clock.now, name=None, expires_in=None)
    for header in (f"Bearer {secret}", basic("bob", secret)):
        assert layer.authenticate(header, address=None, recent_tokens=True).name == "bob"
    assert len(reads) == 1  # Bearer and Basic share the kept record
    with pytest.raises(Unauthenticated):
        layer.authenticate(basic("alice", secret), address=None, recent_tokens=True)
    store.tokens.revoke(record.id, now=clock.now)
    with pytest.raises(Unauthenticated):  # the other doors: refused at once
        layer.authenticate(f"Bearer {secret}", address=None)
    clock.now += 0.5
    assert layer.authenticate(f"Bearer {secret}", address=None, recent_tokens=True).name == "bob"
    clock.now += 0.5
    for header in (f"Bearer {secret}", basic("bob", secret)):
        with pytest.raises(Unauthenticated):
            layer.authenticate(header, address=None, recent_tokens=True)


def test_a_user_removed_from_the_password_file_is_refused_at_once_even_when_kept(
    users: tuple[Users, Clock], store: Store, tmp_path: Path
) -> None:
    layer, clock = users
    _, secret = tokens.create(store, "bob", now=clock.now, name=None, expires_in=None)
    assert layer.authenticate(f"Bearer {secret}", address=None, recent_tokens=True).name == "bob"
    PasswordFile(tmp_path / "passwords").remove("bob")
    with pytest.raises(Unauthenticated):
        layer.authenticate(f"Bearer {secret}", address=None, recent_tokens=True)
