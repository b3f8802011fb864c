"""Livy's batches: ``/batches``. A batch is a session of kind ``batch`` whose one statement
runs a ``.py`` (PySpark) or ``.sql`` file on an engine of its own.

    POST /batches {"file": "/jobs/etl.py", "args": ["2024-01-01"]}    201, the batch
    GET  /batches/7/state                                           {"id": 7, "state": "running"}
    GET  /batches/7/log?from=0&size=100                             what the file printed
"""

from __future__ import annotations

import shlex
from pathlib import PurePosixPath
from urllib.parse import urlparse

from fastapi import Response

from sparkgate.errors import InvalidRequest
from sparkgate.http.deps import ServiceDep, UserDep
from sparkgate.http.openapi import refusals
from sparkgate.http.params import Id
from sparkgate.livy import common, views
from sparkgate.livy.bodies import (
    LivyBatch,
    LivyBatchList,
    LivyBatchStateAnswer,
    LivyDeleted,
    LivyLog,
)
from sparkgate.livy.models import CreateBatch
from sparkgate.livy.states import batch_state
from sparkgate.states import SessionKind, StatementKind

router = common.livy_router("/batches")


RUNNABLE = frozenset({".py", ".sql"})


def _check_file(body: CreateBatch) -> None:
    suffix = PurePosixPath(urlparse(body.file).path or body.file).suffix.lower()
    if suffix in RUNNABLE:
        return
    jvm = " with className (a JVM application)" if body.className else ""
    raise InvalidRequest(
        f"Cannot run {body.file}{jvm}: sparkgate runs PySpark scripts (.py) and SQL scripts "
        "(.sql) as batches; Scala, Java and R applications are not supported.",
        field="file",
    )


@router.get("", response_model=LivyBatchList)
def list_batches(service: ServiceDep, user: UserDep, paging: common.Range) -> LivyBatchList:
    """Batches by id (the active ones and those ended recently): ``{"from", "total",
    "sessions"}``."""
    page = common.recent(service, user, SessionKind.BATCH, paging)
    return LivyBatchList(
        from_=page.offset,
        total=common.total(page),
        sessions=common.livy_batches(service, page.items, user),
    )


@router.post(
    "",
    status_code=201,
    response_model=LivyBatch,
    responses=refusals(
        {
            403: "A right the file needs is missing (`code` for .py, `sql` for .sql), `conf` "
            "names a denied setting, or `proxyUser`/`doAs` names another user and the caller "
            "is no impersonator.",
            429: "The user has `sessions_per_user` active sessions.",
        }
    ),
)
def create_batch(
    body: CreateBatch,
    service: ServiceDep,
    user: UserDep,
    response: Response,
    do_as: common.DoAs = None,
) -> LivyBatch:
    """Run a file: ``{"file": "hdfs:///jobs/etl.py", "args": [...], "conf": {...}}``."""
    _check_file(body)
    session = common.create(
        service,
        SessionKind.BATCH,
        body,
        user,
        do_as,
        response,
        livy=body.livy_attributes(),
        # A file statement's code is its command line, as engine.batch_files reads it.
        first_statement=(StatementKind.FILE, shlex.join([body.file, *body.args])),
    )
    return common.livy_batch(service, session, user)


@router.get("/{batch_id}", response_model=LivyBatch)
def get_batch(batch_id: Id, service: ServiceDep, user: UserDep) -> LivyBatch:
    session = common.get_session(service, batch_id, SessionKind.BATCH, user)
    return common.livy_batch(service, session, user)


@router.get("/{batch_id}/state", response_model=LivyBatchStateAnswer)
def get_batch_state(batch_id: Id, service: ServiceDep, user: UserDep) -> LivyBatchStateAnswer:
    session = common.get_session(service, batch_id, SessionKind.BATCH, user)
    statement = service.queries.by_seq(batch_id, 0, user=user)
    return LivyBatchStateAnswer(
        id=batch_id,
        state=batch_state(session.state, statement.state if statement else None),
    )


@router.get("/{batch_id}/log", response_model=LivyLog)
def get_batch_log(
    batch_id: Id, service: ServiceDep, user: UserDep, paging: common.Range
) -> LivyLog:
    """``{"id", "from", "total", "log"}``: what the file printed so far (stdout, then stderr),
    and why the batch failed; by default the last 100 lines."""
    session = common.get_session(service, batch_id, SessionKind.BATCH, user)
    lines = views.batch_log(session, service.queries.by_seq(batch_id, 0, user=user))
    return common.livy_log(batch_id, lines, paging)


@router.delete("/{batch_id}", response_model=LivyDeleted)
def delete_batch(batch_id: Id, service: ServiceDep, user: UserDep) -> LivyDeleted:
    """Kill the batch (``killed``): its Spark jobs are cancelled and its engine stops."""
    return common.kill(service, batch_id, SessionKind.BATCH, user)
