"""What the Livy routes share: their routers and CSRF check, finding, listing and killing a
session of the right kind, the views of several records at once (one read per table, not per
row), and the error body."""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Annotated, Any

from fastapi import APIRouter, Depends, Query, Request, Response

from sparkgate.auth.principal import Principal
from sparkgate.errors import InvalidRequest, NotFound, ResultGone, SessionNotFound
from sparkgate.http.deps import ServiceDep
from sparkgate.http.openapi import REASONS, refusals
from sparkgate.http.params import LivyFrom, LivySize
from sparkgate.livy import views
from sparkgate.livy.bodies import LivyBatch, LivyDeleted, LivyLog, LivySession, LivyStatement
from sparkgate.livy.models import CreateBody
from sparkgate.recorded import ErrorCode, RecordedError
from sparkgate.service import Service
from sparkgate.states import SessionKind, StatementKind, StatementState
from sparkgate.store.records import Page, SessionRecord, StatementRecord, Window
from sparkgate.store.session_attributes import SessionAttributes

_SAFE_METHODS = frozenset({"GET", "HEAD", "OPTIONS", "TRACE"})


class LivyNotFound(NotFound):
    code = ErrorCode.NOT_FOUND


class CsrfHeaderMissing(InvalidRequest):
    code = ErrorCode.CSRF_HEADER_MISSING

    def __init__(self) -> None:
        # Livy's own words, which clients and their users may know.
        super().__init__("Missing Required Header for CSRF protection.")


def livy_error_body(_status: int, error: RecordedError) -> dict[str, Any]:
    """Livy answers errors as ``{"msg": "..."}``."""
    return {"msg": error.message}


# What check_csrf adds to the 422 (Livy's 400) of every route of the routers it guards.
CSRF_REFUSAL = refusals(
    {
        422: REASONS[422] + " Or, with CSRF protection on, a change (POST, DELETE) without an "
        "`X-Requested-By` header (`CSRF_HEADER_MISSING`)."
    }
)


def check_csrf(request: Request, service: ServiceDep) -> None:
    """With ``livy_csrf_protection`` on, changes need an ``X-Requested-By`` header (as Livy's
    ``livy.server.csrf-protection.enabled``), which a cross-site form cannot send."""
    if (
        service.settings.livy_csrf_protection
        and request.method not in _SAFE_METHODS
        and not request.headers.get("X-Requested-By")
    ):
        raise CsrfHeaderMissing


def get_session(
    service: Service, session_id: int, kind: SessionKind, user: Principal
) -> SessionRecord:
    """The session, if it is of ``kind`` and ``user`` may see it (else 404, as if absent)."""
    try:
        session: SessionRecord | None = service.sessions.get(session_id, user=user)
    except SessionNotFound:
        session = None
    if session is None or session.kind is not kind:
        what = "Session" if kind is SessionKind.INTERACTIVE else "Batch"
        hint = ""
        if session is not None:
            other = "/batches" if session.kind is SessionKind.BATCH else "/sessions"
            hint = f" ({session_id} is a {session.kind.value} session: see {other}/{session_id})"
        raise LivyNotFound(f"{what} {session_id} not found{hint}.", session_id=session_id)
    return session


@dataclass(frozen=True)
class LivyRange:
    """Livy's ``?from=&size=``: a list's page (``size`` negative: all) or a log's lines (by
    default its last ones, see ``views.log_page``)."""

    start: int | None = None
    size: int | None = None

    def window(self, default_size: int) -> Window:
        size = self.size
        return Window(self.start or 0, default_size if size is None or size < 0 else size)


def _livy_range(start: LivyFrom = None, size: LivySize = None) -> LivyRange:
    return LivyRange(start, size)


Range = Annotated[LivyRange, Depends(_livy_range)]


DoAs = Annotated[str | None, Query(alias="doAs")]


