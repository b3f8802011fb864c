"""Usage reports: ``GET /v1/usage``."""

from __future__ import annotations

from typing import TYPE_CHECKING

from pydantic import Field

from sparkgate.pricing import Money
from sparkgate.schemas.common import Body, OptionalTimestamp
from sparkgate.statement_cost import StatementCost

if TYPE_CHECKING:  # the records its models are built from, for the type checker only
    from sparkgate.store.usage import Usage


class UsageRow(Body):
    key: str | None = Field(
        description="What the row sums by: a user, a group, a resource group or a tag's "
        "value (null: without authentication, in no group, untagged)."
    )
    user: str | None = Field(
        description="The queries' owner, when grouped by user (null: without authentication)."
    )
    bucket: OptionalTimestamp = Field(description="The bucket's start (UTC); null: no buckets.")
    queries: int = Field(description="Ended queries whose Spark tasks ran.")
    cost: StatementCost = Field(description="Their costs summed (the peak: the largest).")
    price: Money | None = Field(
        default=None,
        description="Their cost in money at the prices set (settings `price_per_cpu_second`, "
        "`price_per_gb_read`, `price_per_gb_shuffled`); null when no price is set.",
    )

    @classmethod
    def of(cls, usage: Usage, group_by: str = "user", price: Money | None = None) -> UsageRow:
        return cls.model_validate(
            {
                "key": usage.key,
                "user": usage.key if group_by == "user" else None,
                "bucket": usage.bucket,
                "queries": usage.queries,
                "cost": usage.cost,
                "price": price,
            }
        )


class UsageReport(Body):
    """What queries that ended in ``[since, until)`` cost, summed from their recorded costs."""

    group_by: str
    bucket: str | None
    since: OptionalTimestamp
    until: OptionalTimestamp
    rows: list[UsageRow]
