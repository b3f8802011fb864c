"""HiveServer2 handles and statuses: sparkgate's ids in the handles' guids (so that any node
reads any handle), and errors as a ``TStatus``."""

from __future__ import annotations

import os
from typing import Any

from sparkgate.error_catalog import entry
from sparkgate.errors import NotFound, SparkgateError
from sparkgate.hive2.idl import T
from sparkgate.recorded import ErrorCode, RecordedError
from sparkgate.states import StatementState
from sparkgate.store.schema import ID_MAX

SESSION, OPERATION = b"S", b"Q"
MAGIC = b"SG"


class InvalidHandle(SparkgateError):
    code = ErrorCode.INVALID_HANDLE


class OperationFailed(SparkgateError):
    """The operation ended failed or cancelled: its error, as the client should show it."""

    code = ErrorCode.OPERATION_FAILED

    def __init__(self, message: str, sql_state: str | None) -> None:
        super().__init__(message)
        self.sql_state = sql_state


# -- handles: the id in the guid, so that any node can read them -------------------------


def make_handle(kind: bytes, object_id: int) -> Any:
    guid = MAGIC + kind + bytes(5) + object_id.to_bytes(8, "big")
    return T.THandleIdentifier(guid=guid, secret=os.urandom(16))


def handle_id(identifier: Any, kind: bytes, what: str) -> int:
    """The sparkgate id in a handle. Access is checked by ownership, as on every door, so the
    secret is not: another user's id answers as unknown."""
    guid = getattr(identifier, "guid", None)
    if not isinstance(guid, bytes) or len(guid) != 16 or guid[:3] != MAGIC + kind:
        raise InvalidHandle(f"Invalid {what} handle: not one this server issued.")
    object_id = int.from_bytes(guid[8:], "big")
    if object_id > ID_MAX:  # eight bytes hold more than the store's ids: not ours either
        raise InvalidHandle(f"Invalid {what} handle: not one this server issued.")
    return object_id


def session_handle(session_id: int) -> Any:
    return T.TSessionHandle(sessionId=make_handle(SESSION, session_id))


def operation_handle(statement_id: int, operation_type: int, *, has_result: bool = True) -> Any:
    return T.TOperationHandle(
        operationId=make_handle(OPERATION, statement_id),
        operationType=operation_type,
        hasResultSet=has_result,
    )


def ok() -> Any:
    return T.TStatus(statusCode=T.TStatusCode.SUCCESS_STATUS)


def error_status(exc: BaseException) -> Any:
    if isinstance(exc, InvalidHandle | NotFound):
        code = T.TStatusCode.INVALID_HANDLE_STATUS
    else:
        code = T.TStatusCode.ERROR_STATUS
    if isinstance(exc, OperationFailed):
        return T.TStatus(statusCode=code, errorMessage=exc.message, sqlState=exc.sql_state)
    if isinstance(exc, SparkgateError):
        known = entry(exc.code)
        return T.TStatus(
            statusCode=code,
            errorMessage=str(exc),
            errorCode=0,
            sqlState=known.sqlstate if known else None,
        )
    return T.TStatus(statusCode=code, errorMessage=f"[INTERNAL_ERROR] {type(exc).__name__}: {exc}")


def failure_text(error: RecordedError | None, state: StatementState) -> str:
    """An ended statement's error as one line, with Spark's error class and position."""
    if error is None:
        return f"The operation ended {state.value}."
    text = f"[{error.code}] {error.message}".strip()
    if error.param("line") is not None:
        text += f" (line {error.param('line')}, pos {error.param('position')})"
    return text
