"""Table rules (the access file's ``tables:`` and ``schemas:``): parsing, first match, what
owners and grants add, the safe default of rights, and the policy the engine's extension asks
(the Decider) over a real store."""

from __future__ import annotations

import json

import pytest

from sparkgate.auth.access import CODE, SQL, Access, parse_access
from sparkgate.auth.tables import ALL, effective
from sparkgate.engine.authz.decider import Decider
from sparkgate.errors import ConfigurationError
from sparkgate.store import Store
from sparkgate.store.table_access import TableName

# A Trino rules file's sections, as Trino's documentation writes them.
TRINO = """
admins: [carol]
groups: {hr: [alice], analysts: [bob, dave]}
tables:
  - user: admin
    privileges: [SELECT, INSERT, DELETE, UPDATE, OWNERSHIP]
  - group: hr
    schema: hr
    privileges: [SELECT, INSERT, DELETE, OWNERSHIP]
  - user: "bob|dave"
    catalog: spark_catalog
    schema: hr
    table: salaries
    privileges: [SELECT]
    columns:
      - {name: ssn, allow: false}
      - {name: salary, mask: "0"}
    filter: "region = 'EU'"
  - users: [dave]
    schema: sales
    privileges: []
  - schema: sales
    privileges: [SELECT, GRANT_SELECT]
schemas:
  - {group: hr, schema: hr, owner: true}
  - {user: "bob", schema: "scratch_.*", owner: true}
"""


def test_the_first_matching_rule_decides_with_its_masks_and_filter() -> None:
    tables = parse_access(TRINO).tables
    assert tables is not None
    alice = tables.access("alice", frozenset({"hr"}), "spark_catalog", "hr", "salaries")
    assert alice.privileges == {"SELECT", "INSERT", "DELETE", "OWNERSHIP"}
    assert not alice.hidden and not alice.masks and alice.filter is None
    bob = tables.access("bob", frozenset({"analysts"}), "spark_catalog", "HR", "Salaries")
    assert bob.privileges == {"SELECT"} and bob.hidden == {"ssn"}
    assert bob.masks == {"salary": "0"} and bob.filter == "region = 'EU'"
    # Regular expressions match whole names: "hr" is not "hr_archive".
    assert not tables.access("bob", frozenset(), "spark_catalog", "hr_archive", "x").privileges
    # An earlier rule with no privileges closes what a later one would open.
    assert not tables.access("dave", frozenset(), "spark_catalog", "sales", "orders").privileges
    assert tables.access("bob", frozenset(), "spark_catalog", "sales", "orders").privileges == {
        "SELECT",
        "GRANT_SELECT",
    }
    # No rule at all: no access.
    assert not tables.access("erin", frozenset(), "spark_catalog", "hr", "salaries").privileges


def test_schema_owners() -> None:
    tables = parse_access(TRINO).tables
    assert tables is not None
    assert tables.owns_schema("alice", frozenset({"hr"}), "spark_catalog", "hr")
    assert tables.owns_schema("bob", frozenset(), "spark_catalog", "scratch_bob")
    assert not tables.owns_schema("bob", frozenset(), "spark_catalog", "hr")


def test_owners_and_grants_add_to_the_rule_and_admins_bypass_it() -> None:
    tables = parse_access(TRINO).tables

    def privileges(user: str, groups: frozenset[str], **kw: object) -> frozenset[str]:
        decided = effective(
            tables, user, groups, "spark_catalog", "hr", "salaries",
            admin=bool(kw.get("admin", False)),
            owner=kw.get("owner"),  # type: ignore[arg-type]
            grants=kw.get("grants", []),  # type: ignore[arg-type]
        )  # fmt: skip
        return decided.privileges

    assert privileges("erin", frozenset()) == set()
    assert privileges("erin", frozenset(), owner="erin") == ALL
    assert privileges("erin", frozenset(), grants=[("user", "erin", "SELECT")]) == {"SELECT"}
    assert privileges("erin", frozenset({"x"}), grants=[("group", "x", "INSERT")]) == {"INSERT"}
    assert privileges("erin", frozenset(), grants=[("user", "bob", "SELECT")]) == set()
    assert privileges("erin", frozenset(), admin=True) == ALL
    assert effective(None, "erin", frozenset(), "c", "s", "t", admin=False, owner=None, grants=[])


def test_with_table_rules_a_user_no_rule_names_gets_sql_only() -> None:
    rules = parse_access(TRINO)
    assert rules.rights_of("erin", frozenset()) == {SQL}
    without = parse_access("admins: [carol]")
    assert CODE in without.rights_of("erin", frozenset())
    assert without.tables is None


@pytest.mark.parametrize(
    ("text", "says"),
    [
        ("tables: [{privileges: [SELEKT]}]", "unknown privilege"),
        ("tables: [{table: '(', privileges: [SELECT]}]", "not a regular expression"),
        ("tables: [{schema: hr}]", "privileges"),
        ("tables: [{privileges: [SELECT], colour: red}]", "colour"),
        ("schemas: [{schema: hr}]", "owner"),
    ],
)
def test_a_broken_rule_is_refused_with_where_and_why(text: str, says: str) -> None:
    with pytest.raises(ConfigurationError, match=says):
        parse_access(text)


