"""Livy's interactive sessions and their statements: ``/sessions``.

    POST /sessions {"kind": "pyspark"}                        201, the session
    POST /sessions/3/statements {"code": "spark.range(3).count()"}   201, statement 0
    GET  /sessions/3/statements/0                             output once "available"
    DELETE /sessions/3                                        {"msg": "deleted"}

Statement ids are numbered per session from 0, as Livy does; the same statements are native
queries (``/v1/queries``), and each Livy statement names its query id under ``sparkgate``.
"""

from __future__ import annotations

import contextlib

from fastapi import Response

from sparkgate.auth.principal import Principal
from sparkgate.errors import QueryFinished
from sparkgate.http.deps import ServiceDep, UserDep
from sparkgate.http.openapi import refusals
from sparkgate.http.params import Id
from sparkgate.livy import common, views
from sparkgate.livy.bodies import (
    LivyCancelled,
    LivyDeleted,
    LivyLog,
    LivySession,
    LivySessionList,
    LivySessionStateAnswer,
    LivyStatement,
    LivyStatementList,
)
from sparkgate.livy.models import CreateSession, CreateStatement
from sparkgate.livy.states import (
    STATEMENT_KINDS,
    interactive_state,
    session_kind,
    statement_kind,
)
from sparkgate.service import Service
from sparkgate.states import SessionKind
from sparkgate.store.records import StatementRecord

router = common.livy_router("/sessions")


@router.get("", response_model=LivySessionList)
def list_sessions(service: ServiceDep, user: UserDep, paging: common.Range) -> LivySessionList:
    """Interactive sessions by id, ``?from=0&size=100``: the active ones and those ended in
    the last ``livy_session_retention`` seconds (any session stays readable by its id)."""
    page = common.recent(service, user, SessionKind.INTERACTIVE, paging)
    return LivySessionList(
        from_=page.offset,
        total=common.total(page),
        sessions=common.livy_sessions(service, page.items, user),
    )


@router.post(
    "",
    status_code=201,
    response_model=LivySession,
    responses=refusals(
        {
            403: "A `pyspark` session without the `code` right, a `sql` one without `sql`, a "
            "`shared` one with neither, `conf` names a denied setting, or `proxyUser`/`doAs` "
            "names another user and the caller is no impersonator.",
            429: "The user has `sessions_per_user` active sessions.",
        }
    ),
)
def create_session(
    body: CreateSession,
    service: ServiceDep,
    user: UserDep,
    response: Response,
    do_as: common.DoAs = None,
) -> LivySession:
    """Start a session: ``{"kind": "pyspark" | "sql" | "shared", "conf": {...}, ...}``."""
    kind = session_kind(body.kind)
    livy = {**body.livy_attributes(), "kind": kind}
    # A pyspark or sql session runs that kind (the service asks its right); shared, either.
    runs = STATEMENT_KINDS.get(kind)
    session = common.create(
        service, SessionKind.INTERACTIVE, body, user, do_as, response, livy=livy, runs=runs
    )
    return common.livy_session(service, session, user)


@router.get("/{session_id}", response_model=LivySession)
def get_session(session_id: Id, service: ServiceDep, user: UserDep) -> LivySession:
    session = common.get_session(service, session_id, SessionKind.INTERACTIVE, user)
    return common.livy_session(service, session, user)


@router.get("/{session_id}/state", response_model=LivySessionStateAnswer)
def get_session_state(session_id: Id, service: ServiceDep, user: UserDep) -> LivySessionStateAnswer:
    session = common.get_session(service, session_id, SessionKind.INTERACTIVE, user)
    return LivySessionStateAnswer(id=session.id, state=interactive_state(session.state))


@router.get("/{session_id}/log", response_model=LivyLog)
def get_session_log(
    session_id: Id, service: ServiceDep, user: UserDep, paging: common.Range
) -> LivyLog:
    """``{"id", "from", "total", "log"}``: what happened to the session, from the store."""
    session = common.get_session(service, session_id, SessionKind.INTERACTIVE, user)
    engine = service.engines.of_sessions([session], user=user).get(session.engine_id or 0)
    return common.livy_log(session.id, views.session_log(session, engine), paging)


@router.delete("/{session_id}", response_model=LivyDeleted)
def delete_session(session_id: Id, service: ServiceDep, user: UserDep) -> LivyDeleted:
    """End the session (``killed``); its running statement is cancelled. Repeating is fine."""
    return common.kill(service, session_id, SessionKind.INTERACTIVE, user)


# -- statements -----------------------------------------------------------------------------


@router.get("/{session_id}/statements", response_model=LivyStatementList)
def list_statements(
    session_id: Id, service: ServiceDep, user: UserDep, paging: common.Range
) -> LivyStatementList:
    """The session's statements in order: ``{"total_statements", "statements"}``."""
    common.get_session(service, session_id, SessionKind.INTERACTIVE, user)
    page = service.queries.in_session(session_id, user=user, window=paging.window(1_000_000))
    return LivyStatementList(
        total_statements=common.total(page),
        statements=[common.livy_statement(service, s) for s in page.items],
    )


@router.post(
    "/{session_id}/statements",
    status_code=201,
    response_model=LivyStatement,
    responses=refusals(
        {
            403: "A right the code needs is missing (`code` for Python, `sql` for SQL), or a "
            "SET names a denied setting.",
            409: "The session takes no more statements (it ended).",
            429: "The user has `running_queries_per_user` statements waiting or running.",
        }
    ),
)
def create_statement(
    session_id: Id, body: CreateStatement, service: ServiceDep, user: UserDep, response: Response
) -> LivyStatement:
    """Queue code: ``{"code": "...", "kind"?: "pyspark" | "python" | "sql"}``; without a kind
    it runs as the session's kind."""
    session = common.get_session(service, session_id, SessionKind.INTERACTIVE, user)
    kind = statement_kind(body.kind, views.session_kind_of(session), session_id)
    statement, _ = service.queries.submit(body.code, user=user, session_id=session_id, kind=kind)
    response.headers["Location"] = f"/sessions/{session_id}/statements/{statement.seq}"
    return common.livy_statement(service, statement)


def _statement(
    service: Service, user: Principal, session_id: int, statement_id: int
) -> StatementRecord:
    common.get_session(service, session_id, SessionKind.INTERACTIVE, user)
    statement = service.queries.by_seq(session_id, statement_id, user=user)
    if statement is None:
        raise common.LivyNotFound(
            f"Statement {statement_id} of session {session_id} not found.",
            session_id=session_id,
            statement_id=statement_id,
        )
    return statement


@router.get("/{session_id}/statements/{statement_id}", response_model=LivyStatement)
def get_statement(
    session_id: Id, statement_id: Id, service: ServiceDep, user: UserDep
) -> LivyStatement:
    return common.livy_statement(service, _statement(service, user, session_id, statement_id))


@router.post("/{session_id}/statements/{statement_id}/cancel", response_model=LivyCancelled)
def cancel_statement(
    session_id: Id, statement_id: Id, service: ServiceDep, user: UserDep
) -> LivyCancelled:
    """Cancel a waiting or running statement; a finished one stays as it is (as in Livy)."""
    statement = _statement(service, user, session_id, statement_id)
    with contextlib.suppress(QueryFinished):
        service.queries.cancel(statement.id, user=user)
    return LivyCancelled(msg="canceled")
