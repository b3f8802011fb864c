"""Data access control, as users and admins ask about it: why a user may or may not use a
table (``explain``), and what was granted on one (``grants``). What is enforced is decided in
the engines (sparkgate.engine.authz) from the same rules, owners and grants."""

from __future__ import annotations

from dataclasses import dataclass

from sparkgate.auth.principal import Principal
from sparkgate.auth.tables import OWNERSHIP, PRIVILEGES, SESSION_CATALOG, Explanation, explain
from sparkgate.auth.users import Users
from sparkgate.errors import Forbidden, InvalidRequest
from sparkgate.store import Store
from sparkgate.store.table_access import GrantRecord, TableName


def table_name(text: str) -> TableName:
    """``hr.salaries`` or ``spark_catalog.hr.salaries`` (backquotes allowed)."""
    parts = [p.strip().strip("`") for p in text.split(".")]
    if len(parts) == 2:
        parts.insert(0, SESSION_CATALOG)
    if len(parts) != 3 or not all(parts):
        raise InvalidRequest(
            f"Name a table as schema.table or catalog.schema.table, not {text!r}.", table=text
        )
    return TableName.of(*parts)


@dataclass(frozen=True)
class TableGrants:
    table: TableName
    owner: str | None
    grants: list[GrantRecord]


@dataclass
class DataAccess:
    store: Store
    users: Users

    def explain(self, *, user: Principal, who: str, privilege: str, table: str) -> Explanation:
        """Why ``who`` may or may not use ``privilege`` on ``table`` (admins only)."""
        self.users.require_admin(user, "explain access", target=f"table:{table}")
        wanted = privilege.strip().upper()
        if wanted not in PRIVILEGES:
            raise InvalidRequest(
                f"Unknown privilege {privilege!r}; privileges are {', '.join(PRIVILEGES)}.",
                privilege=privilege,
            )
        name = table_name(table)
        rules = self.users.rules()
        groups = rules.groups_of(who)
        facts = self.store.table_access.facts(name)
        explained = explain(
            rules.tables,
            who,
            groups,
            name.catalog,
            name.schema,
            name.table,
            wanted,
            admin=rules.is_admin(who, groups),
            owner=facts.owner,
            grants=facts.as_triples(),
        )
        if (
            not explained.allowed
            and wanted == OWNERSHIP
            and rules.tables is not None
            and rules.tables.owns_schema(who, groups, name.catalog, name.schema)
        ):
            reasons = (
                *explained.reasons[:-1],
                f"{who} owns schema {name.schema}",
                f"{wanted}: allowed",
            )
            return Explanation(True, explained.access, reasons)
        return explained

    def grants(self, *, user: Principal, table: str) -> TableGrants:
        """A table's owner and grants: for admins and the owner."""
        name = table_name(table)
        facts = self.store.table_access.facts(name)
        if not user.admin and user.name != facts.owner:
            raise Forbidden(f"Only the owner of {name.dotted} or an admin sees its grants.")
        return TableGrants(name, facts.owner, facts.grants)
