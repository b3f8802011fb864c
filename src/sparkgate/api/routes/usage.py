"""Usage: ``GET /v1/usage``."""

from __future__ import annotations

from typing import Annotated, Literal

from fastapi import APIRouter, Query

from sparkgate.http.deps import ServiceDep, UserDep
from sparkgate.http.openapi import refusals
from sparkgate.schemas.usage import UsageReport, UsageRow

router = APIRouter(tags=["usage"])

Epoch = Annotated[float | None, Query(allow_inf_nan=False, description="Epoch seconds.")]


@router.get(
    "/v1/usage",
    response_model=UsageReport,
    responses=refusals({422: "An unknown `group_by` or `bucket`, or `until` before `since`."}),
)
def usage(
    service: ServiceDep,
    user: UserDep,
    group_by: str = "user",
    since: Epoch = None,
    until: Epoch = None,
    bucket: Literal["day"] | None = None,
    owner: Annotated[str | None, Query(alias="user")] = None,
) -> UsageReport:
    """What your queries that ended in ``[since, until)`` cost, by ``group_by`` (``user``,
    ``group``: the access file's groups as they are now, ``resource_group``, or ``tag:<key>``:
    a tag's value) and, with ``?bucket=day``, by day (UTC): the sums of their costs (see
    ``GET /v1/queries/{id}``). Admins see everyone's, or ``?user=``'s."""
    rows = service.usage.report(
        user=user, group_by=group_by, since=since, until=until, bucket=bucket, owner=owner
    )
    # Validated, not constructed: the span's epoch seconds become the answer's timestamps.
    return UsageReport.model_validate(
        {
            "group_by": group_by,
            "bucket": bucket,
            "since": since,
            "until": until,
            "rows": [UsageRow.of(row, group_by, service.usage.price(row.cost)) for row in rows],
        }
    )
