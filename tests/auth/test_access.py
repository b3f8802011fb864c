"""Access rules: rights by first matching rule, groups, admins, denied settings, reloads."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from sparkgate.auth.access import DEFAULT_CONF_DENY, Access, AccessRules, parse_access
from sparkgate.errors import ConfigurationError

RULES = """
admins: [carol, "@ops"]
groups: {analysts: [bob, dave]}
impersonators: [airflow]
rules:
  - {groups: [analysts], allow: [sql]}
  - {users: [eve], allow: []}
  - {users: ["*"], allow: [sql, code, streams, jobs]}
conf:
  deny: ["spark.master", "spark.driver.*"]
limits: {sessions_per_user: 3}
"""


def test_the_first_rule_naming_the_user_or_a_group_wins() -> None:
    rules = parse_access(RULES)
    bob = rules.groups_of("bob")
    assert bob == {"analysts"}
    assert rules.rights_of("bob", bob) == {"sql"}
    assert rules.rights_of("eve", frozenset()) == frozenset()
    assert rules.rights_of("zoe", frozenset()) == {"sql", "code", "streams", "jobs"}
    # Groups from the identity (JWT, LDAP) count as much as the file's.
    assert rules.rights_of("zoe", rules.groups_of("zoe", frozenset({"analysts"}))) == {"sql"}


def test_admins_by_name_or_group_have_every_right() -> None:
    rules = parse_access(RULES)
    assert rules.is_admin("carol", frozenset())
    assert rules.is_admin("zoe", frozenset({"ops"}))
    assert "admin" in rules.rights_of("carol", frozenset())
    assert not rules.is_admin("bob", frozenset({"analysts"}))


def test_no_rules_means_every_right_but_admin() -> None:
    rules = AccessRules(admins=frozenset({"root"}))
    assert rules.rights_of("anyone", frozenset()) == {"sql", "code", "streams", "jobs"}
    assert "admin" in rules.rights_of("root", frozenset())


@pytest.mark.parametrize(
    ("key", "pattern"),
    [
        ("spark.master", "spark.master"),
        ("spark.hadoop.fs.s3a.secret.key", "spark.hadoop.*"),
        ("spark.jars.packages", "spark.jars*"),
        ("SPARK.SQL.WAREHOUSE.DIR", "spark.sql.warehouse.dir"),
        ("spark.driver.extraJavaOptions", "spark.driver.extra*"),
        ("spark.sql.shuffle.partitions", None),
        ("spark.driver.memory", None),
        ("spark.sparkgate.ctas.atomic", None),
        ("spark.sql.artifact.isolation.enabled", "spark.sql.artifact.*"),
    ],
)
def test_the_default_deny_list(key: str, pattern: str | None) -> None:
    assert AccessRules().denied_pattern(key) == pattern
    assert "spark.master" in DEFAULT_CONF_DENY


def test_a_file_deny_list_replaces_the_default() -> None:
    rules = parse_access(RULES)
    assert rules.denied_pattern("spark.driver.memory") == "spark.driver.*"
    assert rules.denied_pattern("spark.hadoop.x") is None


@pytest.mark.parametrize(
    ("text", "says"),
    [
        ("rules: [{users: [a], allow: [sudo]}]", "unknown right"),
        ("admins: [a]\nsurprise: 1", "surprise"),
        ("limits: {sessions_per_user: 0}", "sessions_per_user"),
        ("admins: [", "not valid YAML"),
    ],
)
def test_invalid_files_are_refused_with_the_reason(text: str, says: str) -> None:
    with pytest.raises(ConfigurationError, match=says):
        parse_access(text)


def test_changes_are_read_without_restart_and_a_broken_edit_keeps_the_rules(
    tmp_path: Path,
) -> None:
    path = tmp_path / "access.yaml"
    path.write_text(RULES)
    access = Access(path, admins=[])
    assert access.rules().rights_of("bob", frozenset({"analysts"})) == {"sql"}
    path.write_text(RULES.replace("allow: [sql]}", "allow: [sql, code]}"))
    os.utime(path, ns=(1, 1))  # a new stamp, whatever the clock's resolution
    assert access.rules().rights_of("bob", frozenset({"analysts"})) == {"sql", "code"}
    path.write_text("rules: [")  # a broken edit
    assert access.rules().rights_of("bob", frozenset({"analysts"})) == {"sql", "code"}
    path.unlink()  # removed: what was in force stays, it does not open up
    assert access.rules().rights_of("eve", frozenset()) == frozenset()


def test_a_broken_file_stops_start_up(tmp_path: Path) -> None:
    path = tmp_path / "access.yaml"
    path.write_text("admins: [")
    with pytest.raises(ConfigurationError):
        Access(path, admins=[])
