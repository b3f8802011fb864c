"""How sessions, batches and statements look in Livy's JSON: its answers (``bodies``) as pure
functions of records.

Every field Livy shows is present, null when sparkgate does not know it; ``log`` is always a
list. Times are epoch milliseconds (0 when not yet), as Livy's statements have them.
"""

from __future__ import annotations

from collections.abc import Mapping
from decimal import Decimal, InvalidOperation
from typing import Any

from sparkgate.livy.bodies import (
    LivyAppInfo,
    LivyBatch,
    LivyOutputError,
    LivyOutputOk,
    LivySession,
    LivyStatement,
    LivyStatementLink,
)
from sparkgate.livy.models import KeptFields
from sparkgate.livy.states import (
    FINAL_STATEMENT_STATES,
    LivySessionKind,
    batch_state,
    interactive_state,
    statement_state,
)
from sparkgate.recorded import RecordedError
from sparkgate.service.views import iso
from sparkgate.states import StatementKind, StatementState
from sparkgate.store.records import EngineRecord, SessionRecord, StatementRecord

LIVY_VERSION = "0.9.0-incubating"  # what clients compare with; 0.10.x reads as "old" to some
LOG_LINES_IN_VIEW = 10  # Livy shows the last 10 log lines in a session's JSON


def session_kind_of(session: SessionRecord) -> LivySessionKind:
    """A session's Livy kind; sessions made through /v1 take statements of either kind."""
    return KeptFields.of(session).kind


def app_info() -> LivyAppInfo:
    # No Spark UI or log URLs are known to sparkgate (engines may run with the UI off).
    return LivyAppInfo(driverLogUrl=None, sparkUiUrl=None, executorLogUrls=None)


def session_view(
    session: SessionRecord, engine: EngineRecord | None, log: list[str]
) -> LivySession:
    # Livy 0.8's fields beyond the basic ones: null unless the session was created with them.
    kept = KeptFields.of(session)
    return LivySession(
        id=session.id,
        name=session.name,
        appId=engine.app_id if engine else None,
        owner=session.owner,
        proxyUser=session.proxy_user,
        state=interactive_state(session.state),
        kind=kept.kind,
        appInfo=app_info(),
        log=log[-LOG_LINES_IN_VIEW:],
        conf=session.conf,
        # The answer's model orders its keys; these are Livy's resource fields as kept.
        **kept.model_dump(exclude={"kind"}),
    )


def batch_view(
    session: SessionRecord,
    statement: StatementRecord | None,
    engine: EngineRecord | None,
    log: list[str],
) -> LivyBatch:
    return LivyBatch(
        id=session.id,
        name=session.name,
        owner=session.owner,
        proxyUser=session.proxy_user,
        state=batch_state(session.state, statement.state if statement else None),
        appId=engine.app_id if engine else None,
        appInfo=app_info(),
        log=log[-LOG_LINES_IN_VIEW:],
    )


def _millis(ts: float | None) -> int:
    return round(ts * 1000) if ts is not None else 0


def statement_view(statement: StatementRecord, data: dict[str, Any] | None) -> LivyStatement:
    """``data``: the mimetypes of a succeeded statement (``sql_data`` for SQL ones)."""
    final = statement.state in FINAL_STATEMENT_STATES
    return LivyStatement(
        id=statement.seq,
        code=statement.code,
        state=statement_state(statement.state),
        output=statement_output(statement, data) if final else None,
        progress=1.0 if final else min(max(statement.progress, 0.0), 1.0),
        started=_millis(statement.started_at),
        completed=_millis(statement.finished_at),
        # Not Livy's: where the same statement lives in the native API (full result paging).
        sparkgate=LivyStatementLink(query_id=statement.id),
    )


