"""The audit log: ``GET /v1/audit`` (admins)."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Query

from sparkgate.http.deps import ServiceDep, UserDep
from sparkgate.http.openapi import refusals
from sparkgate.http.paging import ListParams
from sparkgate.http.params import Since
from sparkgate.schemas.users import AuditEvent, AuditList

router = APIRouter(tags=["audit"])


@router.get("/v1/audit", response_model=AuditList, responses=refusals({403: "Admins only."}))
def list_audit(
    service: ServiceDep,
    user: UserDep,
    listing: ListParams,
    by: Annotated[str | None, Query(alias="user")] = None,
    action: str | None = None,
    outcome: str | None = None,
    since: Since = None,
    obj: Annotated[str | None, Query(alias="object")] = None,
) -> AuditList:
    """Events, newest first: ``?user=bob&action=session&outcome=denied&since=<epoch>``
    (``action`` matches a prefix: ``session`` finds ``session.create`` and
    ``session.kill``; ``object=hr.salaries``: who read, changed, granted or was refused that
    table); the next page is ``?after=<next>``."""
    page = service.accounts.audit_events(
        user=user,
        by=by,
        action=action,
        outcome=outcome,
        since=since,
        obj=obj,
        window=listing.window(),
    )
    return AuditList(events=[AuditEvent.of(e) for e in page.items], **listing.paging(page))
