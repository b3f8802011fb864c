"""The Spark Connect door's calls: every method of Spark's ``SparkConnectService`` (as the
pyspark this package depends on defines it), forwarded to the Connect service of the engine
that holds the client's session, after the service has said who the caller is and what they
may do. The door translates gRPC and nothing more: sessions, rights, queries and audit are the
service's (``service.connect``).

Every call: authenticate the ``authorization: Bearer`` token -> replace the client's claimed
user id with the authenticated user -> find (or start) the session's engine -> forward with the
engine's secret -> hand the engine's answers back as they come, unparsed.
"""

from __future__ import annotations

import dataclasses
import itertools
import logging
import time
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

import grpc
from google.protobuf.message import Message
from pyspark.sql.connect.proto import base_pb2

from sparkgate.auth.principal import Principal
from sparkgate.auth.users import Users
from sparkgate.connect.plans import read_plan
from sparkgate.connect.statuses import (
    abort,
    answering,
    engine_error,
    error_details_without_plan,
    relay_error,
    unqueued,
)
from sparkgate.enginelink import SERVICE, SERVICE_NAME, request_class
from sparkgate.errors import (
    InvalidRequest,
    SparkgateError,
    StoreUnavailable,
    Unauthenticated,
)
from sparkgate.service.connect import ConnectService, ConnectTarget, Operation
from sparkgate.states import StatementState
from sparkgate.tags import from_words

log = logging.getLogger("sparkgate.connect")

# Errors of an engine's operation that mean it was interrupted, not that it failed.
_CANCEL_CLASSES = {"OPERATION_CANCELED", "SPARK_JOB_CANCELLED"}


