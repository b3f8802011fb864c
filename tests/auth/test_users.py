"""The users layer on a real store: authentication, the credential cache, tokens, checks,
slow-down of failed logins, share keys, and the audit."""

from __future__ import annotations

import base64
from pathlib import Path

import pytest

from sparkgate.auth import tokens
from sparkgate.auth.passwords import PasswordFile
from sparkgate.auth.principal import Identity
from sparkgate.auth.users import Users
from sparkgate.errors import (
    ConfigurationError,
    DeniedSetting,
    Forbidden,
    MissingRight,
    Unauthenticated,
)
from sparkgate.settings import Settings
from sparkgate.states import StatementKind
from sparkgate.store import Store


class Clock:
    def __init__(self) -> None:
        self.now = 1_000_000.0

    def __call__(self) -> float:
        return self.now


def basic(user: str, password: str) -> str:
    return "Basic " + base64.b64encode(f"{user}:{password}".encode()).decode()


@pytest.fixture
def users(tmp_path: Path, store: Store) -> tuple[Users, Clock]:
    passwords = PasswordFile(tmp_path / "passwords")
    passwords.set("alice", "alice-pw")
    passwords.set("bob", "bob-pw")
    (tmp_path / "access.yaml").write_text(
        "admins: [alice]\ngroups: {analysts: [bob]}\nimpersonators: [alice]\n"
        "rules:\n  - {groups: [analysts], allow: [sql]}\n  - {users: ['*'], allow: [sql, code]}\n"
    )
    settings = Settings(
        home=tmp_path,
        auth="password",
        auth_password_file=tmp_path / "passwords",
        access_file=tmp_path / "access.yaml",
    )
    clock = Clock()
    return Users(settings, store, clock=clock), clock


def test_no_auth_is_the_anonymous_admin(tmp_path: Path, store: Store) -> None:
    users = Users(Settings(home=tmp_path), store)
    user = users.authenticate(None, address="127.0.0.1")
    assert user.name == "anonymous" and user.admin


def test_unknown_methods_and_missing_files_are_configuration_errors(
    tmp_path: Path, store: Store
) -> None:
    with pytest.raises(ConfigurationError, match="kerberos"):
        Users(Settings(home=tmp_path, auth="kerberos"), store)
    with pytest.raises(ConfigurationError, match="SPARKGATE_AUTH_PASSWORD_FILE"):
        Users(Settings(home=tmp_path, auth="password"), store)


def test_basic_auth_and_the_same_refusal_for_every_failure(users: tuple[Users, Clock]) -> None:
    layer, _ = users
    bob = layer.authenticate(basic("bob", "bob-pw"), address="10.0.0.1")
    assert bob.name == "bob" and bob.rights == {"sql"} and bob.groups == {"analysts"}
    messages = set()
    for header in (None, basic("bob", "x"), basic("nobody", "x"), "Basic ###", "Negotiate abc"):
        with pytest.raises(Unauthenticated) as caught:
            layer.authenticate(header, address="10.0.0.1")
        if header is not None:
            messages.add(caught.value.message)
    assert len(messages) == 1


