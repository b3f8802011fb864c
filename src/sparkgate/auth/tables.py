"""Table rules: who may read and change which tables, with masks and row filters.

The ``tables:`` and ``schemas:`` sections of the access file, in the shape of Trino's
file-based access control, so that a Trino rules file's sections work as they are::

    tables:
      - group: hr                      # regular expressions, matched whole; default ".*"
        schema: hr
        privileges: [SELECT, INSERT, DELETE, UPDATE, OWNERSHIP]
      - user: "bob|dave"
        schema: hr
        table: salaries
        privileges: [SELECT]
        columns:
          - {name: ssn, allow: false}                      # hidden
          - {name: salary, mask: "round(salary, -4)"}      # masked
        filter: "region = 'EU'"                            # the rows they may see
    schemas:
      - {group: hr, schema: hr, owner: true}

The first rule matching the user and the table applies; none means no access. Pure: no store,
no Spark. The engine asks through :class:`sparkgate.engine.authz.decider.Decider`, which adds
owners and grants kept in the store.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass, field, replace

from pydantic import BaseModel, ConfigDict, Field, field_validator

SELECT, INSERT, DELETE, UPDATE, OWNERSHIP, GRANT_SELECT = (
    "SELECT",
    "INSERT",
    "DELETE",
    "UPDATE",
    "OWNERSHIP",
    "GRANT_SELECT",
)
PRIVILEGES = (SELECT, INSERT, DELETE, UPDATE, OWNERSHIP, GRANT_SELECT)
# What GRANT may give: Trino's file rules grant the rest through rules, not statements.
GRANTABLE = (SELECT, INSERT, DELETE, UPDATE)
ALL = frozenset(PRIVILEGES)
SESSION_CATALOG = "spark_catalog"


def _regex(value: str, where: str) -> re.Pattern[str]:
    try:
        return re.compile(value)
    except re.error as exc:
        raise ValueError(f"{where}: not a regular expression ({exc}): {value!r}") from exc


class _Column(BaseModel):
    """One entry of a table rule's ``columns:``."""

    model_config = ConfigDict(extra="forbid")

    name: str = Field(description="The column's name.")
    allow: bool = Field(
        default=True, description="`false` hides the column, as if it did not exist."
    )
    mask: str | None = Field(
        default=None,
        description="A SQL expression that replaces the column's values "
        "(`round(salary, -4)`); may use `current_user()` and `is_member('group')`.",
    )


class _Who(BaseModel):
    model_config = ConfigDict(extra="forbid")

    user: str = Field(
        default=".*", description="The users it applies to: a regular expression, matched whole."
    )
    group: str = Field(
        default=".*",
        description="The groups it applies to: a regular expression matched whole against "
        "each of the user's groups.",
    )
    # sparkgate's own lists ("*": anyone)
    users: list[str] | None = Field(
        default=None, description='The users it applies to, as a list (`"*"`: anyone).'
    )
    groups: list[str] | None = Field(
        default=None, description='The groups it applies to, as a list (`"*"`: anyone).'
    )

    @field_validator("user", "group")
    @classmethod
    def _valid(cls, value: str) -> str:
        _regex(value, "user/group")
        return value


class _TableRule(_Who):
    """One entry of ``tables:``: what its users may do with the tables it matches."""

    catalog: str = Field(
        default=".*",
        description="The catalog: a regular expression (Spark's session catalog is "
        "`spark_catalog`).",
    )
    schema_: str = Field(".*", alias="schema", description="The schema: a regular expression.")
    table: str = Field(default=".*", description="The table or view: a regular expression.")
    privileges: list[str] = Field(
        description="`SELECT`, `INSERT`, `DELETE`, `UPDATE`, `OWNERSHIP` (drop, alter, grant), "
        "`GRANT_SELECT` (grant `SELECT` on what one does not own); `[]`: no access."
    )
    columns: list[_Column] = Field(
        default_factory=list, description="Columns hidden or masked for these users."
    )
    filter: str | None = Field(
        default=None,
        description="A SQL boolean expression: the rows these users may see "
        "(`region = 'EU' OR current_user() = manager`).",
    )

    @field_validator("catalog", "schema_", "table")
    @classmethod
    def _pattern(cls, value: str) -> str:
        _regex(value, "catalog/schema/table")
        return value

    @field_validator("privileges")
    @classmethod
    def _known(cls, value: list[str]) -> list[str]:
        upper = [p.upper() for p in value]
        unknown = [p for p in upper if p not in PRIVILEGES]
        if unknown:
            raise ValueError(
                f"unknown privilege(s) {unknown}; privileges are {', '.join(PRIVILEGES)}"
            )
        return upper