class ConnectDoor:
    def __init__(self, connect: ConnectService, users: Users) -> None:
        self.connect = connect
        self.users = users

    def handler(self) -> grpc.GenericRpcHandler:
        """One gRPC handler for every method of the service."""
        handlers = {}
        special: dict[str, Callable[..., Any]] = {
            "ExecutePlan": self.execute_plan,
            "ReattachExecute": self.reattach_execute,
            "AddArtifacts": self.add_artifacts,
        }
        for method in SERVICE.methods:
            request = request_class(method.name)
            behaviour = special.get(method.name) or self._unary(method.name)
            if method.client_streaming:
                make = grpc.stream_unary_rpc_method_handler
            elif method.server_streaming:
                make = grpc.unary_stream_rpc_method_handler
            else:
                make = grpc.unary_unary_rpc_method_handler
            handlers[method.name] = make(
                behaviour, request_deserializer=request.FromString, response_serializer=_raw
            )
        return grpc.method_handlers_generic_handler(SERVICE_NAME, handlers)

    # -- the calls -----------------------------------------------------------------------

    def _unary(self, method: str) -> Callable[[Any, grpc.ServicerContext], bytes]:
        def call(request: Any, context: grpc.ServicerContext) -> bytes:
            user, target = self._enter(request, context)
            with answering(context):
                if method == "Config":
                    self._check_config(user, request, target)
                elif method == "AnalyzePlan" and request.WhichOneof("analyze") == "explain":
                    self.connect.check_explain(user, target)
                elif method == "CloneSession":
                    _check_session_id(request.new_session_id)
                    self.connect.check_clone(user, target, request.new_session_id)
            queued: list[str] = []
            if method == "Interrupt":
                # The session's queued operations first: the ends of those the engine
                # interrupts would otherwise admit them.
                queued = self._interrupt_queued(request, target, context)
            answer: bytes = self._forward(
                context, target, lambda: self._link(target).unary(method, request)
            )
            if method == "FetchErrorDetails":
                answer = error_details_without_plan(answer)
            if queued:
                response = base_pb2.InterruptResponse.FromString(answer)
                response.interrupted_ids.extend(queued)
                answer = response.SerializeToString()
            if method == "ReleaseSession":
                with answering(context):
                    self.connect.release(user, target)
            return answer

        return call

    def execute_plan(
        self, request: base_pb2.ExecutePlanRequest, context: grpc.ServicerContext
    ) -> Iterator[bytes]:
        user, target = self._enter(request, context)
        if not request.operation_id:
            # The query's record names the operation: give it its id here, as a client may.
            request.operation_id = str(uuid.uuid4())
        else:
            _check_operation_id(context, request.operation_id)
        statement_id: int | None = None
        pending: _Pending | None = None
        with answering(context):
            # The client's spark.addTag()s are the query's tags (``team=finance``).
            operation = dataclasses.replace(
                read_plan(request.plan), tags=from_words(request.tags, "the operation's tags")
            )
            if operation.analysed_only:
                self.connect.admit(user, target, operation)
                pending = _Pending(user, request.operation_id, operation, self.connect.clock())
            else:
                statement = self.connect.start(user, target, request.operation_id, operation)
                if statement.state is StatementState.QUEUED:
                    # Its resource group is full: the call waits for its turn.
                    statement = self.connect.await_turn(statement, context.is_active)
                if statement.state is not StatementState.RUNNING:
                    unqueued(context, statement)
                statement_id = statement.id
        reattachable = request.request_options and any(
            option.reattach_options.reattachable for option in request.request_options
        )
        call = self._forward(
            context, target, lambda: self._link(target).stream("ExecutePlan", request)
        )
        yield from self._relay(context, target, call, statement_id, bool(reattachable), pending)

    def reattach_execute(
        self, request: base_pb2.ReattachExecuteRequest, context: grpc.ServicerContext
    ) -> Iterator[bytes]:
        _, target = self._enter(request, context)
        _check_operation_id(context, request.operation_id)
        with answering(context):
            statement_id = self.connect.operation(target, request.operation_id)
        call = self._forward(
            context, target, lambda: self._link(target).stream("ReattachExecute", request)
        )
        yield from self._relay(context, target, call, statement_id, True)

    def add_artifacts(
        self, requests: Iterator[base_pb2.AddArtifactsRequest], context: grpc.ServicerContext
    ) -> bytes:
        first = next(requests, None)
        if first is None:
            abort(context, InvalidRequest("AddArtifacts sent no request."))
        user, target = self._enter(first, context)
        refused: list[SparkgateError] = []

        def checked() -> Iterator[base_pb2.AddArtifactsRequest]:
            for request in itertools.chain([first], requests):
                which = request.WhichOneof("payload")
                names = []
                if which == "batch":
                    names = [artifact.name for artifact in request.batch.artifacts]
                elif which == "begin_chunk":
                    names = [request.begin_chunk.name]
                try:
                    self.connect.check_artifacts(user, names, target)
                except SparkgateError as exc:
                    refused.append(exc)
                    return  # the upload stops here; nothing of it is kept
                _claim(request, user)
                yield request

        try:
            answer: bytes = self._forward(
                context, target, lambda: self._link(target).upload("AddArtifacts", checked())
            )
            return answer
        finally:
            if refused:
                abort(context, refused[0])

    # -- plumbing ------------------------------------------------------------------------

    def _enter(
        self, request: Any, context: grpc.ServicerContext
    ) -> tuple[Principal, ConnectTarget]:
        """Who calls (or UNAUTHENTICATED), with the request made theirs, and where their
        session lives."""
        user = self._authenticate(context)
        _claim(request, user)
        _check_session_id_orabort(context, request.session_id)
        try:
            return user, self.connect.target(user, request.session_id)
        except SparkgateError as exc:
            abort(context, exc)

    def _authenticate(self, context: grpc.ServicerContext) -> Principal:
        authorization = None
        for key, value in context.invocation_metadata():
            if key == "authorization":
                authorization = str(value)
        address = _address(context.peer())
        try:
            # A token read in the last second is not read again: the client makes a call per
            # answer it reads (ReleaseExecute), about nine per operation. A revoked token is
            # refused up to a second later.
            return self.users.authenticate(authorization, address=address, recent_tokens=True)
        except Unauthenticated as exc:
            delay = self.users.failure_delay(address)
            if delay > 0:
                time.sleep(delay)  # a thread of the door's pool: guessing slows down
            message = exc.message
            if not authorization:
                message = (
                    "Credentials are required: add ;token=<personal access token> to the sc:// "
                    "URL (sent as authorization: Bearer)."
                )
            abort(context, Unauthenticated(message))
        except StoreUnavailable as exc:
            abort(context, exc)

    def _link(self, target: ConnectTarget) -> Any:
        return self.connect.links.to(target.engine.id, target.endpoint)

    def _forward(
        self, context: grpc.ServicerContext, target: ConnectTarget, send: Callable[[], Any]
    ) -> Any:
        try:
            return send()
        except grpc.RpcError as exc:
            self._engine_failed(target, exc)
            relay_error(context, exc)

    def _relay(
        self,
        context: grpc.ServicerContext,
        target: ConnectTarget,
        call: Any,
        statement_id: int | None,
        reattachable: bool,
        pending: _Pending | None = None,
    ) -> Iterator[bytes]:
        """Hand on an operation's answers; end its query when the operation ends (a stream
        the engine closes for the client to reattach leaves it running). A ``pending``
        operation is recorded only if it fails or turns out to have run."""
        context.add_callback(call.cancel)  # the client went away: so does the engine's call
        completed = ended = False  # the engine said the operation is complete; it is recorded
        try:
            for message in call:
                if pending is not None and statement_id is None and _ran(message):
                    with answering(context):
                        statement_id = self._record(target, pending)
                completed = _completes(message)
                if statement_id is not None and not ended and completed:
                    # The client takes this answer as the operation's end: its query is
                    # final before the client can look (else only once the engine's stream
                    # closes, after the client has its rows).
                    ended = self._ended_before_answer(statement_id)
                yield message
        except grpc.RpcError as exc:
            if exc.code() is grpc.StatusCode.CANCELLED and not context.is_active():
                return  # the client left; a reattachable operation goes on in the engine
            self._engine_failed(target, exc)
            if pending is not None and statement_id is None:
                with answering(context):
                    statement_id = self._record(target, pending)
            if statement_id is not None:
                error = engine_error(exc)
                with answering(context):
                    self.connect.finish(
                        statement_id, error=error, cancelled=error.code in _CANCEL_CLASSES
                    )
            relay_error(context, exc)
        if statement_id is None or ended:
            return
        if not reattachable or completed:
            with answering(context):
                self.connect.finish(statement_id)

    def _ended_before_answer(self, statement_id: int) -> bool:
        """End the query; False if the store refused (tried again once the stream closes,
        when a refusal no longer keeps the client from its answer)."""
        try:
            self.connect.finish(statement_id)
        except SparkgateError as exc:
            log.warning("query %s: its end is recorded later: %s", statement_id, exc)
            return False
        return True

    def _record(self, target: ConnectTarget, pending: _Pending) -> int:
        """Record a pending operation as the query it was after all, since it started."""
        statement = self.connect.record(
            pending.user,
            target,
            pending.operation_id,
            pending.operation,
            started_at=pending.started_at,
        )
        return statement.id

    def _interrupt_queued(
        self,
        request: base_pb2.InterruptRequest,
        target: ConnectTarget,
        context: grpc.ServicerContext,
    ) -> list[str]:
        """An Interrupt reaches the session's queued operations as well as its engine's (the
        answer names both): the ids of those it cancelled."""
        which = request.interrupt_type
        with answering(context):
            return self.connect.interrupt_queued(
                target,
                operation_id=(
                    request.operation_id
                    if which == base_pb2.InterruptRequest.INTERRUPT_TYPE_OPERATION_ID
                    else None
                ),
                tag=(
                    request.operation_tag
                    if which == base_pb2.InterruptRequest.INTERRUPT_TYPE_TAG
                    else None
                ),
            )

    def _engine_failed(self, target: ConnectTarget, exc: grpc.RpcError) -> None:
        if exc.code() is grpc.StatusCode.UNAVAILABLE:
            # The engine may be gone: read the session and engine again next time.
            self.connect.links.forget(target.engine.id)

    def _check_config(
        self, user: Principal, request: base_pb2.ConfigRequest, target: ConnectTarget
    ) -> None:
        operation = request.operation
        which = operation.WhichOneof("op_type")
        if which == "set":
            self.connect.check_settings(user, [pair.key for pair in operation.set.pairs], target)


