"""Data access control: ``GET /v1/access/explain`` (admins) and
``GET /v1/tables/{table}/grants`` (the table's owner and admins)."""

from __future__ import annotations

from fastapi import APIRouter

from sparkgate.http.deps import ServiceDep, UserDep
from sparkgate.http.openapi import refusals
from sparkgate.schemas.users import AccessExplanation, TableGrant, TableGrants

router = APIRouter(tags=["access"])


@router.get(
    "/v1/access/explain",
    response_model=AccessExplanation,
    responses=refusals({403: "Admins only.", 422: "Unknown privilege or table name."}),
)
def explain_access(
    service: ServiceDep, user: UserDep, who: str, privilege: str, table: str
) -> AccessExplanation:
    """``?who=bob&privilege=SELECT&table=hr.salaries``: the table rule, ownership and grants
    that decide, the columns hidden and masked and the rows filtered, and the answer."""
    explained = service.data_access.explain(user=user, who=who, privilege=privilege, table=table)
    access = explained.access
    return AccessExplanation(
        user=who,
        privilege=privilege.upper(),
        table=table,
        allowed=explained.allowed,
        privileges=sorted(access.privileges),
        hidden_columns=sorted(access.hidden),
        masks=access.masks,
        row_filter=access.filter,
        reasons=list(explained.reasons),
    )


@router.get(
    "/v1/tables/{table}/grants",
    response_model=TableGrants,
    responses=refusals({403: "Not the table's owner or an admin.", 422: "Not a table name."}),
)
def table_grants(service: ServiceDep, user: UserDep, table: str) -> TableGrants:
    """A table's owner (who created it through sparkgate) and its grants."""
    found = service.data_access.grants(user=user, table=table)
    return TableGrants(
        table=found.table.dotted,
        owner=found.owner,
        grants=[TableGrant.of(g) for g in found.grants],
    )
