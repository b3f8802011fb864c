"""Stream jobs: ``/v1/streams``; and the streaming queries of a session."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Query
from pydantic import BaseModel, ConfigDict, Field

from sparkgate.http.deps import ServiceDep, UserDep
from sparkgate.http.openapi import refusals
from sparkgate.http.paging import ListParams
from sparkgate.http.params import Id
from sparkgate.schemas.streams import (
    DeletedStreamJob,
    SessionStreams,
    StreamJobDetail,
    StreamJobList,
)
from sparkgate.service.stream_views import (
    query_detail_view,
    stream_detail_view,
    stream_summary_view,
)
from sparkgate.states import StreamJobState

router = APIRouter(tags=["streams"])

_STREAMS_RIGHT = "The `streams` right is missing."


class StreamCreate(BaseModel):
    model_config = ConfigDict(extra="forbid")

    name: str = Field(min_length=1, max_length=128)
    sql: str = Field(min_length=1)
    conf: dict[str, str] = Field(default_factory=dict)
    checkpoint_root: str | None = None


@router.post(
    "/v1/streams",
    status_code=201,
    response_model=StreamJobDetail,
    responses=refusals(
        {
            403: "The `streams` right is missing, or `conf` or the SQL names a denied setting.",
            409: "A stream job of that name exists (`STREAM_JOB_EXISTS`).",
        }
    ),
)
def create_stream(body: StreamCreate, service: ServiceDep, user: UserDep) -> StreamJobDetail:
    """Create a stream job and keep it running: ``{"name": "clicks", "sql": "CREATE STREAM r
    USING rate; SAVE STREAM r TO parquet OPTIONS ('path'='/data/clicks')"}``."""
    detail = service.streams.create(
        body.name, body.sql, user=user, conf=body.conf, checkpoint_root=body.checkpoint_root
    )
    return stream_detail_view(detail)


@router.get("/v1/streams", response_model=StreamJobList)
def list_streams(
    service: ServiceDep,
    user: UserDep,
    listing: ListParams,
    owner: str | None = None,
    state: Annotated[list[StreamJobState] | None, Query()] = None,
) -> StreamJobList:
    """Stream jobs by name, each with its queries' states: ``?state=running``; the next page
    is ``?after=<next>``."""
    page = service.streams.list_page(
        user=user,
        owner=owner,
        states=state,
        window=listing.window(by_name=True),
    )
    return StreamJobList(
        streams=[stream_summary_view(s) for s in page.items], **listing.paging(page)
    )


@router.get("/v1/streams/{name}", response_model=StreamJobDetail)
def get_stream(name: str, service: ServiceDep, user: UserDep) -> StreamJobDetail:
    """A stream job: state, restarts, next restart, last error, and each query with its recent
    progress and restarts. Read from the store only: Spark is never asked."""
    return stream_detail_view(service.streams.get(name, user=user))


@router.post(
    "/v1/streams/{name}/stop",
    status_code=202,
    response_model=StreamJobDetail,
    responses=refusals({403: _STREAMS_RIGHT}),
)
def stop_stream(name: str, service: ServiceDep, user: UserDep) -> StreamJobDetail:
    """Stop at a micro-batch boundary (``stopping``, then ``stopped``); checkpoints stay
    consistent, and ``start`` resumes from them."""
    return stream_detail_view(service.streams.stop(name, user=user))


@router.post(
    "/v1/streams/{name}/start",
    status_code=202,
    response_model=StreamJobDetail,
    responses=refusals(
        {403: _STREAMS_RIGHT, 409: "The job is stopping or failing (`STREAM_JOB_BUSY`)."}
    ),
)
def start_stream(name: str, service: ServiceDep, user: UserDep) -> StreamJobDetail:
    """Start a stopped or failed job again; its queries resume from their checkpoints."""
    return stream_detail_view(service.streams.start(name, user=user))


@router.delete(
    "/v1/streams/{name}",
    response_model=DeletedStreamJob,
    responses=refusals(
        {403: _STREAMS_RIGHT, 409: "The job is not stopped or failed (`STREAM_JOB_ACTIVE`)."}
    ),
)
def delete_stream(
    name: str, service: ServiceDep, user: UserDep, keep_checkpoints: bool = False
) -> DeletedStreamJob:
    """Delete a stopped or failed job (409 while it runs), and its checkpoints unless
    ``?keep_checkpoints=true``."""
    job = service.streams.delete(name, user=user, keep_checkpoints=keep_checkpoints)
    return DeletedStreamJob.of(job)


@router.get("/v1/sessions/{session_id}/streams", response_model=SessionStreams)
def session_streams(session_id: Id, service: ServiceDep, user: UserDep) -> SessionStreams:
    """The streaming queries started by SAVE STREAM in a session."""
    queries = service.streams.of_session(session_id, user=user)
    return SessionStreams(queries=[query_detail_view(q) for q in queries])