def create(
    service: Service,
    kind: SessionKind,
    body: CreateBody,
    user: Principal,
    do_as: str | None,
    response: Response,
    *,
    livy: dict[str, Any],
    first_statement: tuple[StatementKind, str] | None = None,
    runs: StatementKind | None = None,
) -> SessionRecord:
    """A session or batch for a Livy body (``doAs`` beats its ``proxyUser``); its address
    goes in the answer's Location. ``runs``: the statements' kind its kind fixes."""
    session, _ = service.sessions.create(
        kind,
        name=body.name,
        conf=body.spark_conf(),
        user=user,
        proxy_user=do_as or body.proxyUser,
        attributes=SessionAttributes(livy=livy),
        first_statement=first_statement,
        runs=runs,
    )
    where = "batches" if kind is SessionKind.BATCH else "sessions"
    response.headers["Location"] = f"/{where}/{session.id}"
    return session


def livy_router(prefix: str) -> APIRouter:
    """A router of Livy routes under ``prefix``, its changes guarded by ``check_csrf``."""
    return APIRouter(
        prefix=prefix,
        tags=["livy"],
        dependencies=[Depends(check_csrf)],
        responses=CSRF_REFUSAL,
    )


def recent(
    service: Service, user: Principal, kind: SessionKind, paging: LivyRange
) -> Page[SessionRecord]:
    """A page (``?from=&size=``, 100 by default) of the user's sessions of ``kind``: the
    active ones and those ended in the last ``livy_session_retention`` seconds."""
    return service.sessions.list_page(
        user=user,
        kinds=[kind],
        ended_since=time.time() - service.settings.livy_session_retention,
        window=paging.window(100),
    )


def total(page: Page[Any]) -> int:
    assert page.total is not None  # Livy's windows count (``Window.count``)
    return page.total


def kill(service: Service, session_id: int, kind: SessionKind, user: Principal) -> LivyDeleted:
    """Kill the session or batch (404 if it is not of ``kind``): ``{"msg": "deleted"}``."""
    get_session(service, session_id, kind, user)
    service.sessions.kill(session_id, user=user)
    return LivyDeleted(msg="deleted")


def livy_log(object_id: int, lines: list[str], paging: LivyRange) -> LivyLog:
    """``{"id", "from", "total", "log"}``: the lines of a session's or a batch's log asked for."""
    first, page = views.log_page(lines, paging.start, paging.size)
    return LivyLog(id=object_id, from_=first, total=len(lines), log=page)


def livy_session(service: Service, session: SessionRecord, user: Principal) -> LivySession:
    return livy_sessions(service, [session], user)[0]


def livy_sessions(
    service: Service, sessions: list[SessionRecord], user: Principal
) -> list[LivySession]:
    engines = service.engines.of_sessions(sessions, user=user)
    out = []
    for session in sessions:
        engine = engines.get(session.engine_id) if session.engine_id is not None else None
        out.append(views.session_view(session, engine, views.session_log(session, engine)))
    return out


def livy_batch(service: Service, session: SessionRecord, user: Principal) -> LivyBatch:
    return livy_batches(service, [session], user)[0]


def livy_batches(
    service: Service, sessions: list[SessionRecord], user: Principal
) -> list[LivyBatch]:
    engines = service.engines.of_sessions(sessions, user=user)
    statements = service.queries.first_of_sessions(sessions)
    out = []
    for session in sessions:
        engine = engines.get(session.engine_id) if session.engine_id is not None else None
        statement = statements.get(session.id)
        log = views.batch_log(session, statement)
        out.append(views.batch_view(session, statement, engine, log))
    return out


def livy_statement(service: Service, statement: StatementRecord) -> LivyStatement:
    data = None
    if statement.state is StatementState.SUCCESS:
        data = statement_data(service, statement)
    return views.statement_view(statement, data)


def statement_data(service: Service, statement: StatementRecord) -> dict[str, Any]:
    """A succeeded statement's mimetypes; SQL rows are read from its stored result, up to
    ``livy_sql_row_limit`` (all of them stay pageable through /v1/queries/{id}/result)."""
    info = statement.result
    if statement.kind is not StatementKind.SQL or info is None or info.path is None:
        return views.text_data(statement)
    limit = service.settings.livy_sql_row_limit
    try:
        page = service.queries.result_page(statement, 0, limit)
    except ResultGone as exc:  # the statement succeeded: say why its rows are not shown
        return {"text/plain": exc.message}
    return views.sql_data(info.spark_schema, page.rows)
