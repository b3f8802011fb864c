"""How every call of the client goes: to the current node or, when it cannot answer, the
next ones (the failover the package's docstring describes), and the error a call raises.

Kept apart from the resource methods (``queries``, ``streams``, ``engines``, ``jobs``,
``access``, ``tables``), which only say which path to call with what: whether a request may
be sent twice, to which node, and how long to go on trying is decided here once, for every
one of them.
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Iterator, Mapping, Sequence
from typing import Any, NoReturn, Self

import httpx

from sparkgate import credentials
from sparkgate.client.auth import BearerAuth, find_auth

DEFAULT_SERVER = "http://127.0.0.1:8998"
# Requests that may be sent twice with the effect of once (RFC 9110's idempotent methods).
_IDEMPOTENT = frozenset({"GET", "HEAD", "OPTIONS", "PUT", "DELETE"})


class ClientError(Exception):
    """An error answer from the server (or no answer at all)."""

    def __init__(self, status: int, code: str, message: str, body: Any = None) -> None:
        super().__init__(f"[{code}] {message}")
        self.status = status
        self.code = code
        self.message = message
        self.body = body


class Transport:
    """The connection to one node or several: what every group of calls builds on."""

    def __init__(
        self,
        server: str | Sequence[str] = DEFAULT_SERVER,
        *,
        timeout: float = 30.0,
        user: str | None = None,
        password: str | None = None,
        token: str | None = None,
        transport: httpx.BaseTransport | None = None,
        patience: float = 0.0,
        agent: str | None = None,
    ) -> None:
        self.servers = servers_of(server)
        self.server = self.servers[0]  # the node calls go to, until it cannot answer
        self.patience = patience
        key = ",".join(self.servers)  # what `sparkgate login --server` stored the token under
        auth, self.auth_source, self.auth_user = find_auth(key, user, password, token)
        # The server refuses to create tokens with a token: callers ask for a password then.
        self.uses_personal_token = isinstance(auth, BearerAuth) and auth.personal
        # ``agent``: who calls, in the User-Agent (the CLI says so: the access history names it).
        headers = {"user-agent": agent} if agent else None
        self._http = httpx.Client(timeout=timeout, auth=auth, transport=transport, headers=headers)

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        self._http.close()

    def _call(
        self,
        method: str,
        path: str,
        *,
        params: Mapping[str, Any] | None = None,
        json: Any = None,
        timeout: float | httpx.Timeout | None = None,
        idempotent: bool | None = None,
        headers: Mapping[str, str] | None = None,
        content: Iterator[bytes] | None = None,
    ) -> dict[str, Any]:
        """The one way every call goes: ``method path`` with its query ``params`` and JSON
        body, to the current node or, when it cannot answer, the next ones; the JSON object
        the server answered, or a ``ClientError``. ``timeout`` replaces the client's own for
        calls the server holds (long polls, waits); ``idempotent`` marks a POST that may be
        sent twice (a cancel, a submit with its Idempotency-Key in ``headers``), where the
        method alone would say no."""
        safe = method in _IDEMPOTENT if idempotent is None else idempotent
        # params=None and json=None are httpx's own defaults (no query, no body), but its
        # timeout=None means no timeout at all: so a timeout is only passed when one is set.
        options: dict[str, Any] = {"params": params, "json": json, "headers": headers}
        if content is not None:  # a streamed body: read once, so never sent twice
            options["content"] = content
            safe = False
        if timeout is not None:
            options["timeout"] = timeout
        deadline = time.monotonic() + self.patience
        last: ClientError | None = None
        while True:
            start = self.servers.index(self.server)
            pause = 0.5
            for server in self.servers[start:] + self.servers[:start]:
                try:
                    body = self._send(server, method, path, safe=safe, **options)
                except _NodeCannotAnswer as exc:
                    last, pause = exc.error, exc.retry_after or pause
                    continue
                self.server = server
                # Every endpoint answers an object; the body is not checked at run time, so a
                # reply that is not one still reaches the caller as it came.
                result: dict[str, Any] = body
                return result
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                assert last is not None  # there is at least one server, and every one failed
                raise last
            time.sleep(min(pause, remaining))

    def _send(self, server: str, method: str, path: str, *, safe: bool, **options: Any) -> Any:
        """One request to one node: its decoded JSON answer (None when it is not JSON), a
        ``ClientError``, or ``_NodeCannotAnswer`` when another node may take the request."""
        try:
            response = self._http.request(method, server + path, **options)
        except httpx.TransportError as exc:
            unreachable = ClientError(0, "UNREACHABLE", f"cannot reach {server}: {exc}")
            # Refused or never connected: the request was not sent, so any node may take it.
            if safe or isinstance(exc, httpx.ConnectError | httpx.ConnectTimeout):
                raise _NodeCannotAnswer(unreachable) from exc
            raise unreachable from exc
        try:
            body = response.json()
        except ValueError:
            body = None
        if response.is_error:
            _refuse(response, body, safe=safe)
        return body

    @contextlib.contextmanager
    def _stream(
        self, path: str, *, params: Mapping[str, Any] | None = None
    ) -> Iterator[httpx.Response]:
        """A GET whose body is read as it comes (a download, never held whole): the answer
        of the current node or, when it cannot answer, the next ones; an error answer raises
        the ``ClientError`` :meth:`_call` would."""
        last: ClientError | None = None
        start = self.servers.index(self.server)
        for server in self.servers[start:] + self.servers[:start]:
            try:
                with self._http.stream("GET", server + path, params=params) as response:
                    if response.is_error:
                        response.read()
                        try:
                            body = response.json()
                        except ValueError:
                            body = None
                        _refuse(response, body, safe=True)
                    self.server = server
                    yield response
                    return
            except httpx.TransportError as exc:
                if not isinstance(exc, httpx.ConnectError | httpx.ConnectTimeout):
                    raise ClientError(0, "UNREACHABLE", f"{server}: {exc}") from exc
                last = ClientError(0, "UNREACHABLE", f"cannot reach {server}: {exc}")
            except _NodeCannotAnswer as exc:
                last = exc.error
        assert last is not None  # there is at least one server, and every one failed
        raise last


def _refuse(response: httpx.Response, body: Any, *, safe: bool) -> NoReturn:
    """The ``ClientError`` of an error answer, or ``_NodeCannotAnswer`` when another node may
    take the request."""
    error = body.get("error", {}) if isinstance(body, dict) else {}
    failure = ClientError(
        response.status_code,
        error.get("code", f"HTTP_{response.status_code}"),
        error.get("message", response.text),
        body,
    )
    # 503: the node did nothing (its store is out of reach, or it is going away);
    # a load balancer's 502 and 504 say nothing of whether the request was taken.
    if response.status_code == 503 or (safe and response.status_code in {502, 504}):
        raise _NodeCannotAnswer(failure, _retry_after(response))
    raise failure


def servers_of(server: str | Sequence[str]) -> list[str]:
    """The node URLs of ``"http://a:8998,http://b:8998"`` or of a list, without trailing /."""
    urls = credentials.node_urls(server if isinstance(server, str) else ",".join(server))
    if not urls:
        raise ValueError("Client: no server URL given.")
    return urls


class _NodeCannotAnswer(Exception):
    """This node cannot take the request, and another may: its error, and how long it asked
    to be left alone (``Retry-After``)."""

    def __init__(self, error: ClientError, retry_after: float | None = None) -> None:
        super().__init__(str(error))
        self.error = error
        self.retry_after = retry_after


def _retry_after(response: httpx.Response) -> float | None:
    try:
        return min(float(response.headers.get("retry-after", "")), 30.0)
    except ValueError:
        return None  # absent, or an HTTP date: the default pause
