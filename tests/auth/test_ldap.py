"""LdapAuthenticator against a real slapd (skipped, with the reason, where slapd is missing)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from sparkgate.auth.ldap import LdapAuthenticator
from sparkgate.auth.principal import Identity
from sparkgate.errors import ConfigurationError
from sparkgate.settings import Settings
from sparkgate_dev import free_port
from sparkgate_dev.slapd import LDAP_GROUPS, LDAP_USERS, SlapdServer, slapd_unavailable


@pytest.fixture(scope="module")
def slapd() -> Iterator[SlapdServer]:
    reason = slapd_unavailable()
    if reason:
        pytest.skip(reason)
    with SlapdServer() as server:
        yield server


def settings_for(tmp_path: Path, **overrides: Any) -> Settings:
    return Settings(home=tmp_path, auth="ldap", **overrides)


def authenticator(tmp_path: Path, slapd: SlapdServer, *, groups: bool = False) -> LdapAuthenticator:
    return LdapAuthenticator(
        settings_for(
            tmp_path,
            auth_ldap_url=slapd.url,
            auth_ldap_user_dn=slapd.user_dn_template,
            auth_ldap_search_base=slapd.search_base if groups else None,
        )
    )


def test_right_password(tmp_path: Path, slapd: SlapdServer) -> None:
    identity = authenticator(tmp_path, slapd).verify("alice", LDAP_USERS["alice"])
    assert identity == Identity("alice", groups=frozenset(), via="ldap")


def test_wrong_password(tmp_path: Path, slapd: SlapdServer) -> None:
    auth = authenticator(tmp_path, slapd)
    assert auth.verify("alice", "wrong") is None
    assert auth.verify("alice", LDAP_USERS["bob"]) is None


def test_unknown_user(tmp_path: Path, slapd: SlapdServer) -> None:
    assert authenticator(tmp_path, slapd).verify("mallory", "alice-pw") is None


def test_empty_password_is_not_an_anonymous_bind(tmp_path: Path, slapd: SlapdServer) -> None:
    auth = authenticator(tmp_path, slapd)
    assert auth.verify("alice", "") is None
    assert auth.verify("", "") is None


def test_empty_password_does_not_contact_the_server(tmp_path: Path) -> None:
    auth = LdapAuthenticator(
        settings_for(
            tmp_path,
            auth_ldap_url=f"ldap://127.0.0.1:{free_port()}",
            auth_ldap_user_dn="uid={user},ou=people,dc=example,dc=org",
        )
    )
    assert auth.verify("alice", "") is None  # no ConfigurationError: nothing was dialled


def test_groups(tmp_path: Path, slapd: SlapdServer) -> None:
    auth = authenticator(tmp_path, slapd, groups=True)
    for name in LDAP_GROUPS["analysts"]:
        identity = auth.verify(name, LDAP_USERS[name])
        assert identity == Identity(name, groups=frozenset({"analysts"}), via="ldap")
    alice = auth.verify("alice", LDAP_USERS["alice"])
    assert alice is not None and alice.groups == frozenset()


def test_no_groups_without_a_search_base(tmp_path: Path, slapd: SlapdServer) -> None:
    identity = authenticator(tmp_path, slapd).verify("bob", LDAP_USERS["bob"])
    assert identity is not None and identity.groups == frozenset()


@pytest.mark.parametrize(
    "name",
    [
        "*",
        "alice,ou=x",
        "alice,ou=people,dc=example,dc=org",
        "alice)(uid=*",
        "bob)(|(cn=*",
        "alice\\",
        "#alice",
        " alice ",
        "alice ",
        "alice+cn=x",
        'al"ice',
        "alice\x00",
        "uid=alice",
    ],
)
def test_injection_names_do_not_authenticate(tmp_path: Path, slapd: SlapdServer, name: str) -> None:
    auth = authenticator(tmp_path, slapd, groups=True)
    for password in (LDAP_USERS["alice"], LDAP_USERS["bob"], "x"):
        assert auth.verify(name, password) is None


def test_dn_escaping(tmp_path: Path, slapd: SlapdServer) -> None:
    auth = authenticator(tmp_path, slapd)
    assert auth.dn_for("alice,ou=x") == "uid=alice\\,ou\\=x,ou=people,dc=example,dc=org"
    assert auth.dn_for("alice") == "uid=alice,ou=people,dc=example,dc=org"


def test_name_as_the_directory_spells_it(tmp_path: Path, slapd: SlapdServer) -> None:
    # LDAP matches uid ignoring case; sparkgate owners and rules must not see "ALICE" as new.
    auth = authenticator(tmp_path, slapd, groups=True)
    assert auth.verify("ALICE", LDAP_USERS["alice"]) == Identity("alice", via="ldap")
    bob = auth.verify("Bob", LDAP_USERS["bob"])
    assert bob == Identity("bob", groups=frozenset({"analysts"}), via="ldap")


def test_unreachable_server_is_a_configuration_error(tmp_path: Path) -> None:
    url = f"ldap://127.0.0.1:{free_port()}"
    auth = LdapAuthenticator(
        settings_for(
            tmp_path,
            auth_ldap_url=url,
            auth_ldap_user_dn="uid={user},ou=people,dc=example,dc=org",
        )
    )
    with pytest.raises(ConfigurationError) as caught:
        auth.verify("alice", "alice-pw")
    assert url in caught.value.message
    assert "\n" not in caught.value.message


def test_bad_search_base_is_a_configuration_error(tmp_path: Path, slapd: SlapdServer) -> None:
    auth = LdapAuthenticator(
        settings_for(
            tmp_path,
            auth_ldap_url=slapd.url,
            auth_ldap_user_dn=slapd.user_dn_template,
            auth_ldap_search_base="ou=nowhere,dc=example,dc=org",
        )
    )
    with pytest.raises(ConfigurationError, match="SPARKGATE_AUTH_LDAP_SEARCH_BASE"):
        auth.verify("bob", LDAP_USERS["bob"])


@pytest.mark.parametrize(
    ("overrides", "setting"),
    [
        ({"auth_ldap_user_dn": "uid={user},dc=example,dc=org"}, "SPARKGATE_AUTH_LDAP_URL"),
        ({"auth_ldap_url": "ldap://127.0.0.1:389"}, "SPARKGATE_AUTH_LDAP_USER_DN"),
        (
            {"auth_ldap_url": "ldap://127.0.0.1:389", "auth_ldap_user_dn": "dc=example,dc=org"},
            "SPARKGATE_AUTH_LDAP_USER_DN",
        ),
        (
            {"auth_ldap_url": "127.0.0.1:389", "auth_ldap_user_dn": "uid={user},dc=org"},
            "SPARKGATE_AUTH_LDAP_URL",
        ),
    ],
)
def test_missing_settings(tmp_path: Path, overrides: dict[str, str], setting: str) -> None:
    with pytest.raises(ConfigurationError, match=setting):
        LdapAuthenticator(settings_for(tmp_path, **overrides))
