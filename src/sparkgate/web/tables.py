"""Dashboard pages for the catalog: the schemas and the tables and views the signed-in user may
see, and one table's columns, owner, size, last change, first rows, recent queries and who
used it (its access history).

Each page calls the service with the signed-in user, as ``/v1/tables`` does, and renders the
same views (``service.catalog``): the engine decides, as the user, what they may see.
"""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Query, Request
from fastapi.responses import HTMLResponse
from rich.filesize import decimal

from sparkgate.http.deps import ServiceDep, UserDep
from sparkgate.http.paging import window
from sparkgate.schemas.users import AuditEvent
from sparkgate.service.catalog import listing_view, table_view
from sparkgate.web.paging import PAGE, shown
from sparkgate.web.templating import render

router = APIRouter(prefix="/ui", include_in_schema=False)


@router.get("/tables")
async def tables_page(
    request: Request, service: ServiceDep, user: UserDep, schema: str | None = None
) -> HTMLResponse:
    """``?schema=hr``: one schema."""
    wanted = (schema or "").strip() or None
    listing = listing_view(await service.catalog.listing(user=user, schema=wanted))
    return render(request, "tables.html", listing=listing, schema=wanted or "")


@router.get("/tables/{name}")
async def table_page(
    request: Request,
    name: str,
    service: ServiceDep,
    user: UserDep,
    after: Annotated[str | None, Query(max_length=40)] = None,
) -> HTMLResponse:
    """With who used it: the table's access history, paged (``?after=``), as ``GET
    /v1/audit?object=`` answers it to the user (the whole of it to its owner and admins)."""
    table = table_view(await service.catalog.table(name, user=user))
    size = None if table.size_bytes is None else decimal(table.size_bytes)
    filters = {"after": after or ""}
    # Not counted: a table read a million times shows a page at the cost of any other.
    history = service.accounts.audit_events(
        user=user, obj=table.name, window=window(0, PAGE, after, total=False)
    )
    used = shown(history, AuditEvent.of, filters)
    return render(request, "table.html", table=table, size=size, used=used)
