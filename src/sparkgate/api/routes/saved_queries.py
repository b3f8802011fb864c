"""Saved queries: ``/v1/saved-queries``."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter
from pydantic import AfterValidator, BaseModel, ConfigDict, Field

from sparkgate import tags as query_tags
from sparkgate.errors import InvalidRequest
from sparkgate.http.deps import ServiceDep, UserDep
from sparkgate.http.openapi import refusals
from sparkgate.http.paging import ListParams
from sparkgate.http.params import Id, Search
from sparkgate.schemas.saved_queries import SavedQuery, SavedQueryList
from sparkgate.store.saved_queries import SavedQueryChanges

router = APIRouter(prefix="/v1/saved-queries", tags=["saved queries"])

# A saved query's text is at most this many bytes (UTF-8): a megabyte is far more SQL than
# anyone writes by hand, and every list answer carries the whole text.
SQL_MAX_BYTES = 1024 * 1024
NAME_MAX = 200


def _storable(value: str) -> str:
    """Text both stores keep: PostgreSQL refuses NUL, and no store encodes a lone surrogate
    (which JSON's escapes can carry)."""
    if "\x00" in value:
        raise ValueError("NUL characters cannot be kept")
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:
        raise ValueError("the text is not valid Unicode (a lone surrogate)") from None
    return value


def _name(value: str) -> str:
    if not value.isprintable() or not value.strip():
        raise ValueError("a name is 1 to 200 printable characters, not only spaces")
    return value


def _sql(value: str) -> str:
    if not value.strip():
        raise ValueError("the SQL is empty")
    size = len(_storable(value).encode("utf-8"))
    if size > SQL_MAX_BYTES:
        raise ValueError(f"the SQL is {size} bytes; at most {SQL_MAX_BYTES} are kept")
    return value


def _tags(value: dict[str, str] | None) -> dict[str, str] | None:
    for tag in (value or {}).values():
        _storable(tag)
    return value


Name = Annotated[str, Field(min_length=1, max_length=NAME_MAX), AfterValidator(_name)]
Sql = Annotated[
    str,
    Field(min_length=1, description=f"At most {SQL_MAX_BYTES} bytes (UTF-8)."),
    AfterValidator(_sql),
]
Group = Annotated[
    str | None,
    Field(
        min_length=1,
        max_length=255,
        description="A group of yours to share it with (admins: any); null: private.",
    ),
    AfterValidator(lambda value: value if value is None else _storable(value)),
]
Description = Annotated[
    str | None,
    Field(max_length=10_000),
    AfterValidator(lambda value: value if value is None else _storable(value)),
]
Tags = Annotated[dict[str, str] | None, AfterValidator(_tags)]


class SavedQueryCreate(BaseModel):
    model_config = ConfigDict(extra="forbid")

    name: Name
    sql: Sql
    group: Group = None
    description: Description = None
    tags: Tags = None


class SavedQueryUpdate(BaseModel):
    """The fields to change; those left out stay as they are (``group: null`` makes it
    private)."""

    model_config = ConfigDict(extra="forbid")

    name: Name | None = None
    sql: Sql | None = None
    group: Group = None
    description: Description = None
    tags: Tags = None


@router.get("", response_model=SavedQueryList)
def list_saved_queries(
    service: ServiceDep,
    user: UserDep,
    listing: ListParams,
    q: Search = None,
    owner: str | None = None,
) -> SavedQueryList:
    """Your saved queries and those shared with your groups, newest change first:
    ``?q=revenue`` (name or SQL, any case), ``?owner=bob`` (admins: anyone's, shared or not);
    the next page is ``?after=<next>``."""
    page = service.saved_queries.list_page(
        user=user, owner=owner, search=q, window=listing.window(by_name=True)
    )
    return SavedQueryList(
        saved_queries=[SavedQuery.of(r) for r in page.items], **listing.paging(page)
    )


@router.post(
    "",
    status_code=201,
    response_model=SavedQuery,
    responses=refusals(
        {
            403: "`group` is not one of yours (admins may name any).",
            409: "You have a saved query of that name (`SAVED_QUERY_EXISTS`).",
        }
    ),
)
def create_saved_query(body: SavedQueryCreate, service: ServiceDep, user: UserDep) -> SavedQuery:
    """Save a query: ``{"name": "daily revenue", "sql": "SELECT ...", "group": "analysts"}``;
    without ``group`` only you see it."""
    record = service.saved_queries.add(
        user=user,
        name=body.name,
        sql=body.sql,
        group=body.group,
        description=body.description,
        tags=query_tags.checked(body.tags),
    )
    return SavedQuery.of(record)


@router.get("/{saved_id}", response_model=SavedQuery)
def get_saved_query(saved_id: Id, service: ServiceDep, user: UserDep) -> SavedQuery:
    """One saved query: yours, or shared with one of your groups."""
    return SavedQuery.of(service.saved_queries.get(saved_id, user=user))


@router.put(
    "/{saved_id}",
    response_model=SavedQuery,
    responses=refusals(
        {
            403: "It is shared with you but not yours: only its owner changes it; or `group` "
            "is not one of yours.",
            409: "You have another saved query of the new name (`SAVED_QUERY_EXISTS`).",
        }
    ),
)
def update_saved_query(
    saved_id: Id, body: SavedQueryUpdate, service: ServiceDep, user: UserDep
) -> SavedQuery:
    """Change a saved query of yours: ``{"sql": "SELECT ..."}`` changes only the SQL;
    ``{"group": null}`` makes it private."""
    given = body.model_fields_set
    if not given:
        raise InvalidRequest("Nothing to change: give name, sql, group, description or tags.")
    for required in ("name", "sql"):
        if required in given and getattr(body, required) is None:
            raise InvalidRequest(f"{required}: cannot be null.", field=required)
    changes = SavedQueryChanges(
        name=body.name,
        sql=body.sql,
        description=body.description,
        group_name=body.group,
        tags=query_tags.checked(body.tags) if "tags" in given else None,
        given=frozenset({"group": "group_name"}.get(key, key) for key in given if key != "tags"),
    )
    return SavedQuery.of(service.saved_queries.update(saved_id, changes, user=user))


@router.delete(
    "/{saved_id}",
    response_model=SavedQuery,
    responses=refusals({403: "It is shared with you but not yours (admins may delete it)."}),
)
def delete_saved_query(saved_id: Id, service: ServiceDep, user: UserDep) -> SavedQuery:
    """Delete a saved query of yours (admins: anyone's); the answer is what was deleted."""
    return SavedQuery.of(service.saved_queries.delete(saved_id, user=user))
