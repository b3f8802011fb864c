"""Usage reports: what queries cost (the costs their engines recorded), summed by user, by
the access file's groups, by resource group or by a tag's value, and optionally by day. Users
see their own; admins everyone's, or one user's."""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field

from sparkgate.auth.principal import Principal
from sparkgate.auth.users import Users
from sparkgate.errors import InvalidRequest
from sparkgate.pricing import Money, Prices
from sparkgate.service.visibility import list_owner
from sparkgate.statement_cost import StatementCost
from sparkgate.store import Store
from sparkgate.store.usage import DAY, RESOURCE_GROUP, USER, By, Usage

GROUP = "group"
GROUP_BY = (USER, GROUP, RESOURCE_GROUP, "tag:<key>")
HOUR = 3600.0
BUCKETS = {"day": DAY, "hour": HOUR}


@dataclass
class UsageService:
    store: Store
    users: Users
    prices: Prices = field(default_factory=Prices)

    def price(self, cost: StatementCost) -> Money | None:
        """A row's cost in money at the prices set (None: no price set)."""
        return self.prices.money(cost)

    def report(
        self,
        *,
        user: Principal,
        group_by: str = USER,
        since: float | None = None,
        until: float | None = None,
        bucket: str | None = None,
        owner: str | None = None,
    ) -> list[Usage]:
        by = _by(group_by)
        if bucket is not None and bucket not in BUCKETS:
            raise InvalidRequest(
                f"bucket: {bucket!r} is not a bucket; use " + ", ".join(BUCKETS) + ".",
                field="bucket",
            )
        if since is not None and until is not None and until <= since:
            raise InvalidRequest("until: it must come after since.", field="until")
        rows = self.store.usage.report(
            since=since,
            until=until,
            owner=list_owner(user, owner),
            bucket=BUCKETS[bucket] if bucket else None,
            by=USER if by == GROUP else by,
        )
        return self._by_group(rows) if by == GROUP else rows

    def _by_group(self, rows: list[Usage]) -> list[Usage]:
        """Users' rows summed by the access file's groups as they are now (a user in two
        groups counts in both; a user in none, under no group)."""
        rules = self.users.rules()
        summed: dict[tuple[str | None, float | None], list[Usage]] = defaultdict(list)
        for row in rows:
            groups: list[str | None] = []
            if row.key is not None:
                groups.extend(sorted(rules.groups_of(row.key)))
            for group in groups or [None]:
                summed[(group, row.bucket)].append(row)
        return [
            Usage(
                key=group,
                bucket=bucket,
                queries=sum(r.queries for r in parts),
                cost=StatementCost.total(r.cost for r in parts),
            )
            for (group, bucket), parts in sorted(
                summed.items(), key=lambda item: (item[0][0] or "", item[0][1] or 0.0)
            )
        ]


def _by(group_by: str) -> By:
    if group_by in (USER, GROUP, RESOURCE_GROUP):
        return group_by
    if group_by.startswith("tag:") and group_by[4:]:
        return ("tag", group_by[4:])
    raise InvalidRequest(
        f"group_by: {group_by!r} is not a key usage is kept by; it is kept by "
        + ", ".join(GROUP_BY)
        + ".",
        field="group_by",
    )
