"""Stream jobs: ``/v1/streams``; and the streaming queries of a session."""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter, Query
from pydantic import BaseModel, ConfigDict, Field

from sparkgate.api.bodies import (
    DeletedStreamJob,
    SessionStreams,
    StreamJobDetail,
    StreamJobList,
)
from sparkgate.api.deps import NodeDep, UserDep
from sparkgate.api.openapi import refusals
from sparkgate.api.paging import After, Total, counted, name_after, paging
from sparkgate.api.params import Id, Offset
from sparkgate.api.views import stream_job_view, stream_query_view, stream_restart_view
from sparkgate.auth.access import STREAMS
from sparkgate.auth.principal import Principal
from sparkgate.errors import StreamJobNotFound
from sparkgate.node import ServerNode
from sparkgate.states import StreamJobState
from sparkgate.store.records import StreamJobRecord

router = APIRouter(tags=["streams"])

_RECENT = 20  # progress samples and restarts shown per query

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
def create_stream(body: StreamCreate, node: NodeDep, user: UserDep) -> dict[str, Any]:
    """Create a stream job and keep it running: ``{"name": "clicks", "sql": "CREATE STREAM r
    USING rate; SAVE STREAM r TO parquet OPTIONS ('path'='/data/clicks')"}``."""
    node.users.require(user, STREAMS, "start stream jobs", target=f"stream:{body.name}")
    node.users.check_conf(user, body.conf, target=f"stream:{body.name}")
    node.users.check_sql(user, body.sql, target=f"stream:{body.name}")
    job = node.streams.create(
        body.name,
        body.sql,
        conf=body.conf,
        checkpoint_root=body.checkpoint_root,
        owner=user.name,
    )
    node.users.audit(user, "stream.create", "ok", target=f"stream:{job.name}")
    return _detail(node, job)


@router.get("/v1/streams", response_model=StreamJobList)
def list_streams(
    node: NodeDep,
    user: UserDep,
    owner: str | None = None,
    state: Annotated[list[StreamJobState] | None, Query()] = None,
    offset: Offset = 0,
    limit: Annotated[int, Query(ge=1, le=1000)] = 100,
    after: After = None,
    total: Total = None,
) -> dict[str, Any]:
    """Stream jobs by name, each with its queries' states: ``?state=running``; the next page
    is ``?after=<next>``."""
    page = node.store.stream_jobs.list_page(
        states=state,
        owner=user.owner_filter(owner),
        offset=offset,
        limit=limit,
        after=name_after(after, offset),
        count=counted(total, after),
    )
    streams = []
    for job in page.items:
        view = stream_job_view(job)
        view["queries"] = [
            {"name": q.name, "state": q.state.value, "restarts": q.restarts}
            for q in node.store.stream_queries.of_job(job.id)
        ]
        streams.append(view)
    return {"streams": streams, **paging(page, after)}


@router.get("/v1/streams/{name}", response_model=StreamJobDetail)
def get_stream(name: str, node: NodeDep, user: UserDep) -> dict[str, Any]:
    """A stream job: state, restarts, next restart, last error, and each query with its recent
    progress and restarts. Read from the store only: Spark is never asked."""
    return _detail(node, visible_job(node, user, name))


@router.post(
    "/v1/streams/{name}/stop",
    status_code=202,
    response_model=StreamJobDetail,
    responses=refusals({403: _STREAMS_RIGHT}),
)
def stop_stream(name: str, node: NodeDep, user: UserDep) -> dict[str, Any]:
    """Stop at a micro-batch boundary (``stopping``, then ``stopped``); checkpoints stay
    consistent, and ``start`` resumes from them."""
    _changing(node, user, name, "stop")
    return _detail(node, node.streams.stop(name))


@router.post(
    "/v1/streams/{name}/start",
    status_code=202,
    response_model=StreamJobDetail,
    responses=refusals(
        {403: _STREAMS_RIGHT, 409: "The job is stopping or failing (`STREAM_JOB_BUSY`)."}
    ),
)
def start_stream(name: str, node: NodeDep, user: UserDep) -> dict[str, Any]:
    """Start a stopped or failed job again; its queries resume from their checkpoints."""
    _changing(node, user, name, "start")
    return _detail(node, node.streams.start(name))


@router.delete(
    "/v1/streams/{name}",
    response_model=DeletedStreamJob,
    responses=refusals(
        {403: _STREAMS_RIGHT, 409: "The job is not stopped or failed (`STREAM_JOB_ACTIVE`)."}
    ),
)
def delete_stream(
    name: str, node: NodeDep, user: UserDep, keep_checkpoints: bool = False
) -> dict[str, Any]:
    """Delete a stopped or failed job (409 while it runs), and its checkpoints unless
    ``?keep_checkpoints=true``."""
    _changing(node, user, name, "delete")
    job = node.streams.delete(name, keep_checkpoints=keep_checkpoints)
    return {**stream_job_view(job), "deleted": True}


@router.get("/v1/sessions/{session_id}/streams", response_model=SessionStreams)
def session_streams(session_id: Id, node: NodeDep, user: UserDep) -> dict[str, Any]:
    """The streaming queries started by SAVE STREAM in a session."""
    node.gateway.session(session_id, user=user)
    queries = node.store.stream_queries.of_session(session_id)
    return {
        "queries": [
            stream_query_view(
                q,
                progress=node.store.stream_queries.progress(q.id, limit=_RECENT),
                restarts=node.store.stream_queries.restarts(query_id=q.id, limit=_RECENT),
            )
            for q in queries
            if q.job_id is None
        ]
    }


def visible_job(node: ServerNode, user: Principal, name: str) -> StreamJobRecord:
    """The job, if the user may see it; else not found, as for a name that does not exist."""
    job = node.store.stream_jobs.find(name)
    if job is None or not user.owns(job.owner):
        raise StreamJobNotFound(name)
    return job


def _changing(node: ServerNode, user: Principal, name: str, verb: str) -> None:
    visible_job(node, user, name)
    node.users.require(user, STREAMS, f"{verb} stream jobs", target=f"stream:{name}")
    node.users.audit(user, f"stream.{verb}", "ok", target=f"stream:{name}")


def _detail(node: ServerNode, job: StreamJobRecord) -> dict[str, Any]:
    queries = node.store.stream_queries
    view = stream_job_view(job)
    view["queries"] = [
        stream_query_view(
            q,
            progress=queries.progress(q.id, limit=_RECENT),
            restarts=queries.restarts(query_id=q.id, limit=_RECENT),
        )
        for q in queries.of_job(job.id)
    ]
    view["recent_restarts"] = [
        stream_restart_view(r) for r in queries.restarts(job_id=job.id, limit=_RECENT)
    ]
    return view
