"""A file into a table: ``POST /v1/tables/{name}/data``."""

from __future__ import annotations

import asyncio
import re
from typing import Annotated

from fastapi import APIRouter, Query, Request

from sparkgate.api.routes.queries import accepted
from sparkgate.http.deps import ServiceDep, UserDep
from sparkgate.http.openapi import refusals
from sparkgate.http.params import PageLimit, Wait, created
from sparkgate.schemas.queries import Submitted
from sparkgate.tables.uploads import LoadFormat, LoadMode
from sparkgate.tags import from_words

router = APIRouter(tags=["tables"])

# Bodies this route streams to disk: the request body limit does not hold them in memory
# (http.limits.BodyLimit), the load's own limit does.
STREAMED_BODIES = re.compile(r"^/v1/tables/[^/]+/data$")


@router.post(
    "/v1/tables/{name}/data",
    status_code=201,
    response_model=Submitted,
    responses=created("The load, queued as a one-off query of the uploader.")
    | refusals(
        {
            403: "The `sql` right is missing.",
            413: "The file is larger than `SPARKGATE_LOAD_MAX_BYTES` (`PAYLOAD_TOO_LARGE`).",
            422: "Not a table name, an unknown format or mode, a schema for a Parquet file, a "
            "bad tag (`INVALID_REQUEST`), or an empty file (`FILE_EMPTY`).",
            429: "The user has `running_queries_per_user` queries waiting or running.",
        }
    ),
    openapi_extra={
        "requestBody": {
            "required": True,
            "description": "The file's bytes, as they are (streamed; not held in memory).",
            "content": {"application/octet-stream": {"schema": {"type": "string"}}},
        }
    },
)
async def load_table(
    name: str,
    request: Request,
    service: ServiceDep,
    user: UserDep,
    format: LoadFormat = LoadFormat.CSV,
    mode: LoadMode = LoadMode.CREATE,
    header: bool = False,
    schema: Annotated[str | None, Query(description='Columns, e.g. "a INT, b STRING".')] = None,
    filename: Annotated[str | None, Query(description="The file's name, for the record.")] = None,
    tag: Annotated[
        list[str] | None,
        Query(description="A tag of the load's query, `key=value`; repeated for more."),
    ] = None,
    wait: Wait = 0,
    limit: PageLimit = None,
) -> Submitted:
    """Load the body into table ``name`` (``schema.table``, or ``table`` in ``default``) as a
    one-off query of yours: ``?format=csv&header=true&mode=create``. ``create`` makes a new
    table (schema inferred unless ``schema`` is given; owning the table's schema is needed),
    ``append`` and ``overwrite`` write into an existing one (its columns, unless ``schema`` is
    given; ``INSERT``, and ``DELETE`` to overwrite). The table changes whole or not at all; a
    row that does not fit fails the load (``BAD_RECORD``, with the file's line and column).
    ``?wait=`` as for ``POST /v1/queries``; ``?tag=team=finance`` tags the load's query."""
    pending = await asyncio.to_thread(
        service.loads.prepare,
        user=user,
        table=name,
        format=format,
        mode=mode,
        header=header,
        schema=schema,
        filename=filename,
        tags=from_words(tag or (), field="tag"),
    )
    length = request.headers.get("content-length", "")
    declared = int(length) if length.isdigit() else None
    size = await service.loads.receive(pending, request.stream(), declared)
    statement = await asyncio.to_thread(service.loads.submit, pending, size, user=user)
    return await accepted(service, statement, wait, limit)