def statement_output(
    statement: StatementRecord, data: dict[str, Any] | None
) -> LivyOutputOk | LivyOutputError:
    if statement.state is StatementState.SUCCESS:
        return LivyOutputOk(status="ok", execution_count=statement.seq, data=data or {})
    error = statement.error or RecordedError("Error", "")
    traceback = error.param("traceback")
    return LivyOutputError(
        status="error",
        execution_count=statement.seq,
        ename=str(error.param("ename") or error.code or "Error"),
        evalue=str(error.param("evalue") or error.message or ""),
        traceback=[str(line) for line in traceback] if isinstance(traceback, list) else [],
    )


def text_data(statement: StatementRecord) -> dict[str, Any]:
    """The mimetypes of a statement that did not produce rows (pyspark, a file)."""
    output = statement.output or {}
    data = output.get("data")
    if isinstance(data, dict):
        return data
    text = str(output.get("stdout") or "") + str(output.get("stderr") or "")
    return {"text/plain": text.rstrip()}


def sql_data(spark_schema: Mapping[str, Any] | None, rows: list[list[Any]]) -> dict[str, Any]:
    """Livy's SQL output: Spark's StructType JSON and the rows. Top-level decimals are JSON
    numbers, as Livy gives them (the native API keeps them as exact strings)."""
    schema = spark_schema or {"type": "struct", "fields": []}
    decimals = [
        i
        for i, field in enumerate(schema.get("fields", []))
        if str(field.get("type", "")).startswith("decimal")
    ]
    if decimals:
        rows = [list(row) for row in rows]
        for row in rows:
            for i in decimals:
                row[i] = _number(row[i])
    return {"application/json": {"schema": schema, "data": rows}}


def _number(value: Any) -> Any:
    if not isinstance(value, str):
        return value
    try:
        exact = Decimal(value)
    except InvalidOperation:
        return value  # NaN and friends stay strings
    if not exact.is_finite():
        return value
    exponent = exact.as_tuple().exponent
    return int(exact) if isinstance(exponent, int) and exponent >= 0 else float(exact)


def log_page(lines: list[str], start: int | None, size: int | None) -> tuple[int, list[str]]:
    """Livy's log paging: ``size`` lines (100; negative: all) from ``start`` (default: the
    last ``size`` lines). Returns the start used and the lines."""
    count = 100 if size is None else size
    if count < 0:
        count = len(lines)
    first = max(0, len(lines) - count) if start is None or start < 0 else start
    return first, lines[first : first + count]


def session_log(session: SessionRecord, engine: EngineRecord | None) -> list[str]:
    """An interactive session's log: what happened to it, from the store."""
    lines = [f"{iso(session.created_at)} session {session.id} created"]
    if engine is not None:
        where = [f"{engine.kind.value} engine {engine.id}"]
        if engine.app_id:
            where.append(f"Spark application {engine.app_id}")
        if engine.host:
            where.append(f"host {engine.host}")
        lines.append(f"{iso(session.started_at or session.updated_at)} on " + ", ".join(where))
    if session.finished_at is not None:
        ended = f"{iso(session.finished_at)} session {session.state.value}"
        if session.error:
            ended += f": [{session.error.code}] {session.error.message}"
        lines.append(ended)
    return lines


def batch_log(session: SessionRecord, statement: StatementRecord | None) -> list[str]:
    """A batch's log as Livy gives a driver's output: ``stdout:``, its lines, ``\\nstderr:``,
    its lines; then why it failed, when it did."""
    lines: list[str] = []
    output = statement.output if statement else None
    if output and ("stdout" in output or "stderr" in output):
        lines.append("stdout: ")
        lines.extend(str(output.get("stdout") or "").splitlines())
        lines.append("\nstderr: ")
        lines.extend(str(output.get("stderr") or "").splitlines())
    elif statement is not None and statement.kind is not StatementKind.FILE:
        lines.append(f"query: {statement.code}")  # a one-off query sent to /v1
    error = (statement.error if statement else None) or session.error
    failed = statement is None or statement.state is not StatementState.SUCCESS
    if error and failed and session.finished_at is not None:
        lines.append(f"[{error.code}] {error.message}")
    return lines
