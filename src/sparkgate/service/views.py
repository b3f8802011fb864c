"""How records look in the JSON of the doors (``/v1``, the CLI through it) and on the
dashboard: one view of each record."""

from __future__ import annotations

import math
from datetime import UTC, datetime
from typing import Any

from sparkgate.auth.principal import Principal
from sparkgate.service.queries import ResultPage
from sparkgate.store.audit import AuditRecord
from sparkgate.store.records import (
    EngineRecord,
    SessionRecord,
    StatementRecord,
)
from sparkgate.store.tokens import TokenRecord


def iso(ts: float | None) -> str | None:
    if ts is None or math.isnan(ts):
        return None
    # Clamped to what a datetime holds: an older release stored token expiries past year
    # 9999, and one such row must not break every later read of the list it is in.
    moment = min(max(ts, _EARLIEST), _LATEST)
    return (
        datetime.fromtimestamp(moment, UTC)
        .isoformat(timespec="milliseconds")
        .replace("+00:00", "Z")
    )


_EARLIEST = datetime(1, 1, 2, tzinfo=UTC).timestamp()
_LATEST = datetime(9999, 12, 31, 23, 59, 59, tzinfo=UTC).timestamp()


def session_view(session: SessionRecord) -> dict[str, Any]:
    return {
        "id": session.id,
        "kind": session.kind.value,
        "name": session.name,
        "state": session.state.value,
        "owner": session.owner,
        "proxy_user": session.proxy_user,
        "conf": session.conf,
        "engine_id": session.engine_id,
        "statement_count": session.statement_count,
        "created_at": iso(session.created_at),
        "started_at": iso(session.started_at),
        "finished_at": iso(session.finished_at),
        "last_activity_at": iso(session.last_activity_at),
        "error": session.error,
    }


def query_view(statement: StatementRecord) -> dict[str, Any]:
    info = statement.result_info
    result = None if info is None else {"schema": info.schema, "row_count": info.row_count}
    return {
        "id": statement.id,
        "session_id": statement.session_id,
        "owner": statement.owner,
        "query": statement.code,
        "kind": statement.kind.value,
        "state": statement.state.value,
        "progress": statement.progress,
        "created_at": iso(statement.created_at),
        "started_at": iso(statement.started_at),
        "finished_at": iso(statement.finished_at),
        "error": statement.error,
        "result": result,
        # What the statement printed (a pyspark statement's {"data": ...}, a batch file's
        # log) and how sparkgate ran it (e.g. "ctas": {"path": ...}); None when neither.
        "output": statement.output,
    }


def result_page_view(page: ResultPage) -> dict[str, Any]:
    return {
        "schema": page.schema,
        "rows": page.rows,
        "offset": page.offset,
        "limit": page.limit,
        "total": page.total,
    }


def engine_view(engine: EngineRecord) -> dict[str, Any]:
    return {
        "id": engine.id,
        "kind": engine.kind.value,
        "state": engine.state.value,
        "session_id": engine.session_id,
        "host": engine.host,
        "pid": engine.pid,
        "app_id": engine.app_id,
        # Its Spark UI through sparkgate (admins only), when the engine serves one.
        "spark_ui": f"/v1/engines/{engine.id}/ui/" if engine.ui_url else None,
        "log_path": engine.log_path,
        "created_at": iso(engine.created_at),
        "started_at": iso(engine.started_at),
        "heartbeat_at": iso(engine.heartbeat_at),
        "finished_at": iso(engine.finished_at),
        "error": engine.error,
    }


def principal_view(user: Principal) -> dict[str, Any]:
    """Who the credentials say the caller is."""
    return {
        "user": user.name,
        "groups": sorted(user.groups),
        "admin": user.admin,
        "rights": sorted(user.rights),
        "via": user.via,
    }


def token_view(record: TokenRecord) -> dict[str, Any]:
    """A personal access token, never its secret."""
    return {
        "id": record.id,
        "name": record.name,
        "owner": record.owner,
        "prefix": record.prefix,
        "created_at": iso(record.created_at),
        "expires_at": iso(record.expires_at),
        "last_used_at": iso(record.last_used_at),
        "revoked_at": iso(record.revoked_at),
    }


def audit_event_view(event: AuditRecord) -> dict[str, Any]:
    return {
        "id": event.id,
        "at": iso(event.at),
        "user": event.user,
        "address": event.address,
        "action": event.action,
        "target": event.target,
        "outcome": event.outcome,
        "detail": event.detail,
    }