class _SchemaRule(_Who):
    """One entry of ``schemas:``: who owns the schemas it matches."""

    catalog: str = Field(default=".*", description="The catalog: a regular expression.")
    schema_: str = Field(".*", alias="schema", description="The schema: a regular expression.")
    owner: bool = Field(
        description="`true`: its users may create, alter and drop in the schema, the tables "
        "of others included."
    )

    @field_validator("catalog", "schema_")
    @classmethod
    def _pattern(cls, value: str) -> str:
        _regex(value, "catalog/schema")
        return value


@dataclass(frozen=True)
class Who:
    user: re.Pattern[str]
    group: re.Pattern[str]
    users: frozenset[str] | None
    groups: frozenset[str] | None

    def matches(self, user: str, groups: frozenset[str]) -> bool:
        if self.users is not None and user not in self.users and "*" not in self.users:
            return False
        if self.groups is not None and "*" not in self.groups and not (groups & self.groups):
            return False
        if not self.user.fullmatch(user):
            return False
        if self.group.pattern in (".*", ""):
            return True
        return any(self.group.fullmatch(g) for g in groups)


@dataclass(frozen=True)
class Access:
    """What one rule gives a user on one table."""

    privileges: frozenset[str] = frozenset()
    hidden: frozenset[str] = frozenset()
    masks: dict[str, str] = field(default_factory=dict)
    filter: str | None = None
    rule: int | None = None  # the index of the rule that decided, for explain


@dataclass(frozen=True)
class TableRule:
    who: Who
    catalog: re.Pattern[str]
    schema: re.Pattern[str]
    table: re.Pattern[str]
    access: Access

    def describe(self) -> str:
        """The rule as the file says it, for explanations."""
        parts = [
            f"{key}={value}"
            for key, value in (
                ("user", self.who.user.pattern),
                ("group", self.who.group.pattern),
                ("users", sorted(self.who.users) if self.who.users is not None else None),
                ("groups", sorted(self.who.groups) if self.who.groups is not None else None),
                ("catalog", self.catalog.pattern),
                ("schema", self.schema.pattern),
                ("table", self.table.pattern),
            )
            if value is not None and value != ".*"
        ]
        return ", ".join(parts) or "every user and table"

    def matches(
        self, user: str, groups: frozenset[str], catalog: str, schema: str, table: str
    ) -> bool:
        return (
            self.who.matches(user, groups)
            and bool(self.catalog.fullmatch(catalog))
            and bool(self.schema.fullmatch(schema))
            and bool(self.table.fullmatch(table))
        )


@dataclass(frozen=True)
class SchemaRule:
    who: Who
    catalog: re.Pattern[str]
    schema: re.Pattern[str]
    owner: bool


@dataclass(frozen=True)
class TableRules:
    tables: tuple[TableRule, ...]
    schemas: tuple[SchemaRule, ...] = ()

    def access(
        self, user: str, groups: frozenset[str], catalog: str, schema: str, table: str
    ) -> Access:
        """The first matching rule's access; no matching rule: none (case-insensitive names,
        as Spark's catalog keeps them lower-case)."""
        rule = self.rule_for(user, groups, catalog, schema, table)
        return rule.access if rule is not None else Access()

    def rule_for(
        self, user: str, groups: frozenset[str], catalog: str, schema: str, table: str
    ) -> TableRule | None:
        catalog, schema, table = catalog.lower(), schema.lower(), table.lower()
        for rule in self.tables:
            if rule.matches(user, groups, catalog, schema, table):
                return rule
        return None

    def names_schema(self, user: str, groups: frozenset[str], catalog: str, schema: str) -> bool:
        """Whether a rule gives ``user`` privileges in ``schema`` (the schema is then theirs
        to see listed, whatever tables it holds now), or makes it theirs. First match, as for
        a table: a rule for every table of the schema decides for all of them."""
        catalog, schema = catalog.lower(), schema.lower()
        if self.owns_schema(user, groups, catalog, schema):
            return True
        for rule in self.tables:
            if not (
                rule.who.matches(user, groups)
                and rule.catalog.fullmatch(catalog)
                and rule.schema.fullmatch(schema)
            ):
                continue
            if rule.access.privileges:
                return True
            if rule.table.pattern == ".*":
                return False  # none on any table of it, whatever later rules say
        return False

    def owns_schema(self, user: str, groups: frozenset[str], catalog: str, schema: str) -> bool:
        catalog, schema = catalog.lower(), schema.lower()
        for rule in self.schemas:
            if (
                rule.who.matches(user, groups)
                and rule.catalog.fullmatch(catalog)
                and rule.schema.fullmatch(schema)
            ):
                return rule.owner
        return False


