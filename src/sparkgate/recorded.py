"""A recorded error: what a statement, session, engine, stream job or query, table write, job
run or deployment keeps when something failed, and the error classes that build one.

It is stored as JSON and answered as it is stored, ``{"code": ..., "message": ..., <params>}``.
``code`` is one of sparkgate's own (``ErrorCode``), or one that is not sparkgate's and is kept
as given: Spark's error condition (``DIVIDE_BY_ZERO``), a user's Python exception
(``ZeroDivisionError``). ``sparkgate.errors`` re-exports ``ErrorCode``, ``RecordedError`` and
``SparkgateError``; the errors answered to a request live there, the ones only ever recorded
(a cancelled query, an engine that stopped) at the end of this module.

    error = Cancelled(f"Query {query_id} was cancelled.").recorded()
    store.transitions.statement(..., error=error)  # the store keeps error.to_json()
    if session.error and session.error.code == ErrorCode.ENGINE_LOST: ...
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from enum import StrEnum
from typing import Any


class ErrorCode(StrEnum):
    """sparkgate's own codes. A member is its value (``ErrorCode.ENGINE_LOST == "ENGINE_LOST"``),
    so a stored code compares equal to it and keys a dict like it: each name is its value."""

    INTERNAL_ERROR = "INTERNAL_ERROR"
    STORE_UNAVAILABLE = "STORE_UNAVAILABLE"
    CONCURRENT_UPDATE = "CONCURRENT_UPDATE"
    INVALID_CONFIGURATION = "INVALID_CONFIGURATION"
    LAUNCH_REFUSED = "LAUNCH_REFUSED"
    SERVER_RUNNING = "SERVER_RUNNING"
    # not found
    NOT_FOUND = "NOT_FOUND"
    SESSION_NOT_FOUND = "SESSION_NOT_FOUND"
    QUERY_NOT_FOUND = "QUERY_NOT_FOUND"
    ENGINE_NOT_FOUND = "ENGINE_NOT_FOUND"
    TABLE_NOT_FOUND = "TABLE_NOT_FOUND"
    SCHEMA_NOT_FOUND = "SCHEMA_NOT_FOUND"
    STREAM_JOB_NOT_FOUND = "STREAM_JOB_NOT_FOUND"
    STREAM_QUERY_NOT_FOUND = "STREAM_QUERY_NOT_FOUND"
    JOB_NOT_FOUND = "JOB_NOT_FOUND"
    DEPLOYMENT_NOT_FOUND = "DEPLOYMENT_NOT_FOUND"
    JOB_RUN_NOT_FOUND = "JOB_RUN_NOT_FOUND"
    TOKEN_NOT_FOUND = "TOKEN_NOT_FOUND"
    TABLE_TRANSACTION_NOT_FOUND = "TABLE_TRANSACTION_NOT_FOUND"
    SAVED_QUERY_NOT_FOUND = "SAVED_QUERY_NOT_FOUND"
    # the request and the state it meets
    INVALID_REQUEST = "INVALID_REQUEST"
    INVALID_STATE = "INVALID_STATE"
    NOT_SUPPORTED = "NOT_SUPPORTED"
    METHOD_NOT_ALLOWED = "METHOD_NOT_ALLOWED"
    HTTP_ERROR = "HTTP_ERROR"
    IDEMPOTENCY_KEY_INVALID = "IDEMPOTENCY_KEY_INVALID"
    IDEMPOTENCY_KEY_REUSED = "IDEMPOTENCY_KEY_REUSED"
    PAYLOAD_TOO_LARGE = "PAYLOAD_TOO_LARGE"
    LIMIT_EXCEEDED = "LIMIT_EXCEEDED"
    FILE_EMPTY = "FILE_EMPTY"
    CSRF_HEADER_MISSING = "CSRF_HEADER_MISSING"
    SESSION_NOT_ACTIVE = "SESSION_NOT_ACTIVE"
    BATCH_SESSION_USED = "BATCH_SESSION_USED"
    QUERY_FINISHED = "QUERY_FINISHED"
    RESULT_NOT_AVAILABLE = "RESULT_NOT_AVAILABLE"
    RESULT_GONE = "RESULT_GONE"
    INVALID_HANDLE = "INVALID_HANDLE"
    OPERATION_FAILED = "OPERATION_FAILED"
    # who may
    UNAUTHENTICATED = "UNAUTHENTICATED"
    FORBIDDEN = "FORBIDDEN"
    ACCESS_DENIED = "ACCESS_DENIED"
    SETTING_DENIED = "SETTING_DENIED"
    INSUFFICIENT_PRIVILEGE = "INSUFFICIENT_PRIVILEGE"  # the engine's table check (Authz.scala)
    # engines and sessions
    ENGINE_BACKOFF = "ENGINE_BACKOFF"
    ENGINE_UNAVAILABLE = "ENGINE_UNAVAILABLE"
    ENGINE_UI_UNAVAILABLE = "ENGINE_UI_UNAVAILABLE"
    ENGINE_LAUNCH_FAILED = "ENGINE_LAUNCH_FAILED"
    ENGINE_START_FAILED = "ENGINE_START_FAILED"
    NO_EXECUTORS = "NO_EXECUTORS"
    ENGINE_LOST = "ENGINE_LOST"
    ENGINE_STOPPED = "ENGINE_STOPPED"
    ENGINE_TERMINATED = "ENGINE_TERMINATED"
    SESSION_START_FAILED = "SESSION_START_FAILED"
    SESSION_TIMED_OUT = "SESSION_TIMED_OUT"
    SESSION_KILLED = "SESSION_KILLED"
    SESSION_ENDED = "SESSION_ENDED"
    # queries
    FAILED = "FAILED"
    CANCELLED = "CANCELLED"
    OUTCOME_NOT_RECORDED = "OUTCOME_NOT_RECORDED"
    CONNECT_OPERATION_GONE = "CONNECT_OPERATION_GONE"
    BATCH_FILE_MISSING = "BATCH_FILE_MISSING"
    BATCH_FILE_UNREADABLE = "BATCH_FILE_UNREADABLE"
    BATCH_FILE_UNSUPPORTED = "BATCH_FILE_UNSUPPORTED"
    BATCH_EXITED = "BATCH_EXITED"
    SQL_SCRIPT_INVALID = "SQL_SCRIPT_INVALID"
    SQL_SCRIPT_EMPTY = "SQL_SCRIPT_EMPTY"
    # tables and the catalog
    QUERY_FAILED = "QUERY_FAILED"
    COMMIT_FAILED = "COMMIT_FAILED"
    ORPHANED = "ORPHANED"
    BAD_FILE = "BAD_FILE"
    BAD_RECORD = "BAD_RECORD"
    CATALOG_UNAVAILABLE = "CATALOG_UNAVAILABLE"
    INVALID_CATALOG_REQUEST = "INVALID_CATALOG_REQUEST"
    PREVIEW_TIMED_OUT = "PREVIEW_TIMED_OUT"
    # sparkgate's SQL extensions (PARSE_SYNTAX_ERROR: Spark's name for the same problem)
    PARSE_SYNTAX_ERROR = "PARSE_SYNTAX_ERROR"
    INVALID_STREAM_DEFINITION = "INVALID_STREAM_DEFINITION"
    INVALID_STREAM_QUERY_NAME = "INVALID_STREAM_QUERY_NAME"
    INVALID_STREAM_OPTION = "INVALID_STREAM_OPTION"
    INVALID_STREAM_SCRIPT = "INVALID_STREAM_SCRIPT"
    NOT_A_STREAMING_VIEW = "NOT_A_STREAMING_VIEW"
    STREAM_SINK_OUTPUT_MODE_UNSUPPORTED = "STREAM_SINK_OUTPUT_MODE_UNSUPPORTED"
    STREAM_SINK_PARTITIONING_UNSUPPORTED = "STREAM_SINK_PARTITIONING_UNSUPPORTED"
    STREAM_SINK_PATH_REQUIRED = "STREAM_SINK_PATH_REQUIRED"
    STREAM_SINK_NOT_RESUMABLE = "STREAM_SINK_NOT_RESUMABLE"
    STREAM_SOURCE_PATH_REQUIRED = "STREAM_SOURCE_PATH_REQUIRED"
    STREAM_SOURCE_SCHEMA_REQUIRED = "STREAM_SOURCE_SCHEMA_REQUIRED"
    STREAM_SCRIPT_EMPTY = "STREAM_SCRIPT_EMPTY"
    STREAM_SCRIPT_WITHOUT_QUERY = "STREAM_SCRIPT_WITHOUT_QUERY"
    STREAM_CHECKPOINT_SHARED = "STREAM_CHECKPOINT_SHARED"
    STREAM_QUERY_NAME_CLASH = "STREAM_QUERY_NAME_CLASH"
    # stream jobs
    STREAM_FAILED = "STREAM_FAILED"
    STREAM_JOB_EXISTS = "STREAM_JOB_EXISTS"
    STREAM_JOB_ACTIVE = "STREAM_JOB_ACTIVE"
    STREAM_JOB_BUSY = "STREAM_JOB_BUSY"
    STREAM_JOB_SUPERSEDED = "STREAM_JOB_SUPERSEDED"
    # jobs and deploys
    MANIFESTS_INVALID = "MANIFESTS_INVALID"
    DEPLOY_IN_PROGRESS = "DEPLOY_IN_PROGRESS"
    DEPLOY_INCOMPLETE = "DEPLOY_INCOMPLETE"
    DEPLOYMENT_ABANDONED = "DEPLOYMENT_ABANDONED"
    DEPLOYMENT_INTERRUPTED = "DEPLOYMENT_INTERRUPTED"
    JOB_NOT_DEPLOYED = "JOB_NOT_DEPLOYED"
    JOB_NOT_BATCH = "JOB_NOT_BATCH"
    JOB_REMOVED = "JOB_REMOVED"
    JOB_RUN_LOST = "JOB_RUN_LOST"
    # saved queries
    SAVED_QUERY_EXISTS = "SAVED_QUERY_EXISTS"

    def detail(self, **params: Any) -> dict[str, Any]:
        """The code and its parameters without a message: an audit entry's detail for a
        refusal told to its user elsewhere (``INSUFFICIENT_PRIVILEGE``, by Spark)."""
        return {"code": self.value, **params}


@dataclass(frozen=True)
class RecordedError:
    """``code`` (an ``ErrorCode``, or a code that is not sparkgate's), ``message``, and the
    rest of the record (the error's parameters; Spark's ``sql_state``, ``line``,
    ``position``; a Python statement's ``traceback``), in the order they are shown."""

    code: str
    message: str
    params: Mapping[str, Any] = field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        """What the store keeps and the API answers: ``{"code", "message", **params}``."""
        return {"code": str(self.code), "message": self.message, **self.params}

    def param(self, name: str) -> Any:
        """One of its parameters (``sql_state``, ``line``, ``traceback``, ...); None if absent."""
        return self.params.get(name)

    @classmethod
    def stored(cls, data: Mapping[str, Any]) -> RecordedError:
        """The error ``to_json`` made, as a store row keeps it, whatever wrote it: one a
        release before this one wrote without a code or a message still reads (as
        ``INTERNAL_ERROR``, and "")."""
        params = {k: v for k, v in data.items() if k not in ("code", "message")}
        code = data.get("code") or ErrorCode.INTERNAL_ERROR
        return cls(str(code), str(data.get("message") or ""), params)

    def with_params(self, **params: Any) -> RecordedError:
        """The same record with more parameters, shown after its own (one it has already is
        replaced where it stands): what a caller adds to the error it was given."""
        return replace(self, params={**self.params, **params})

    def with_code(self, code: str) -> RecordedError:
        """The same record under another code: a failure told as what it stopped
        (``SESSION_START_FAILED``), with what caused it as message and parameters."""
        return replace(self, code=code)


class SparkgateError(Exception):
    """The base of sparkgate's errors: a stable ``code``, a ``message`` that says what was
    tried, what the state is and what to do, and parameters; recorded as a ``RecordedError``.
    ``code`` is a plain ``str`` for the few errors that pass on a code that is not
    sparkgate's (a Spark condition a SQL extension reports as Spark would)."""

    code: str = ErrorCode.INTERNAL_ERROR

    def __init__(self, message: str, **params: Any) -> None:
        super().__init__(message)
        self.message = message
        self.params = params

    def __str__(self) -> str:
        return f"[{self.code}] {self.message}"

    def recorded(self) -> RecordedError:
        return RecordedError(self.code, self.message, dict(self.params))

    def to_dict(self) -> dict[str, Any]:
        return self.recorded().to_json()


# -- errors only ever recorded -------------------------------------------------------------
# Each is built with its message (and parameters) where it happens and kept in a record:
#     Orphaned(f"Engine {engine_id} of query {query_id} is lost.").recorded()


class Failed(SparkgateError):
    """A statement failed and its record says no more (a job's step, a stream job's)."""

    code = ErrorCode.FAILED


class Cancelled(SparkgateError):
    """A query cancelled by its user, or by the end of its session."""

    code = ErrorCode.CANCELLED


class SessionKilled(SparkgateError):
    code = ErrorCode.SESSION_KILLED


class SessionEnded(SparkgateError):
    code = ErrorCode.SESSION_ENDED


class SessionTimedOut(SparkgateError):
    code = ErrorCode.SESSION_TIMED_OUT


class EngineLaunchFailed(SparkgateError):
    code = ErrorCode.ENGINE_LAUNCH_FAILED


class EngineStopped(SparkgateError):
    code = ErrorCode.ENGINE_STOPPED


class EngineTerminated(SparkgateError):
    """An engine killed at shutdown because it did not stop when asked."""

    code = ErrorCode.ENGINE_TERMINATED


class OutcomeNotRecorded(SparkgateError):
    code = ErrorCode.OUTCOME_NOT_RECORDED


class ConnectOperationGone(SparkgateError):
    code = ErrorCode.CONNECT_OPERATION_GONE


class BatchFileMissing(SparkgateError):
    code = ErrorCode.BATCH_FILE_MISSING


class BatchFileUnreadable(SparkgateError):
    code = ErrorCode.BATCH_FILE_UNREADABLE


class BatchFileUnsupported(SparkgateError):
    code = ErrorCode.BATCH_FILE_UNSUPPORTED


class BatchExited(SparkgateError):
    """A batch's Python file called ``sys.exit`` with a status other than 0."""

    code = ErrorCode.BATCH_EXITED


class SqlScriptInvalid(SparkgateError):
    code = ErrorCode.SQL_SCRIPT_INVALID


class SqlScriptEmpty(SparkgateError):
    code = ErrorCode.SQL_SCRIPT_EMPTY


class QueryFailed(SparkgateError):
    """The query of a two-phase table write failed: the write is aborted."""

    code = ErrorCode.QUERY_FAILED


class CommitFailed(SparkgateError):
    code = ErrorCode.COMMIT_FAILED


class Orphaned(SparkgateError):
    """A pending table write nobody will ever commit (its query or engine ended)."""

    code = ErrorCode.ORPHANED


class BadFile(SparkgateError):
    code = ErrorCode.BAD_FILE


class BadRecord(SparkgateError):
    """A loaded file's row that does not fit the table, by its line and column."""

    code = ErrorCode.BAD_RECORD


class InvalidCatalogRequest(SparkgateError):
    code = ErrorCode.INVALID_CATALOG_REQUEST


class PreviewTimedOut(SparkgateError):
    code = ErrorCode.PREVIEW_TIMED_OUT


class JobRunLost(SparkgateError):
    code = ErrorCode.JOB_RUN_LOST


class DeploymentAbandoned(SparkgateError):
    code = ErrorCode.DEPLOYMENT_ABANDONED


class DeploymentInterrupted(SparkgateError):
    code = ErrorCode.DEPLOYMENT_INTERRUPTED


class DeployIncomplete(SparkgateError):
    code = ErrorCode.DEPLOY_INCOMPLETE
