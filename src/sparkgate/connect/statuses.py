"""How the Spark Connect door answers a refusal or a failure in gRPC's terms: sparkgate's
errors as status codes, an engine's error relayed as the engine sent it (Spark's client reads
the error class from its trailers) less the plan Spark wrote into its texts, and the same
error as a query records it."""

from __future__ import annotations

import json
from typing import Any, Literal, NoReturn

import grpc
from google.rpc import error_details_pb2, status_pb2
from pyspark.sql.connect.proto import base_pb2

from sparkgate.errors import (
    Conflict,
    EngineUnreachable,
    Forbidden,
    InvalidRequest,
    LimitExceeded,
    NotFound,
    NotSupported,
    StoreUnavailable,
    Unauthenticated,
)
from sparkgate.recorded import RecordedError, SparkgateError
from sparkgate.runtime.error_text import parameters_without_plan, without_plan
from sparkgate.states import StatementState
from sparkgate.store.records import StatementRecord

_STATUS: list[tuple[type[SparkgateError], grpc.StatusCode]] = [
    (Unauthenticated, grpc.StatusCode.UNAUTHENTICATED),
    (Forbidden, grpc.StatusCode.PERMISSION_DENIED),
    (NotFound, grpc.StatusCode.NOT_FOUND),
    (LimitExceeded, grpc.StatusCode.RESOURCE_EXHAUSTED),
    (NotSupported, grpc.StatusCode.UNIMPLEMENTED),
    (InvalidRequest, grpc.StatusCode.INVALID_ARGUMENT),
    (Conflict, grpc.StatusCode.FAILED_PRECONDITION),
    # The client retries these by itself (Spark's client retries UNAVAILABLE).
    (EngineUnreachable, grpc.StatusCode.UNAVAILABLE),
    (StoreUnavailable, grpc.StatusCode.UNAVAILABLE),
]


def engine_error(exc: grpc.RpcError) -> RecordedError:
    """A failed operation's error as a query records it: Spark's error class (from the
    status details the engine sent), its exception class and its message."""
    code: str = exc.code().name
    params: dict[str, Any] = {}
    for key, value in _trailers(exc):
        if key != "grpc-status-details-bin":
            continue
        status = status_pb2.Status.FromString(value)
        for detail in status.details:
            if detail.Is(error_details_pb2.ErrorInfo.DESCRIPTOR):
                info = error_details_pb2.ErrorInfo()
                detail.Unpack(info)
                params["class"] = info.reason
                code = info.metadata.get("errorClass") or info.reason.rsplit(".", 1)[-1]
                if info.metadata.get("sqlState"):
                    params["sql_state"] = info.metadata["sqlState"]
    return RecordedError(code, without_plan(exc.details() or ""), params)


class answering:
    """Turns the service's errors into the gRPC status the client gets."""

    def __init__(self, context: grpc.ServicerContext) -> None:
        self.context = context

    def __enter__(self) -> None:
        return None

    def __exit__(self, kind: Any, exc: BaseException | None, _tb: Any) -> Literal[False]:
        if isinstance(exc, SparkgateError):
            abort(self.context, exc)
        return False


def unqueued(context: grpc.ServicerContext, statement: StatementRecord) -> NoReturn:
    """A queued operation that ended before its turn: cancelled, or its session ended."""
    error = statement.error
    code, message = (
        (error.code, error.message)
        if error is not None
        else ("CANCELLED", f"Query {statement.id} was {statement.state.value}.")
    )
    status = grpc.StatusCode.CANCELLED
    if statement.state is not StatementState.CANCELLED:
        status = grpc.StatusCode.ABORTED
    context.abort(status, f"[{code}] {message}")
    raise AssertionError("unreachable")  # abort raises


def abort(context: grpc.ServicerContext, exc: SparkgateError) -> NoReturn:
    code = next(
        (status for cls, status in _STATUS if isinstance(exc, cls)), grpc.StatusCode.INTERNAL
    )
    context.abort(code, f"[{exc.code}] {exc.message}")
    raise AssertionError("unreachable")  # abort raises


def relay_error(context: grpc.ServicerContext, exc: grpc.RpcError) -> NoReturn:
    """The engine's error, as the engine sent it (Spark's client reads the error class from
    the status details in the trailers), without plan in any of its texts."""
    trailers = tuple(
        (key, status_without_plan(value) if key == "grpc-status-details-bin" else value)
        for key, value in _trailers(exc)
        if not key.startswith("grpc-") or key == "grpc-status-details-bin"
    )
    context.set_trailing_metadata(trailers)
    context.abort(exc.code(), without_plan(exc.details() or ""))
    raise AssertionError("unreachable")


def status_without_plan(data: bytes) -> bytes:
    """A ``google.rpc.Status`` as Spark Connect's service sends it, without plan: its message
    (Spark's ``getMessage``, plan appended) and the ``ErrorInfo``'s message parameters and
    JVM stack trace (sent when ``spark.sql.pyspark.jvmStacktrace.enabled``). The Java
    exception is in the engine: its text is all there is here."""
    status = status_pb2.Status.FromString(data)
    status.message = without_plan(status.message)
    for detail in status.details:
        if not detail.Is(error_details_pb2.ErrorInfo.DESCRIPTOR):
            continue
        info = error_details_pb2.ErrorInfo()
        detail.Unpack(info)
        metadata = info.metadata
        if "messageParameters" in metadata:
            try:
                parameters = json.loads(metadata["messageParameters"])
            except ValueError:
                parameters = {}  # not Spark's JSON: nothing of it is read, so none is shown
            if isinstance(parameters, dict):
                metadata["messageParameters"] = json.dumps(parameters_without_plan(parameters))
            else:
                del metadata["messageParameters"]
        if "stackTrace" in metadata:
            metadata["stackTrace"] = without_plan(metadata["stackTrace"])
        detail.Pack(info)
    shown: bytes = status.SerializeToString()
    return shown


def error_details_without_plan(data: bytes) -> bytes:
    """A ``FetchErrorDetails`` answer (the whole error: every cause's message, Spark's
    parameters and query contexts, the server's stack trace) without plan."""
    response = base_pb2.FetchErrorDetailsResponse.FromString(data)
    for error in response.errors:
        error.message = without_plan(error.message)
        throwable = error.spark_throwable
        parameters = parameters_without_plan(throwable.message_parameters)
        throwable.message_parameters.clear()
        throwable.message_parameters.update(parameters)
        for context in throwable.query_contexts:
            context.summary = without_plan(context.summary)
            context.fragment = without_plan(context.fragment)
    return response.SerializeToString()


def _trailers(exc: grpc.RpcError) -> list[tuple[str, Any]]:
    metadata: Any = exc.trailing_metadata() or ()
    return [(str(key), value) for key, value in metadata]
