"""The one place errors become HTTP responses.

Native routes answer ``{"error": {"code", "message", ...}}``; other API styles (Livy) register
their own body shape for their path prefixes.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse, Response
from pydantic import BaseModel
from starlette.exceptions import HTTPException as StarletteHTTPException
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from sparkgate.errors import (
    CatalogUnavailable,
    ConfigurationError,
    Conflict,
    Forbidden,
    IdempotencyKeyInvalid,
    InvalidRequest,
    LimitExceeded,
    NotFound,
    PayloadTooLarge,
    SparkgateError,
    StoreUnavailable,
    Unauthenticated,
)
from sparkgate.recorded import ErrorCode, RecordedError

log = logging.getLogger("sparkgate.api")

ErrorBody = Callable[[int, RecordedError], dict[str, Any]]
ErrorPage = Callable[[Request, int, RecordedError], Response]


def under(path: str, prefix: str) -> bool:
    return path == prefix or path.startswith(prefix.rstrip("/") + "/")


@dataclass(frozen=True)
class ErrorStyle:
    """How the errors of the paths under ``prefix`` look: ``body`` makes them, ``model`` is
    their schema in ``/openapi.json``, ``statuses`` remaps HTTP statuses."""

    prefix: str
    body: ErrorBody
    model: type[BaseModel]
    statuses: Mapping[int, int]

    def covers(self, path: str) -> bool:
        return under(path, self.prefix)


# The first match wins; the native shape is the fallback.
_BODIES: list[ErrorStyle] = []


# (path prefix, renderer) for paths people read in a browser (the dashboard): errors there are
# pages, not JSON.
_PAGES: list[tuple[str, ErrorPage]] = []


def register_error_page(prefix: str, page: ErrorPage) -> None:
    if not any(p == prefix for p, _ in _PAGES):
        _PAGES.append((prefix, page))


def native_body(_status: int, error: RecordedError) -> dict[str, Any]:
    return {"error": error.to_json()}


def register_error_body(
    prefix: str,
    body: ErrorBody,
    *,
    model: type[BaseModel],
    statuses: Mapping[int, int] | None = None,
) -> None:
    """Shape the error answers of paths under ``prefix`` (``model`` describes them in the
    OpenAPI schema); ``statuses`` remaps HTTP statuses (Livy answers 400 where the native API
    says 409 or 422). Registering again is harmless.

    register_error_body("/batches", lambda status, error: {"msg": error.message}, model=Msg)
    """
    if any(s.prefix == prefix and s.body is body for s in _BODIES):
        return
    _BODIES.append(ErrorStyle(prefix, body, model, dict(statuses or {})))


def error_styles() -> tuple[ErrorStyle, ...]:
    """The error shapes registered for path prefixes, in the order they are matched."""
    return tuple(_BODIES)


# The first class an error is an instance of decides its status.
_STATUSES: tuple[tuple[type[SparkgateError], int], ...] = (
    (NotFound, 404),
    (Unauthenticated, 401),
    (Forbidden, 403),
    (LimitExceeded, 429),
    (PayloadTooLarge, 413),
    (Conflict, 409),
    (IdempotencyKeyInvalid, 400),
    (InvalidRequest, 422),
    (ConfigurationError, 503),
    (StoreUnavailable, 503),
    (CatalogUnavailable, 503),
)


def status_of(exc: SparkgateError) -> int:
    return next((status for kind, status in _STATUSES if isinstance(exc, kind)), 500)


def error_response(request: Request, status: int, error: RecordedError) -> Response:
    path = request.url.path
    for prefix, page in _PAGES:
        if under(path, prefix):
            return page(request, status, error)
    for style in _BODIES:
        if style.covers(path):
            status = style.statuses.get(status, status)
            return JSONResponse(
                style.body(status, error), status_code=status, headers=_headers(status)
            )
    return JSONResponse(native_body(status, error), status_code=status, headers=_headers(status))


def _headers(status: int) -> dict[str, str] | None:
    # Both schemes are offered: Basic for Livy clients and JDBC tools, Bearer for tokens.
    if status == 401:
        return {"WWW-Authenticate": 'Basic realm="sparkgate", charset="UTF-8", Bearer'}
    if status == 503:
        return {"Retry-After": "2"}
    return None


def _describe_validation(exc: RequestValidationError) -> RecordedError:
    fields = []
    for problem in exc.errors():
        location = ".".join(str(part) for part in problem.get("loc", ()) if part != "body")
        fields.append({"field": location or "body", "message": problem.get("msg", "invalid")})
    if any(problem.get("type") == "json_invalid" for problem in exc.errors()):
        detail = exc.errors()[0].get("ctx", {}).get("error", "")
        message = f"The request body is not valid JSON{': ' + str(detail) if detail else ''}."
    else:
        message = "; ".join(f"{f['field']}: {f['message']}" for f in fields)
    return InvalidRequest(message, fields=fields).recorded()


# Starlette's own errors (a path no route has, a method the path does not take).
_HTTP_CODES = {404: ErrorCode.NOT_FOUND, 405: ErrorCode.METHOD_NOT_ALLOWED}


def install_error_handlers(app: FastAPI) -> None:
    @app.exception_handler(SparkgateError)
    async def _sparkgate(request: Request, exc: SparkgateError) -> Response:
        return error_response(request, status_of(exc), exc.recorded())

    @app.exception_handler(RequestValidationError)
    async def _validation(request: Request, exc: RequestValidationError) -> Response:
        return error_response(request, 422, _describe_validation(exc))

    @app.exception_handler(StarletteHTTPException)
    async def _http(request: Request, exc: StarletteHTTPException) -> Response:
        code = _HTTP_CODES.get(exc.status_code, ErrorCode.HTTP_ERROR)
        message = str(exc.detail)
        if exc.status_code == 404:
            message = f"No route {request.method} {request.url.path}."
        answer = error_response(request, exc.status_code, RecordedError(code, message))
        # Starlette's own headers: a 405 names the methods the path takes (Allow).
        answer.headers.update(exc.headers or {})
        return answer


class UnexpectedErrors:
    """Answers an exception no handler knows with a 500, logged once, here.

    Not an exception handler for ``Exception``: Starlette calls that one from its outermost
    middleware, and then re-raises the exception for the server to see, so uvicorn logged every
    500 a second time and closed the keep-alive connection under the client's next request.
    This middleware sits inside the others and returns normally. The answer names the error's
    type only: its text can hold internals (SQL, paths) that the log is for.
    """

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        started = False

        async def tracked(message: Message) -> None:
            nonlocal started
            started = started or message["type"] == "http.response.start"
            await send(message)

        try:
            await self.app(scope, receive, tracked)
        except Exception as exc:
            request = Request(scope)
            log.exception("unexpected error on %s %s", request.method, request.url.path)
            if started:
                return  # part of the answer is out: the server closes the connection
            error = SparkgateError(
                f"An unexpected error ({type(exc).__name__}) stopped this request; "
                "the server's log has the details."
            )
            await error_response(request, 500, error.recorded())(scope, receive, send)
