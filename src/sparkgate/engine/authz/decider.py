"""The policy the engine's SQL extension asks (``sparkgate.authz.Decider``, through py4j):
the access file's table rules, plus owners and grants from the store.

The extension keeps each answer for a second, so a table's decision costs one call per second
per user, not one per query; a GRANT or REVOKE in this engine is seen at once, one made in
another engine within that second. An answer is kept only for the very table it was about
(``Authz.objOf``'s version): a table dropped and made again is asked about afresh.
"""

from __future__ import annotations

import json
import logging
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from sparkgate.auth.access import CODE, Access, AccessRules
from sparkgate.auth.tables import GRANT_SELECT, GRANTABLE, OWNERSHIP, SELECT, effective
from sparkgate.auth.tables import Access as TableAccess
from sparkgate.recorded import ErrorCode
from sparkgate.runtime.identity import SYSTEM_USER, bind
from sparkgate.store import Store
from sparkgate.store.table_access import TableName

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

log = logging.getLogger("sparkgate.engine")


class Decider:
    """Implements the JVM's ``sparkgate.authz.Decider``. Every callback fails closed: an
    error while deciding is logged and answered as no access."""

    class Java:
        implements = ["sparkgate.authz.Decider", "sparkgate.authz.SchemaLister"]

    def __init__(
        self, access: Access, store: Store, clock: Callable[[], float] = time.time
    ) -> None:
        self.access = access
        self.store = store
        self.clock = clock
        # What each user's latest session said of their groups (from LDAP or a JWT): the
        # access file alone does not know them.
        self._signed_in_groups: dict[str, frozenset[str]] = {}

    def learn_groups(self, user: str, groups: list[str]) -> bool:
        """Whether they changed (the extension's answers about the user are then stale)."""
        known = frozenset(groups)
        changed = self._signed_in_groups.get(user) != known
        self._signed_in_groups[user] = known
        return changed

    def _rules(self) -> AccessRules:
        return self.access.rules()

    def _groups(self, rules: AccessRules, user: str) -> frozenset[str]:
        return rules.groups_of(user, self._signed_in_groups.get(user, frozenset()))

    def decision(self, user: str, name: TableName) -> TableAccess:
        rules = self._rules()
        groups = self._groups(rules, user)
        facts = self.store.table_access.facts(name)
        return effective(
            rules.tables,
            user,
            groups,
            name.catalog,
            name.schema,
            name.table,
            admin=rules.is_admin(user, groups),
            owner=facts.owner,
            grants=facts.as_triples(),
        )

    # -- the JVM's callbacks -------------------------------------------------------------

    def active(self) -> bool:
        try:
            return self._rules().tables is not None
        except Exception:
            log.exception("access control: reading the rules failed")
            return True

    def decide(self, user: str, catalog: str, schema: str, table: str) -> str:
        try:
            access = self.decision(user, TableName.of(catalog, schema, table))
        except Exception:
            log.exception(
                "access control: deciding %s on %s.%s.%s failed", user, catalog, schema, table
            )
            access = TableAccess()
        return json.dumps(
            {
                "privileges": sorted(access.privileges),
                "hidden": sorted(access.hidden),
                "masks": access.masks,
                "filter": access.filter,
            }
        )

    def ownsSchema(self, user: str, catalog: str, schema: str) -> bool:
        try:
            rules = self._rules()
            groups = self._groups(rules, user)
            if rules.is_admin(user, groups):
                return True
            return rules.tables is not None and rules.tables.owns_schema(
                user, groups, catalog, schema
            )
        except Exception:
            log.exception("access control: schema ownership of %s failed", schema)
            return False

    def visibleSchemas(self, user: str, catalog: str, schemas: str) -> str:
        """Of ``schemas`` (JSON), those a listing shows ``user``: every one to an admin;
        else those a rule names for them (or makes theirs) and those holding a table they
        own or were granted something on."""
        names: list[str] = json.loads(schemas)
        try:
            rules = self._rules()
            groups = self._groups(rules, user)
            if rules.tables is None or rules.is_admin(user, groups):
                return json.dumps(names)
            stored = self.store.table_access.schemas_of(catalog, user, groups)
            shown = [
                name
                for name in names
                if name.lower() in stored or rules.tables.names_schema(user, groups, catalog, name)
            ]
        except Exception:
            log.exception("access control: listing the schemas %s may see failed", user)
            shown = []
        return json.dumps(shown)

    def hasCode(self, user: str) -> bool:
        try:
            rules = self._rules()
            return CODE in rules.rights_of(user, self._groups(rules, user))
        except Exception:
            log.exception("access control: rights of %s failed", user)
            return False

    def isMember(self, user: str, group: str) -> bool:
        try:
            return group in self._groups(self._rules(), user)
        except Exception:
            log.exception("access control: groups of %s failed", user)
            return False

    def ownerOf(self, catalog: str, schema: str, table: str) -> str | None:
        try:
            return self.store.table_access.owner(TableName.of(catalog, schema, table))
        except Exception:
            log.exception("access control: owner of %s.%s failed", schema, table)
            return None

    def changed(
        self,
        user: str,
        action: str,
        catalog: str,
        schema: str,
        table: str,
        to_schema: str | None,
        to_table: str | None,
    ) -> None:
        name = TableName.of(catalog, schema, table)
        try:
            if action == "created":
                self.store.table_access.created(name, user, now=self.clock())
            elif action == "dropped":
                self.store.table_access.dropped(name)
            elif action == "renamed" and to_schema and to_table:
                self.store.table_access.renamed(name, TableName.of(catalog, to_schema, to_table))
        except Exception:
            log.exception("access control: recording %s %s failed", action, name.dotted)

    def grant(
        self,
        user: str,
        revoke: bool,
        privileges: str,
        catalog: str,
        schema: str,
        table: str,
        grantee_kind: str,
        grantee: str,
    ) -> str | None:
        name = TableName.of(catalog, schema, table)
        asked = [p for p in privileges.split(",") if p]
        verb = "revoke" if revoke else "grant"
        unknown = [p for p in asked if p not in GRANTABLE]
        if unknown:
            return f"{verb.upper()} takes {', '.join(GRANTABLE)}, not {', '.join(unknown)}"
        try:
            held = self.decision(user, name).privileges
            may = OWNERSHIP in held or (asked == [SELECT] and GRANT_SELECT in held)
            if not may:
                self._audit(
                    user, verb, name, "denied", {"privileges": asked, grantee_kind: grantee}
                )
                return f"INSUFFICIENT_PRIVILEGE: {user} does not own {name.dotted}"
            if revoke:
                self.store.table_access.revoke(name, grantee_kind, grantee, asked)
            else:
                self.store.table_access.grant(
                    name, grantee_kind, grantee, asked, user, now=self.clock()
                )
            self._audit(user, verb, name, "ok", {"privileges": asked, grantee_kind: grantee})
            return None
        except Exception as exc:
            log.exception("access control: %s on %s failed", verb, name.dotted)
            return f"{verb.upper()} failed: {exc}"

    def grants(self, user: str, catalog: str, schema: str, table: str) -> str:
        name = TableName.of(catalog, schema, table)
        rows: list[list[Any]] = []
        try:
            if self.decision(user, name).privileges:
                rows = [
                    [
                        g.grantee_kind.upper(),
                        g.grantee,
                        g.privilege,
                        g.granted_by,
                        _iso(g.granted_at),
                    ]
                    for g in self.store.table_access.grants(name)
                ]
        except Exception:
            log.exception("access control: listing grants on %s failed", name.dotted)
        return json.dumps(rows)

    def denied(self, user: str, privilege: str, obj: str) -> None:
        try:
            self.store.audit.add(
                f"table.{privilege.lower()}",
                "denied",
                now=self.clock(),
                user=user,
                target=f"table:{obj}",
                detail=ErrorCode.INSUFFICIENT_PRIVILEGE.detail(privilege=privilege, object=obj),
            )
        except Exception:
            log.exception("access control: auditing a refusal failed")

    def _audit(
        self, user: str, verb: str, name: TableName, outcome: str, detail: dict[str, Any]
    ) -> None:
        self.store.audit.add(
            f"table.{verb}",
            outcome,
            now=self.clock(),
            user=user,
            target=f"table:{name.dotted}",
            detail=detail,
        )


def _iso(at: float) -> str:
    return time.strftime("%Y-%m-%d %H:%M:%S", time.gmtime(at))


def _authz(spark: SparkSession) -> Any:
    jvm = spark.sparkContext._jvm
    assert jvm is not None
    return jvm.java.lang.Class.forName("sparkgate.authz.Authz$").getField("MODULE$").get(None)


def install(spark: SparkSession, decider: Decider) -> Any:
    """Give the engine's extension its policy; the root session is the engine's own. The
    extension's ``Authz`` object (to invalidate its decisions)."""
    from pyspark.java_gateway import ensure_callback_server_started

    gateway = spark.sparkContext._gateway
    assert gateway is not None
    ensure_callback_server_started(gateway)  # type: ignore[no-untyped-call]
    module = _authz(spark)
    module.install(decider)
    bind(spark, SYSTEM_USER)
    return module


__all__ = ["Decider", "bind", "install"]
