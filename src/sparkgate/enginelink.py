"""How a node reaches an engine's Spark Connect service: one gRPC channel per engine, reused
by every call, and the engine's secret on each. The Connect door forwards through it, and the
service interrupts an operation through it when a user cancels the query that records it.

Messages are pyspark's own (``pyspark.sql.connect.proto``); answers are handed on as the bytes
the engine sent, unparsed, so a large result costs the node no decoding. Imported only where
Connect is used: loading pyspark's Connect client takes most of a second.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from typing import Any

import grpc
from google.protobuf import message_factory
from google.protobuf.message import Message
from pyspark.sql.connect.proto import base_pb2

from sparkgate.store.connect import Endpoint

SERVICE = base_pb2.DESCRIPTOR.services_by_name["SparkConnectService"]
SERVICE_NAME = SERVICE.full_name  # spark.connect.SparkConnectService

# Spark's client and server both allow results in messages of up to 128 MiB.
MAX_MESSAGE = 128 * 1024 * 1024
CHANNEL_OPTIONS = [
    ("grpc.max_send_message_length", MAX_MESSAGE),
    ("grpc.max_receive_message_length", MAX_MESSAGE),
]


def request_class(method: str) -> type[Message]:
    """The request message of one of the service's methods, by name."""
    return message_factory.GetMessageClass(SERVICE.methods_by_name[method].input_type)


def _raw(data: bytes) -> bytes:
    return data


class EngineLink:
    """A channel to one engine's Connect service, with a callable per method."""

    def __init__(self, engine_id: int, endpoint: Endpoint) -> None:
        self.engine_id = engine_id
        self.url = endpoint.url
        self.metadata = (("authorization", f"Bearer {endpoint.secret}"),)
        self.channel = grpc.insecure_channel(self.url, options=CHANNEL_OPTIONS)
        self._calls: dict[str, Callable[..., Any]] = {}
        for method in SERVICE.methods:
            path = f"/{SERVICE_NAME}/{method.name}"
            make: Callable[..., Any]
            if method.client_streaming:
                make = self.channel.stream_unary
            elif method.server_streaming:
                make = self.channel.unary_stream
            else:
                make = self.channel.unary_unary
            self._calls[method.name] = make(
                path, request_serializer=_serialize, response_deserializer=_raw
            )

    def unary(self, method: str, request: Any, timeout: float | None = None) -> bytes:
        return self._calls[method](request, metadata=self.metadata, timeout=timeout)  # type: ignore[no-any-return]

    def stream(self, method: str, request: Message) -> Any:
        """A server-streaming call: iterate it for the engine's answers (bytes); ``cancel()``
        it to stop."""
        return self._calls[method](request, metadata=self.metadata)

    def upload(self, method: str, requests: Iterator[Message]) -> bytes:
        return self._calls[method](requests, metadata=self.metadata)  # type: ignore[no-any-return]

    def close(self) -> None:
        self.channel.close()


def _serialize(message: Message) -> bytes:
    return message.SerializeToString()


class EngineLinks:
    """The node's links to engines, made on first use and kept while the engine's address
    and secret stay the same (an engine restarted under the same id is a new link)."""

    def __init__(self) -> None:
        self._links: dict[int, EngineLink] = {}
        self._lock = threading.Lock()

    def to(self, engine_id: int, endpoint: Endpoint) -> EngineLink:
        with self._lock:
            link = self._links.get(engine_id)
            if link is not None and link.url == endpoint.url:
                return link
            link = self._links[engine_id] = EngineLink(engine_id, endpoint)
            return link

    def forget(self, engine_id: int) -> None:
        """Make a new link next time. The old one is not closed: calls of other threads
        may still be using it (its channel closes when the last of them lets it go)."""
        with self._lock:
            self._links.pop(engine_id, None)

    def interrupt(
        self,
        engine_id: int,
        endpoint: Endpoint,
        user_id: str,
        client_session: str,
        operation_id: str,
    ) -> None:
        """Interrupt one operation in the engine, as Spark's client would: the client that
        runs it gets Spark's interrupted error."""
        request = base_pb2.InterruptRequest(
            session_id=client_session,
            user_context=base_pb2.UserContext(user_id=user_id, user_name=user_id),
            interrupt_type=base_pb2.InterruptRequest.INTERRUPT_TYPE_OPERATION_ID,
            operation_id=operation_id,
            client_type="sparkgate",
        )
        self.to(engine_id, endpoint).unary("Interrupt", request, timeout=30)

    def close(self) -> None:
        with self._lock:
            links, self._links = list(self._links.values()), {}
        for link in links:
            link.close()
