"""Dashboard pages for the catalog: the schemas and the tables and views the signed-in user may
see, and one table's columns, owner, size, last change, first rows and recent queries.

Each page calls the service with the signed-in user, as ``/v1/tables`` does, and renders the
same views (``service.catalog``): the engine decides, as the user, what they may see.
"""

from __future__ import annotations

from fastapi import APIRouter, Request
from fastapi.responses import HTMLResponse
from rich.filesize import decimal

from sparkgate.http.deps import ServiceDep, UserDep
from sparkgate.service.catalog import listing_view, table_view
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
    request: Request, name: str, service: ServiceDep, user: UserDep
) -> HTMLResponse:
    table = table_view(await service.catalog.table(name, user=user))
    size = None if table.size_bytes is None else decimal(table.size_bytes)
    return render(request, "table.html", table=table, size=size)