def _who(raw: _Who) -> Who:
    return Who(
        user=re.compile(raw.user),
        group=re.compile(raw.group),
        users=frozenset(raw.users) if raw.users is not None else None,
        groups=frozenset(raw.groups) if raw.groups is not None else None,
    )


def build(tables: list[_TableRule], schemas: list[_SchemaRule]) -> TableRules:
    built: list[TableRule] = []
    for index, raw in enumerate(tables):
        masks = {c.name.lower(): c.mask for c in raw.columns if c.allow and c.mask}
        hidden = frozenset(c.name.lower() for c in raw.columns if not c.allow)
        built.append(
            TableRule(
                who=_who(raw),
                catalog=re.compile(raw.catalog),
                schema=re.compile(raw.schema_),
                table=re.compile(raw.table),
                access=Access(
                    privileges=frozenset(raw.privileges),
                    hidden=hidden,
                    masks=masks,
                    filter=raw.filter,
                    rule=index,
                ),
            )
        )
    return TableRules(
        tables=tuple(built),
        schemas=tuple(
            SchemaRule(
                who=_who(raw),
                catalog=re.compile(raw.catalog),
                schema=re.compile(raw.schema_),
                owner=raw.owner,
            )
            for raw in schemas
        ),
    )


def effective(
    tables: TableRules | None,
    user: str,
    groups: frozenset[str],
    catalog: str,
    schema: str,
    table: str,
    *,
    admin: bool,
    owner: str | None,
    grants: Iterable[tuple[str, str, str]],
) -> Access:
    """What ``user`` may do with a table: everything without table rules or as an admin; else
    the first matching rule's privileges (with its masks and filter), everything for the
    table's owner, and the privileges granted to the user or one of their groups
    (``grants``: (``"user"``|``"group"``, grantee, privilege))."""
    if tables is None or admin:
        return Access(privileges=ALL)
    base = tables.access(user, groups, catalog, schema, table)
    privileges = set(base.privileges)
    if owner is not None and owner == user:
        privileges |= ALL
    for kind, grantee, privilege in grants:
        if (kind == "user" and grantee == user) or (kind == "group" and grantee in groups):
            privileges.add(privilege)
    return replace(base, privileges=frozenset(privileges))


@dataclass(frozen=True)
class Explanation:
    """Why ``user`` may or may not use ``privilege`` on a table: each step that decided."""

    allowed: bool
    access: Access
    reasons: tuple[str, ...]


def explain(
    tables: TableRules | None,
    user: str,
    groups: frozenset[str],
    catalog: str,
    schema: str,
    table: str,
    privilege: str,
    *,
    admin: bool,
    owner: str | None,
    grants: Iterable[tuple[str, str, str]],
) -> Explanation:
    """What :func:`effective` decides, with the steps that decided it."""
    grants = list(grants)
    access = effective(
        tables, user, groups, catalog, schema, table, admin=admin, owner=owner, grants=grants
    )
    reasons: list[str] = []
    if tables is None:
        reasons.append("the access file has no tables: section: every table is open to sql")
    elif admin:
        reasons.append(f"{user} is an admin: every privilege, no masks")
    else:
        rule = tables.rule_for(user, groups, catalog, schema, table)
        if rule is None:
            reasons.append("no table rule matches: nothing from the access file")
        else:
            given = ", ".join(sorted(rule.access.privileges)) or "no privileges"
            reasons.append(
                f"table rule #{(rule.access.rule or 0) + 1} ({rule.describe()}) gives {given}"
            )
            if rule.access.hidden:
                reasons.append(f"hidden columns: {', '.join(sorted(rule.access.hidden))}")
            for column, mask in sorted(rule.access.masks.items()):
                reasons.append(f"column {column} is masked as {mask}")
            if rule.access.filter:
                reasons.append(f"rows filtered by {rule.access.filter}")
        if owner is not None:
            reasons.append(
                f"{owner} owns the table" + (": every privilege" if owner == user else "")
            )
        for kind, grantee, granted in grants:
            if (kind == "user" and grantee == user) or (kind == "group" and grantee in groups):
                reasons.append(f"{granted} is granted to {kind} {grantee}")
    wanted = privilege.upper()
    allowed = wanted in access.privileges or OWNERSHIP in access.privileges
    reasons.append(f"{wanted}: {'allowed' if allowed else 'denied'}")
    return Explanation(allowed, access, tuple(reasons))


__all__ = [
    "GRANTABLE",
    "PRIVILEGES",
    "Access",
    "Explanation",
    "TableRules",
    "build",
    "effective",
    "explain",
]
