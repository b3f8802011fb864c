"""The access decisions a kept result is reused under (``auth.reuse_policy``): property-based
over generated access files, users, owners and grants, two users' digests of a table are equal
exactly when what they may read of it is the same (whether they may, the hidden columns, the
masks, the row filter), so a user under a row filter or a mask never gets a result computed
without it, and users under the same rules share."""

from __future__ import annotations

import yaml
from hypothesis import given, settings
from hypothesis import strategies as st

from sparkgate.auth.access import parse_access
from sparkgate.auth.reuse_policy import OPEN, decisions
from sparkgate.auth.tables import OWNERSHIP, SELECT, effective
from sparkgate.store.table_access import GrantRecord, TableFacts, TableName

USERS = ["ann", "bob", "cat", "dan"]
GROUPS = ["g1", "g2"]
TABLES = ["spark_catalog.s.t1", "spark_catalog.s.t2", "spark_catalog.o.t3"]

who = st.one_of(
    st.builds(lambda u: {"user": u}, st.sampled_from(USERS)),
    st.builds(lambda g: {"group": g}, st.sampled_from(GROUPS)),
    st.just({}),
)
rule = st.builds(
    lambda w, schema, table, privs, hide, mask, filt: {
        **w,
        "schema": schema,
        **({"table": table} if table else {}),
        "privileges": privs,
        **(
            {
                "columns": [
                    *([{"name": "a", "allow": False}] if hide else []),
                    *([{"name": "b", "mask": mask}] if mask else []),
                ]
            }
            if hide or mask
            else {}
        ),
        **({"filter": filt} if filt else {}),
    },
    who,
    st.sampled_from(["s", "o", ".*"]),
    st.sampled_from([None, "t1", "t2", "t3"]),
    st.lists(st.sampled_from(["SELECT", "INSERT", "DELETE"]), unique=True, max_size=3),
    st.booleans(),
    st.sampled_from([None, "0", "'x'"]),
    st.sampled_from([None, "k > 1", "k > 2"]),
)
access_file = st.builds(
    lambda rules, members, admins: yaml.safe_dump(
        {
            "admins": admins,
            "groups": {g: m for g, m in members.items() if m},
            "tables": rules,
        }
    ),
    st.lists(rule, max_size=5),
    st.fixed_dictionaries({g: st.lists(st.sampled_from(USERS), unique=True) for g in GROUPS}),
    st.lists(st.sampled_from(USERS), unique=True, max_size=1),
)
grant = st.builds(
    lambda kind, grantee, priv: ("user", grantee, priv) if kind else ("group", grantee, priv),
    st.booleans(),
    st.sampled_from(USERS + GROUPS),
    st.sampled_from(["SELECT", "INSERT"]),
)
facts_of = st.fixed_dictionaries(
    {
        name: st.builds(
            lambda owner, grants: TableFacts(
                owner, [GrantRecord(k, g, p, "x", 0.0) for k, g, p in grants]
            ),
            st.one_of(st.none(), st.sampled_from(USERS)),
            st.lists(grant, max_size=3, unique=True),
        )
        for name in TABLES
    }
)


def what_they_read(
    text: str, facts: dict[str, TableFacts], user: str, name: str
) -> tuple[object, ...]:
    rules = parse_access(text)
    assert rules.tables is not None
    groups = rules.groups_of(user)
    table = TableName.of(*name.split("."))
    fact = facts[name]
    access = effective(
        rules.tables,
        user,
        groups,
        table.catalog,
        table.schema,
        table.table,
        admin=rules.is_admin(user, groups),
        owner=fact.owner,
        grants=fact.as_triples(),
    )
    reads = bool(access.privileges & {SELECT, OWNERSHIP})
    return reads, frozenset(access.hidden), tuple(sorted(access.masks.items())), access.filter


@settings(max_examples=200, deadline=None)
@given(
    text=access_file,
    facts=facts_of,
    one=st.sampled_from(USERS),
    other=st.sampled_from(USERS),
    name=st.sampled_from(TABLES),
)
def test_two_users_share_a_digest_exactly_when_they_read_the_same(
    text: str, facts: dict[str, TableFacts], one: str, other: str, name: str
) -> None:
    rules = parse_access(text)

    def facts_by_name(table: TableName) -> TableFacts:
        return facts[table.dotted]

    mine = decisions(rules, facts_by_name, one, frozenset(), [name])[name]
    theirs = decisions(rules, facts_by_name, other, frozenset(), [name])[name]
    same = what_they_read(text, facts, one, name) == what_they_read(text, facts, other, name)
    assert (mine == theirs) == same


def test_without_table_rules_everyone_reads_everything() -> None:
    rules = parse_access("admins: [ann]\n")
    found = decisions(rules, lambda _: TableFacts(None, []), "bob", frozenset(), TABLES)
    assert set(found.values()) == {OPEN}


def test_a_row_filter_or_a_mask_is_never_the_same_as_none() -> None:
    text = """
tables:
  - {user: bob, schema: s, table: t1, privileges: [SELECT], filter: "k > 1"}
  - {user: cat, schema: s, table: t1, privileges: [SELECT], columns: [{name: b, mask: "0"}]}
  - {schema: s, privileges: [SELECT]}
"""
    rules = parse_access(text)
    open_facts = lambda _: TableFacts(None, [])  # noqa: E731
    name = "spark_catalog.s.t1"
    digests = {
        user: decisions(rules, open_facts, user, frozenset(), [name])[name]
        for user in ("ann", "bob", "cat", "dan")
    }
    assert digests["ann"] == digests["dan"]  # the same rule: they may share
    assert len({digests["ann"], digests["bob"], digests["cat"]}) == 3
