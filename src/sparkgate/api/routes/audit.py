"""The audit log and the access history: ``GET /v1/audit``."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Query

from sparkgate.http.deps import ServiceDep, UserDep
from sparkgate.http.openapi import refusals
from sparkgate.http.paging import ListParams
from sparkgate.http.params import Door, Since, Until
from sparkgate.schemas.users import AuditEvent, AuditList

router = APIRouter(tags=["audit"])


@router.get("/v1/audit", response_model=AuditList, responses=refusals({}))
def list_audit(
    service: ServiceDep,
    user: UserDep,
    listing: ListParams,
    by: Annotated[str | None, Query(alias="user")] = None,
    action: str | None = None,
    outcome: str | None = None,
    since: Since = None,
    until: Until = None,
    obj: Annotated[str | None, Query(alias="object", max_length=767)] = None,
    door: Door = None,
) -> AuditList:
    """Events, newest first: ``?user=bob&action=session&outcome=denied&since=<epoch>``
    (``action`` matches a prefix: ``session`` finds ``session.create`` and
    ``session.kill``); the access history of a table: ``?object=hr.salaries`` (who read,
    wrote, granted or was refused it: ``action=table.select`` for reads), by ``door`` and
    time (``since``, ``until``); the next page is ``?after=<next>``. Admins see every
    event, a user their own and the whole history of a table they own."""
    page = service.accounts.audit_events(
        user=user,
        by=by,
        action=action,
        outcome=outcome,
        since=since,
        until=until,
        obj=obj,
        door=door,
        window=listing.window(),
    )
    return AuditList(events=[AuditEvent.of(e) for e in page.items], **listing.paging(page))