def test_sparkgate_user_is_never_settable_whatever_the_deny_list() -> None:
    rules = parse_access("conf: {deny: []}")
    assert rules.denied_pattern("sparkgate.user") == "sparkgate.user"
    assert rules.denied_pattern("SPARKGATE.USER ") == "sparkgate.user"


def test_the_decider_adds_owners_and_grants_from_the_store(
    sqlite_store: Store, tmp_path: pytest.TempPathFactory
) -> None:
    path = tmp_path / "access.yaml"  # type: ignore[operator]
    path.write_text(TRINO)
    decider = Decider(Access(path, []), sqlite_store, clock=lambda: 100.0)
    assert decider.active()
    name = TableName.of("spark_catalog", "Scratch_Bob", "T")
    assert json.loads(decider.decide("bob", *name.__dict__.values()))["privileges"] == []
    decider.changed("bob", "created", "spark_catalog", "scratch_bob", "t", None, None)
    assert sqlite_store.table_access.owner(name) == "bob"
    decided = json.loads(decider.decide("bob", "spark_catalog", "scratch_bob", "t"))
    assert set(decided["privileges"]) == ALL
    # Only the owner (or an admin) grants; what is not grantable is refused with a reason.
    refused = decider.grant(
        "dave", False, "SELECT", "spark_catalog", "scratch_bob", "t", "user", "dave"
    )
    assert refused is not None and refused.startswith("INSUFFICIENT_PRIVILEGE")
    bad = decider.grant(
        "bob", False, "OWNERSHIP", "spark_catalog", "scratch_bob", "t", "user", "dave"
    )
    assert bad is not None and "not OWNERSHIP" in bad
    assert (
        decider.grant(
            "bob", False, "SELECT,INSERT", "spark_catalog", "scratch_bob", "t", "group", "analysts"
        )
        is None
    )
    dave = json.loads(decider.decide("dave", "spark_catalog", "scratch_bob", "t"))
    assert set(dave["privileges"]) == {"SELECT", "INSERT"}
    assert [
        row[:3] for row in json.loads(decider.grants("dave", "spark_catalog", "scratch_bob", "t"))
    ] == [
        ["GROUP", "analysts", "INSERT"],
        ["GROUP", "analysts", "SELECT"],
    ]
    # Renamed, the owner and grants move; dropped, they go.
    decider.changed("bob", "renamed", "spark_catalog", "scratch_bob", "t", "scratch_bob", "u")
    assert sqlite_store.table_access.owner(name) is None
    moved = TableName.of("spark_catalog", "scratch_bob", "u")
    assert sqlite_store.table_access.owner(moved) == "bob"
    assert len(sqlite_store.table_access.grants(moved)) == 2
    decider.changed("bob", "dropped", "spark_catalog", "scratch_bob", "u", None, None)
    assert sqlite_store.table_access.owner(moved) is None
    assert sqlite_store.table_access.grants(moved) == []
    events = sqlite_store.audit.list_page(obj="scratch_bob.t").items
    assert [(e.action, e.outcome) for e in events] == [
        ("table.grant", "ok"),
        ("table.grant", "denied"),
    ]


def test_the_decider_lists_the_schemas_a_rule_or_an_object_shows(
    sqlite_store: Store, tmp_path: pytest.TempPathFactory
) -> None:
    path = tmp_path / "access.yaml"  # type: ignore[operator]
    path.write_text(TRINO)
    decider = Decider(Access(path, []), sqlite_store, clock=lambda: 100.0)
    every = ["default", "hr", "sales", "scratch_bob", "vault"]

    def shown(user: str) -> list[str]:
        return list(json.loads(decider.visibleSchemas(user, "spark_catalog", json.dumps(every))))

    assert shown("carol") == every  # an admin
    assert shown("alice") == ["hr", "sales"]  # her group's rule; everyone's on sales
    assert shown("bob") == ["hr", "sales", "scratch_bob"]  # one table of hr; a schema he owns
    # dave's first rule on sales gives him nothing on any of its tables: not listed.
    assert shown("dave") == ["hr"]
    # A table he is granted something on shows its schema; so does one he owns.
    decider.changed("bob", "created", "spark_catalog", "scratch_bob", "t", None, None)
    decider.grant("bob", False, "SELECT", "spark_catalog", "scratch_bob", "t", "group", "analysts")
    assert shown("dave") == ["hr", "scratch_bob"]
    decider.changed("erin", "created", "spark_catalog", "vault", "mine", None, None)
    assert shown("erin") == ["sales", "vault"]


def test_a_broken_edit_keeps_the_table_rules_in_force(tmp_path: pytest.TempPathFactory) -> None:
    path = tmp_path / "access.yaml"  # type: ignore[operator]
    path.write_text(TRINO)
    access = Access(path, [])
    assert access.rules().tables is not None
    path.write_text(TRINO + "\ntables: [{privileges: [NOPE]}]\n  broken: [")
    assert access.rules().tables is not None
