"""Native queries: ``/v1/queries``."""

from __future__ import annotations

import asyncio
from typing import Annotated, Any, Literal

from fastapi import APIRouter, Query, Response
from fastapi.responses import StreamingResponse
from pydantic import BaseModel, ConfigDict, Field

from sparkgate.errors import InvalidRequest
from sparkgate.http.deps import ServiceDep, UserDep
from sparkgate.http.openapi import refusals
from sparkgate.http.paging import ListParams
from sparkgate.http.params import (
    REPLAYED_HEADER,
    Id,
    IdempotencyKey,
    IdField,
    IdQuery,
    Offset,
    PageLimit,
    Search,
    Wait,
    created,
)
from sparkgate.result_formats import FILE_KINDS, ResultFormat, encode
from sparkgate.schemas import queries as bodies
from sparkgate.service import Service
from sparkgate.service.views import query_view, result_page_view
from sparkgate.states import StatementState
from sparkgate.store.records import StatementRecord

router = APIRouter(prefix="/v1/queries", tags=["queries"])


class QuerySubmit(BaseModel):
    model_config = ConfigDict(extra="forbid")

    query: str = Field(min_length=1)
    session_id: IdField | None = None
    # A one-off query (no session): a fresh Spark session on a warm shared engine, or an
    # engine of its own ("engine"; also taken when conf holds driver settings).
    isolation: Literal["session", "engine"] = "session"
    conf: dict[str, str] | None = None
    # Kept with the query (with its session's): usage sums by them, selectors match them.
    tags: dict[str, str] | None = None


@router.post(
    "",
    status_code=201,
    response_model=bodies.Submitted,
    responses=created("The query, queued (or a repeat's: the query its key made, as it is now).")
    | refusals(
        {
            400: "The `Idempotency-Key` is empty, too long or not printable ASCII "
            "(`IDEMPOTENCY_KEY_INVALID`). Or: the body is not JSON text: not UTF-8 "
            "(`HTTP_ERROR`).",
            403: "A right the query needs is missing (`sql`; `code` for Python; `streams` for "
            "stream statements), or a SET names a denied setting.",
            404: "`session_id` names no session of yours.",
            409: "The session takes no more statements (`SESSION_NOT_ACTIVE`), or is a batch "
            "session that has its statement (`BATCH_SESSION_USED`).",
            422: "Invalid parameters or body (`INVALID_REQUEST`), or the `Idempotency-Key` was "
            "first used for another request (`IDEMPOTENCY_KEY_REUSED`).",
            429: "The user has `running_queries_per_user` queries waiting or running (or, "
            "without a session, `sessions_per_user` active sessions).",
        }
    ),
)
async def submit_query(
    body: QuerySubmit,
    service: ServiceDep,
    user: UserDep,
    response: Response,
    wait: Wait = 0,
    limit: PageLimit = None,
    idempotency_key: IdempotencyKey = None,
    reuse: Annotated[
        bool,
        Query(
            description="false: run it even if an earlier result of the same query could "
            "answer it (result reuse)."
        ),
    ] = True,
) -> bodies.Submitted:
    """Queue a query: ``{"query": "SELECT 1", "session_id": 3}``; without a session it runs
    as a one-off query. ``?wait=30`` answers when it is final (or 30 s pass) with the whole
    query and, if it succeeded, its first result page (``page``, ``?limit=`` rows): a short
    query costs one request instead of three. With an ``Idempotency-Key``, a repeat answers
    the query the first request queued, as it is now (and waits for it as asked), with
    ``Idempotent-Replayed: true``. A read-only query whose earlier result still holds is
    answered from it at once (``reused_from``); ``?reuse=false`` runs it anyway."""
    if not body.query.strip():
        raise InvalidRequest("query: the query is empty.", field="query")
    if body.session_id is not None and (body.conf or body.isolation != "session"):
        raise InvalidRequest(
            "isolation and conf are for one-off queries; a session has its own.",
            field="conf" if body.conf else "isolation",
        )
    statement, replayed = await asyncio.to_thread(
        service.queries.submit,
        body.query,
        user=user,
        session_id=body.session_id,
        isolation=body.isolation,
        conf=body.conf,
        key=idempotency_key,
        tags=body.tags,
        reuse=reuse,
    )
    if replayed:
        response.headers[REPLAYED_HEADER] = "true"
    return await accepted(service, statement, wait, limit)


async def accepted(
    service: Service, statement: StatementRecord, wait: float, limit: int | None
) -> bodies.Submitted:
    """A queued statement's answer: as queued; with ``wait``, the whole query when it is final
    (or the wait ends), with its first result page if it succeeded."""
    if wait <= 0:
        place = await asyncio.to_thread(service.queries.place, statement)
        tags = await asyncio.to_thread(service.queries.tags, statement)
        return bodies.QueryAccepted.of(statement, place, tags)
    final = await service.queries.wait(statement, wait)
    query = await asyncio.to_thread(_whole, service, final)
    if final.state is not StatementState.SUCCESS or final.result is None:
        return query
    page = await asyncio.to_thread(service.queries.result_page, final, 0, limit)
    return bodies.WaitedQuery.with_page(query, result_page_view(page))


