"""Livy's batches: ``/batches``. A batch is a session of kind ``batch`` whose one statement
runs a ``.py`` (PySpark) or ``.sql`` file on an engine of its own.

    POST /batches {"file": "/jobs/etl.py", "args": ["2024-01-01"]}    201, the batch
    GET  /batches/7/state                                           {"id": 7, "state": "running"}
    GET  /batches/7/log?from=0&size=100                             what the file printed
"""

from __future__ import annotations

import shlex
import time
from pathlib import PurePosixPath
from typing import Annotated, Any
from urllib.parse import urlparse

from fastapi import APIRouter, Depends, Query, Response

from sparkgate.api.deps import NodeDep, UserDep
from sparkgate.api.livy import common, views
from sparkgate.api.livy.bodies import (
    LivyBatch,
    LivyBatchList,
    LivyBatchStateAnswer,
    LivyDeleted,
    LivyLog,
)
from sparkgate.api.livy.models import CreateBatch
from sparkgate.api.livy.states import batch_state
from sparkgate.api.openapi import refusals
from sparkgate.api.params import Id, LivyFrom, LivySize
from sparkgate.errors import InvalidRequest
from sparkgate.states import SessionKind, StatementKind

router = APIRouter(
    prefix="/batches",
    tags=["livy"],
    dependencies=[Depends(common.check_csrf)],
    responses=common.CSRF_REFUSAL,
)


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
def list_batches(
    node: NodeDep, user: UserDep, start: LivyFrom = None, size: LivySize = None
) -> dict[str, Any]:
    """Batches by id (the active ones and those ended recently): ``{"from", "total",
    "sessions"}``."""
    first = start or 0
    page = node.store.sessions.list_page(
        kinds=[SessionKind.BATCH],
        owner=user.owner_filter(),
        ended_since=time.time() - node.settings.livy_session_retention,
        offset=first,
        limit=100 if size is None or size < 0 else size,
    )
    return {"from": first, "total": page.total, "sessions": common.batches_json(node, page.items)}


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
    node: NodeDep,
    user: UserDep,
    response: Response,
    do_as: Annotated[str | None, Query(alias="doAs")] = None,
) -> dict[str, Any]:
    """Run a file: ``{"file": "hdfs:///jobs/etl.py", "args": [...], "conf": {...}}``."""
    _check_file(body)
    session, _ = node.gateway.create_session(
        SessionKind.BATCH,
        name=body.name,
        conf=body.spark_conf(),
        user=user,
        proxy_user=do_as or body.proxyUser,
        attributes={"livy": body.livy_attributes()},
        # A file statement's code is its command line, as engine.batch_files reads it.
        first_statement=(StatementKind.FILE, shlex.join([body.file, *body.args])),
    )
    response.headers["Location"] = f"/batches/{session.id}"
    return common.batch_json(node, session)


@router.get("/{batch_id}", response_model=LivyBatch)
def get_batch(batch_id: Id, node: NodeDep, user: UserDep) -> dict[str, Any]:
    return common.batch_json(node, common.get_session(node, batch_id, SessionKind.BATCH, user))


@router.get("/{batch_id}/state", response_model=LivyBatchStateAnswer)
def get_batch_state(batch_id: Id, node: NodeDep, user: UserDep) -> dict[str, Any]:
    session = common.get_session(node, batch_id, SessionKind.BATCH, user)
    statement = node.store.statements.find_by_seq(batch_id, 0)
    return {
        "id": batch_id,
        "state": batch_state(session.state, statement.state if statement else None),
    }


@router.get("/{batch_id}/log", response_model=LivyLog)
def get_batch_log(
    batch_id: Id, node: NodeDep, user: UserDep, start: LivyFrom = None, size: LivySize = None
) -> dict[str, Any]:
    """``{"id", "from", "total", "log"}``: what the file printed so far (stdout, then stderr),
    and why the batch failed; by default the last 100 lines."""
    session = common.get_session(node, batch_id, SessionKind.BATCH, user)
    lines = views.batch_log(session, node.store.statements.find_by_seq(batch_id, 0))
    first, page = views.log_page(lines, start, size)
    return {"id": batch_id, "from": first, "total": len(lines), "log": page}


@router.delete("/{batch_id}", response_model=LivyDeleted)
def delete_batch(batch_id: Id, node: NodeDep, user: UserDep) -> dict[str, Any]:
    """Kill the batch (``killed``): its Spark jobs are cancelled and its engine stops."""
    common.get_session(node, batch_id, SessionKind.BATCH, user)
    node.gateway.kill_session(batch_id, user=user)
    return {"msg": "deleted"}