def test_verified_passwords_are_cached_but_a_removed_user_is_out_at_once(
    users: tuple[Users, Clock], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    layer, clock = users
    header = basic("bob", "bob-pw")
    layer.authenticate(header, address=None)
    calls: list[tuple[str, str]] = []
    import sparkgate.auth.passwords as module

    real = module.check_password

    def counting(password: str, hashed: str) -> bool:
        calls.append((password, hashed))
        return real(password, hashed)

    monkeypatch.setattr(module, "check_password", counting)
    layer.authenticate(header, address=None)
    assert calls == []  # from the cache: no bcrypt
    clock.now += layer.settings.auth_cache_ttl + 1
    layer.authenticate(header, address=None)
    assert len(calls) == 1  # expired: verified again
    PasswordFile(tmp_path / "passwords").remove("bob")
    with pytest.raises(Unauthenticated):
        layer.authenticate(header, address=None)


def test_a_changed_password_is_refused_at_once_and_other_logins_stay_cached(
    users: tuple[Users, Clock], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    layer, _ = users
    old, new = basic("bob", "bob-pw"), basic("bob", "bob-new")
    layer.authenticate(old, address=None)
    layer.authenticate(basic("alice", "alice-pw"), address=None)
    PasswordFile(tmp_path / "passwords").set("bob", "bob-new")
    calls: list[str] = []
    import sparkgate.auth.passwords as module

    real = module.check_password

    def counting(password: str, hashed: str) -> bool:
        calls.append(password)
        return real(password, hashed)

    monkeypatch.setattr(module, "check_password", counting)
    with pytest.raises(Unauthenticated):  # cached a moment ago, well within the TTL
        layer.authenticate(old, address=None)
    assert calls == ["bob-pw"]  # verified again against the new hash, and refused
    assert layer.authenticate(new, address=None).name == "bob"
    assert layer.authenticate(basic("alice", "alice-pw"), address=None).name == "alice"
    assert calls == ["bob-pw", "bob-new"]  # alice's hash did not change: still cached


def test_tokens_expire_and_revoke(users: tuple[Users, Clock], store: Store) -> None:
    layer, clock = users
    record, secret = tokens.create(store, "bob", now=clock.now, name="ci", expires_in=60)
    assert store.tokens.get(record.id).secret_hash != secret  # only a hash is kept
    assert layer.authenticate(f"Bearer {secret}", address=None).name == "bob"
    assert layer.authenticate(basic("bob", secret), address=None).via == "token"
    with pytest.raises(Unauthenticated):
        layer.authenticate(basic("alice", secret), address=None)  # someone else's token
    clock.now += 61
    with pytest.raises(Unauthenticated):
        layer.authenticate(f"Bearer {secret}", address=None)
    record, secret = tokens.create(store, "bob", now=clock.now, name=None, expires_in=None)
    store.tokens.revoke(record.id, now=clock.now)
    with pytest.raises(Unauthenticated):
        layer.authenticate(f"Bearer {secret}", address=None)


def test_a_user_removed_from_the_password_file_loses_their_tokens(
    users: tuple[Users, Clock], store: Store, tmp_path: Path
) -> None:
    layer, clock = users
    _, secret = tokens.create(store, "bob", now=clock.now, name=None, expires_in=None)
    assert layer.authenticate(f"Bearer {secret}", address=None).name == "bob"
    PasswordFile(tmp_path / "passwords").remove("bob")
    with pytest.raises(Unauthenticated):
        layer.authenticate(f"Bearer {secret}", address=None)


def test_repeated_failures_from_one_address_are_slowed_down(users: tuple[Users, Clock]) -> None:
    layer, clock = users
    delays = []
    for _ in range(8):
        with pytest.raises(Unauthenticated):
            layer.authenticate(basic("bob", "guess"), address="10.9.9.9")
        delays.append(layer.failure_delay("10.9.9.9"))
    assert delays[:3] == [0, 0, 0]
    assert delays[3:] == sorted(delays[3:]) and 0 < delays[3] < delays[-1] <= 5
    assert layer.failure_delay("10.1.1.1") == 0  # another address pays nothing
    clock.now += 301
    assert layer.failure_delay("10.9.9.9") == 0  # forgiven after the window
    failed = layer.store.audit.list_page(action="login", outcome="failed").items
    assert len(failed) == 8 and failed[0].detail == {"scheme": "basic", "user": "bob"}


def test_each_failed_login_is_reported_by_scheme_alone(users: tuple[Users, Clock]) -> None:
    layer, _ = users
    reported: list[str] = []
    layer.on_failed_login = reported.append  # what a node's /metrics counts
    for header in (None, basic("bob", "guess"), "Bearer nope", "Negotiate abc"):
        with pytest.raises(Unauthenticated):
            layer.authenticate(header, address="10.7.7.7")
    layer.authenticate(basic("bob", "bob-pw"), address="10.7.7.7")
    # No credentials at all is a challenge, not a failed login (nor is it audited as one).
    assert reported == ["basic", "bearer", "negotiate"]
    failed = layer.store.audit.list_page(action="login", outcome="failed").items
    assert len(failed) == len(reported)


def test_rights_settings_impersonation_and_their_audit(users: tuple[Users, Clock]) -> None:
    layer, _ = users
    bob = layer.authenticate(basic("bob", "bob-pw"), address="10.0.0.2")
    alice = layer.authenticate(basic("alice", "alice-pw"), address=None)
    layer.require_statement(bob, StatementKind.SQL, "SELECT 1")
    with pytest.raises(MissingRight, match="'code'"):
        layer.require_statement(bob, StatementKind.PYSPARK, "print(1)")
    with pytest.raises(MissingRight, match="'streams'"):
        layer.require_statement(bob, StatementKind.SQL, "SELECT 1; CREATE STREAM r USING rate")
    with pytest.raises(DeniedSetting, match=r"spark\.master"):
        layer.require_statement(bob, StatementKind.SQL, "SET spark.master=yarn")
    with pytest.raises(DeniedSetting):
        layer.check_conf(bob, {"spark.jars": "/tmp/evil.jar"})
    layer.check_conf(alice, {"spark.jars": "/tmp/fine.jar"})  # admins may
    with pytest.raises(Forbidden, match="proxyUser"):
        layer.check_impersonation(bob, "alice", field="proxyUser")
    proxied = layer.check_impersonation(alice, "bob", field="proxyUser")
    assert proxied.name == "bob" and proxied.rights == {"sql"} and not proxied.admin
    denied = layer.store.audit.list_page(user="bob", outcome="denied").items
    assert [e.action for e in reversed(denied)] == [
        "run Python code",
        "start or stop streams",
        "set spark.master",
        "set spark.jars",
        "impersonate",
    ]
    assert denied[0].address == "10.0.0.2"


def test_share_keys_follow_the_share_level(tmp_path: Path, store: Store) -> None:
    for level, expected in [
        ("user", "user:bob"),
        ("group", "group:analysts"),
        ("server", None),
        ("connection", "session:s1"),
    ]:
        (tmp_path / "p").write_text("")
        settings = Settings(
            home=tmp_path,
            auth="password",
            auth_password_file=tmp_path / "p",
            engine_share_level=level,  # type: ignore[arg-type]
        )
        layer = Users(settings, store)
        bob = layer.principal(Identity("bob", frozenset({"analysts"})))
        assert layer.share_key(bob, "s1") == expected
