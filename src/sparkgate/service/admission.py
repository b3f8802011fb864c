"""Admission: which resource group a query waits its turn in (the access file's
``resource_groups:``, Trino's format: ``auth.resource_groups``), and the queue's safety net.

The queue and the turns are the store's (``store.resource_groups``): a statement is placed in
its group when it is recorded, and each end admits the next in the same transaction. This
module places (selectors match the session's owner, their groups, the door and the kind of
work), keeps the store's copy of the groups in step with the access file, and, on a slow timer,
admits what an end did not (a limit raised, groups removed, an end written by a release before).
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Mapping

from sparkgate.auth.access import AccessRules
from sparkgate.auth.resource_groups import ResourceGroups, expand
from sparkgate.auth.users import Users
from sparkgate.errors import NoResourceGroup, QuotaExceeded
from sparkgate.states import SessionKind
from sparkgate.store import Store
from sparkgate.store.session_attributes import SessionAttributes
from sparkgate.tags import words

log = logging.getLogger("sparkgate.service")


def source_of(attributes: SessionAttributes) -> str:
    """A selector's ``source``: the door that opened the session."""
    if attributes.door is not None:
        return attributes.door
    return "livy" if attributes.livy is not None else "rest"


def query_type_of(kind: SessionKind, attributes: SessionAttributes) -> str:
    """A selector's ``queryType``: interactive, one-off, batch, stream or connect."""
    if attributes.door == "connect":
        return "connect"  # a Spark Connect operation
    if attributes.job is not None:
        return "batch"  # a step of a manifest job's run
    if kind is SessionKind.INTERACTIVE:
        return "interactive"
    if kind is SessionKind.STREAMING:
        return "stream"
    return "one-off" if attributes.isolation is not None else "batch"


class Admission:
    def __init__(self, store: Store, users: Users, clock: Callable[[], float] = time.time) -> None:
        self.store = store
        self.users = users
        self.clock = clock
        self._synced: ResourceGroups | bool | None = False  # False: never synced

    def group_for(
        self,
        owner: str,
        groups: frozenset[str],
        kind: SessionKind,
        attributes: SessionAttributes,
        tags: Mapping[str, str] | None = None,
    ) -> str | None:
        """The group a statement of this session waits in; None without resource groups.
        Raises ``NoResourceGroup`` when groups exist and no selector takes it (as Trino), and
        ``QuotaExceeded`` when a quota of the owner is spent (``onQuota: reject``); a spent
        quota with ``onQuota: demote`` places it in its ``demoteTo`` group."""
        rules = self.users.rules()  # once: each read looks at the access file's stamp
        configured = self.sync(rules)
        if configured is None and not rules.quotas:
            return None  # the common case, on every statement's submit: nothing to decide
        source, query_type = source_of(attributes), query_type_of(kind, attributes)
        known = rules.groups_of(owner, groups)
        demote_to = self.check_quotas(owner, known, rules)
        if configured is None:
            return None
        if demote_to is not None:
            return expand(demote_to, {"USER": owner, "SOURCE": source})
        group = configured.place(
            owner, known, source=source, query_type=query_type, tags=words(tags or {})
        )
        if group is None:
            raise NoResourceGroup(owner, source, query_type)
        return group

    def check_quotas(
        self, owner: str, groups: frozenset[str], rules: AccessRules | None = None
    ) -> str | None:
        """Refuse (``QuotaExceeded``) when a quota of ``owner`` is spent and rejects; the group
        to demote to when one is spent and demotes; else None."""
        rules = rules or self.users.rules()
        now = self.clock()
        for quota in rules.quotas:
            if not quota.applies(owner, groups):
                continue
            start, resets_at = quota.period(now)
            members = [owner] if quota.group is None else rules.members_of(quota.group, owner)
            cpu, run = self.store.usage.spent(members, start)
            spent = cpu if quota.cpu else run
            if spent < quota.seconds:
                continue
            if quota.demote_to is not None:
                log.info("%s: quota %s spent; demoted to %s", owner, quota.name, quota.demote_to)
                return quota.demote_to
            raise QuotaExceeded(quota.name, spent, resets_at, now)
        return None

    def sync(self, rules: AccessRules | None = None) -> ResourceGroups | None:
        """The groups in force, written to the store when they changed since this node did."""
        configured = (rules or self.users.rules()).resource_groups
        if not self.store.resource_groups.present():
            # A node pinned to a schema before resource groups (a rolling upgrade's old
            # release): nothing queues, as before them.
            if configured is not None and configured is not self._synced:
                log.warning("resource groups are ignored: the store's schema has no queue yet")
                self._synced = configured
            return None
        if configured is not self._synced:
            specs = () if configured is None else configured.specs
            with self.store.db.begin() as conn:
                if self.store.resource_groups.sync(conn, specs):
                    log.info("resource groups: %d group(s) in force", len(specs))
            self._synced = configured
        return configured

    def settle(self, now: float) -> list[int]:
        """Admit queued statements whose groups have room (a duty; see the module's doc)."""
        self.sync()
        admitted: list[int] = []
        for root in self.store.resource_groups.queued_roots():
            with self.store.db.begin() as conn:
                admitted += self.store.transitions.admit(root, now=now, conn=conn)
        if admitted:
            log.info("admitted queued queries %s", admitted)
        return admitted