@router.get("", response_model=bodies.QueryList)
def list_queries(
    service: ServiceDep,
    user: UserDep,
    listing: ListParams,
    owner: str | None = None,
    session_id: IdQuery = None,
    state: Annotated[list[StatementState] | None, Query()] = None,
    q: Search = None,
) -> bodies.QueryList:
    """Your queries, newest first: ``?session_id=3&state=running``, ``?q=orders`` (those whose
    text holds it, any case; admins: everyone's, or ``?owner=``); the next page is
    ``?after=<next>``."""
    page = service.queries.list_page(
        user=user,
        owner=owner,
        session_id=session_id,
        states=state,
        search=q,
        window=listing.window(),
    )
    described = service.queries.described_page(page.items)
    return bodies.QueryList(queries=[query_view(d) for d in described], **listing.paging(page))


def _whole(service: Service, statement: StatementRecord) -> bodies.Query:
    return query_view(service.queries.described(statement))


@router.get("/{query_id}", response_model=bodies.Query)
async def get_query(
    query_id: Id,
    service: ServiceDep,
    user: UserDep,
    wait: Wait = 0,
) -> bodies.Query:
    """The query's state and, once it has ended, what its Spark tasks cost; ``?wait=30``
    holds the answer until it is final or 30 s pass."""
    statement = await asyncio.to_thread(service.queries.get, query_id, user=user)
    if wait > 0:
        statement = await service.queries.wait(statement, wait)
    return await asyncio.to_thread(_whole, service, statement)


# A download's answer: the file's bytes in the format's media type, its rows in a header.
_DOWNLOAD: dict[int | str, dict[str, Any]] = {
    200: {
        "description": "A page of rows (JSON); with `format`, the whole result as a file "
        "(`Content-Disposition: attachment`), its rows counted in `Result-Rows`.",
        "content": {
            kind.media_type: {"schema": {"type": "string", "format": "binary"}}
            for kind in FILE_KINDS.values()
        },
        "headers": {
            "Result-Rows": {"description": "A download's rows.", "schema": {"type": "integer"}}
        },
    }
}


@router.get(
    "/{query_id}/result",
    response_model=bodies.ResultPage,
    responses=_DOWNLOAD
    | refusals(
        {
            409: "No result to read: the query is not final, failed, was cancelled or made no "
            "rows (`RESULT_NOT_AVAILABLE`), or its result files are gone (`RESULT_GONE`).",
            422: "An unknown `format`, an offset or limit out of range, or either given with a "
            "`format` (a download is the whole result) (`INVALID_REQUEST`).",
        }
    ),
)
def get_result(
    query_id: Id,
    service: ServiceDep,
    user: UserDep,
    offset: Offset = 0,
    limit: PageLimit = None,
    format: Annotated[
        ResultFormat | None,
        Query(description="Download the whole result as a file: csv, jsonl, parquet or arrow."),
    ] = None,
) -> bodies.ResultPage | Response:
    """A page of the result: ``?offset=0&limit=1000`` -> ``{"schema", "rows", "total"}``. Or
    the whole result as a file, streamed from the node in constant memory: ``?format=csv``
    (``jsonl``: an object a row, valued as in the pages; ``parquet``; ``arrow``: an IPC file),
    Parquet and Arrow with the result's own types."""
    statement = service.queries.get(query_id, user=user)
    if format is None:
        return result_page_view(service.queries.result_page(statement, offset, limit))
    if offset or limit is not None:
        raise InvalidRequest(
            "offset and limit page the JSON answer; a download (format) is the whole result.",
            field="format",
        )
    whole = service.queries.whole_result(statement)
    kind = FILE_KINDS[format]
    headers = {
        "Content-Disposition": f'attachment; filename="query-{statement.id}.{kind.extension}"',
        "Result-Rows": str(whole.total),
    }
    chunks = encode(format, whole.schema, whole.batches())
    return StreamingResponse(chunks, media_type=kind.media_type, headers=headers)


@router.post(
    "/{query_id}/cancel",
    status_code=202,
    response_model=bodies.Query,
    responses=refusals({409: "The query is already final (`QUERY_FINISHED`)."}),
)
def cancel_query(query_id: Id, service: ServiceDep, user: UserDep) -> bodies.Query:
    """Cancel: a waiting query at once, a running one as soon as its engine interrupts it."""
    return _whole(service, service.queries.cancel(query_id, user=user))