@dataclass(frozen=True)
class _Pending:
    """An admitted operation not recorded yet: ``spark.sql`` of a query, which Spark only
    analyses (the query runs, and is recorded, when its DataFrame runs). If it fails, or
    Spark ran it after all, it is recorded then, as it was."""

    user: Principal
    operation_id: str
    operation: Operation
    started_at: float


def _ran(message: bytes) -> bool:
    """Whether an answer shows that Spark ran the SQL of a ``spark.sql``: it answers a
    command's rows as a local relation, and hands a query back as the relation it was sent."""
    response = base_pb2.ExecutePlanResponse.FromString(message)
    if not response.HasField("sql_command_result"):
        return False
    kind = response.sql_command_result.relation.WhichOneof("rel_type")
    return kind not in ("sql", "with_relations")


# A ResultComplete answer is its ids and an empty message: about 160 bytes. Larger answers
# (Arrow batches above all) are not parsed to find out.
_SMALL_ANSWER = 1024


def _completes(message: bytes) -> bool:
    if len(message) > _SMALL_ANSWER:
        return False
    return bool(base_pb2.ExecutePlanResponse.FromString(message).HasField("result_complete"))


def _claim(request: Any, user: Principal) -> None:
    """The user is whoever authenticated, whatever the client claims: the engine keys
    sessions by user id, so another user's session id never reaches their session."""
    request.user_context.user_id = user.name
    request.user_context.user_name = user.name


def _check_session_id(session_id: str) -> None:
    try:
        uuid.UUID(session_id)
    except ValueError:
        raise InvalidRequest(
            f"The session id {session_id[:64]!r} is not a UUID (Spark Connect's session ids are)."
        ) from None


def _check_session_id_orabort(context: grpc.ServicerContext, session_id: str) -> None:
    try:
        _check_session_id(session_id)
    except InvalidRequest as exc:
        abort(context, exc)


def _check_operation_id(context: grpc.ServicerContext, operation_id: str) -> None:
    try:
        uuid.UUID(operation_id)
    except ValueError:
        abort(context, InvalidRequest(f"The operation id {operation_id[:64]!r} is not a UUID."))


def _address(peer: str) -> str | None:
    """The client's address from gRPC's peer string (``ipv4:127.0.0.1:5555``)."""
    kind, _, rest = peer.partition(":")
    if kind == "ipv4":
        return rest.rpartition(":")[0]
    if kind == "ipv6":
        return rest.rpartition(":")[0].strip("[]")
    return None


def _raw(data: bytes) -> bytes:
    return data


__all__ = ["ConnectDoor", "Message"]
