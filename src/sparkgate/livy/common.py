"""What the Livy routes share: finding a session of the right kind, the views of several
records at once (one read per table, not per row), the CSRF check, and the error body."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from fastapi import Request

from sparkgate import results
from sparkgate.api.deps import NodeDep
from sparkgate.api.livy import views
from sparkgate.api.openapi import REASONS, refusals
from sparkgate.auth.principal import Principal
from sparkgate.errors import InvalidRequest, NotFound
from sparkgate.gateway import visible
from sparkgate.node import ServerNode
from sparkgate.states import SessionKind, StatementKind, StatementState
from sparkgate.store.records import EngineRecord, SessionRecord, StatementRecord

_SAFE_METHODS = frozenset({"GET", "HEAD", "OPTIONS", "TRACE"})


class LivyNotFound(NotFound):
    code = "NOT_FOUND"


class CsrfHeaderMissing(InvalidRequest):
    code = "CSRF_HEADER_MISSING"

    def __init__(self) -> None:
        # Livy's own words, which clients and their users may know.
        super().__init__("Missing Required Header for CSRF protection.")


def livy_error_body(_status: int, error: dict[str, Any]) -> dict[str, Any]:
    """Livy answers errors as ``{"msg": "..."}``."""
    return {"msg": str(error.get("message", ""))}


# What check_csrf adds to the 422 (Livy's 400) of every route of the routers it guards.
CSRF_REFUSAL = refusals(
    {
        422: REASONS[422] + " Or, with CSRF protection on, a change (POST, DELETE) without an "
        "`X-Requested-By` header (`CSRF_HEADER_MISSING`)."
    }
)


def check_csrf(request: Request, node: NodeDep) -> None:
    """With ``livy_csrf_protection`` on, changes need an ``X-Requested-By`` header (as Livy's
    ``livy.server.csrf-protection.enabled``), which a cross-site form cannot send."""
    if (
        node.settings.livy_csrf_protection
        and request.method not in _SAFE_METHODS
        and not request.headers.get("X-Requested-By")
    ):
        raise CsrfHeaderMissing


def get_session(
    node: ServerNode, session_id: int, kind: SessionKind, user: Principal
) -> SessionRecord:
    """The session, if it is of ``kind`` and ``user`` may see it (else 404, as if absent)."""
    session = node.store.sessions.find(session_id)
    if session is not None and not visible(user, session):
        session = None
    if session is None or session.kind is not kind:
        what = "Session" if kind is SessionKind.INTERACTIVE else "Batch"
        hint = ""
        if session is not None:
            other = "/batches" if session.kind is SessionKind.BATCH else "/sessions"
            hint = f" ({session_id} is a {session.kind.value} session: see {other}/{session_id})"
        raise LivyNotFound(f"{what} {session_id} not found{hint}.", session_id=session_id)
    return session


def engines_of(node: ServerNode, sessions: Iterable[SessionRecord]) -> dict[int, EngineRecord]:
    engines: dict[int, EngineRecord] = {}
    for engine_id in {s.engine_id for s in sessions if s.engine_id is not None}:
        engine = node.store.engines.find(engine_id)
        if engine is not None:
            engines[engine_id] = engine
    return engines


def session_json(node: ServerNode, session: SessionRecord) -> dict[str, Any]:
    return sessions_json(node, [session])[0]


def sessions_json(node: ServerNode, sessions: list[SessionRecord]) -> list[dict[str, Any]]:
    engines = engines_of(node, sessions)
    out = []
    for session in sessions:
        engine = engines.get(session.engine_id) if session.engine_id is not None else None
        out.append(views.session_view(session, engine, views.session_log(session, engine)))
    return out


def batch_json(node: ServerNode, session: SessionRecord) -> dict[str, Any]:
    return batches_json(node, [session])[0]


def batches_json(node: ServerNode, sessions: list[SessionRecord]) -> list[dict[str, Any]]:
    engines = engines_of(node, sessions)
    statements = node.store.statements.first_of_sessions(s.id for s in sessions)
    out = []
    for session in sessions:
        engine = engines.get(session.engine_id) if session.engine_id is not None else None
        statement = statements.get(session.id)
        log = views.batch_log(session, statement)
        out.append(views.batch_view(session, statement, engine, log))
    return out


def statement_json(node: ServerNode, statement: StatementRecord) -> dict[str, Any]:
    data = None
    if statement.state is StatementState.SUCCESS:
        data = statement_data(node, statement)
    return views.statement_view(statement, data)


def statement_data(node: ServerNode, statement: StatementRecord) -> dict[str, Any]:
    """A succeeded statement's mimetypes; SQL rows are read from its stored result, up to
    ``livy_sql_row_limit`` (all of them stay pageable through /v1/queries/{id}/result)."""
    result = statement.result
    if statement.kind is not StatementKind.SQL or not result or not result.get("path"):
        return views.text_data(statement)
    try:
        rows, _ = results.read_page(result["path"], 0, node.settings.livy_sql_row_limit)
    except FileNotFoundError:
        return {
            "text/plain": f"The result of statement {statement.seq} is gone (result files "
            f"removed, or not shared with this server node): {result['path']}"
        }
    return views.sql_data(result.get("spark_schema"), rows)
