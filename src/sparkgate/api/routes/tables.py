"""The catalog: ``GET /v1/tables`` and ``GET /v1/tables/{name}``.

A table's grants (``/v1/tables/{table}/grants``) are in ``access.py``; its path has one more
segment, so ``{name}`` here never takes it.
"""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter

from sparkgate.http.deps import ServiceDep, UserDep
from sparkgate.http.openapi import refusals
from sparkgate.schemas import tables as bodies
from sparkgate.service.catalog import listing_view, table_view

router = APIRouter(prefix="/v1/tables", tags=["tables"])


def _catalog_refusals(not_found: str, invalid: str) -> dict[int | str, dict[str, Any]]:
    """A catalog route's refusals: it runs a catalog query as the caller, so those of a query,
    and its own 404 and 422."""
    return refusals(
        {
            403: "The `sql` right is missing.",
            404: not_found,
            422: invalid,
            429: "The user has `running_queries_per_user` queries waiting or running.",
            503: "The catalog query failed in its engine (`CATALOG_UNAVAILABLE`, naming the "
            "query), the store is unreachable (`STORE_UNAVAILABLE`); send it again after "
            "`Retry-After` seconds.",
        }
    )


@router.get(
    "",
    response_model=bodies.CatalogListing,
    responses=_catalog_refusals(
        "`schema` names no schema (`SCHEMA_NOT_FOUND`).", "`schema` is not a schema name."
    ),
)
async def list_tables(
    service: ServiceDep, user: UserDep, schema: str | None = None
) -> bodies.CatalogListing:
    """The schemas, and in each the tables and views you may see (``?schema=hr``: one
    schema). Listed by a catalog query run as you, so the table rules decide."""
    return listing_view(await service.catalog.listing(user=user, schema=schema))


@router.get(
    "/{name}",
    response_model=bodies.TableDetail,
    responses=_catalog_refusals(
        "No such table or view, or one you may not see (`TABLE_NOT_FOUND`).",
        "`name` is not `schema.table` or `table`.",
    ),
)
async def get_table(name: str, service: ServiceDep, user: UserDep) -> bodies.TableDetail:
    """``hr.salaries`` (or ``salaries``, in ``default``): its columns, owner, size and last
    change, its first 20 rows as you read them (masks and row filters applied) and the
    recent queries that read or wrote it (yours; admins see everyone's)."""
    return table_view(await service.catalog.table(name, user=user))
