"""Every answer of every operation in ``/openapi.json``, errors in the shape really sent.

FastAPI documents a route's success and a 422 in its own shape (``HTTPValidationError``), which
this server never answers (``errors.py``). ``install(app)`` completes the schema once, after
FastAPI made it: what follows from a route itself is derived here, for every route alike

- 401 where the route authenticates (it depends on ``get_user``),
- 404 where its path names an object,
- 422 where it takes parameters or a body, 413 where it takes a body, and 400 where FastAPI
  decodes that body as JSON (it refuses bytes that are not UTF-8),
- 503 where it reaches the store (it depends on the node, or authenticates),

and each route declares the refusals only its own code knows (``responses=refusals({...})``:
403, 409, 429, a 404 for an id in the body). Each error gets the body shape of its path:
the native ``{"error": {...}}``, or Livy's ``{"msg"}`` with Livy's statuses (400 where the
native API says 409 or 422).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Mapping
from typing import Any

from fastapi import FastAPI
from fastapi.dependencies.models import Dependant
from fastapi.routing import APIRoute, iter_route_contexts
from pydantic import BaseModel
from pydantic.json_schema import models_json_schema
from starlette.routing import BaseRoute

from sparkgate.http.deps import get_node, get_user
from sparkgate.http.errors import error_styles
from sparkgate.schemas.errors import NativeError

# What each error status means anywhere; a route's own reason (``refusals``) replaces it.
REASONS: dict[int, str] = {
    # FastAPI's own refusal (an HTTPException, before validation) of a body it cannot decode.
    400: "The body is not JSON text: not UTF-8 (`HTTP_ERROR`).",
    401: "Missing or invalid credentials (`UNAUTHENTICATED`); `WWW-Authenticate` offers Basic "
    "and Bearer.",
    403: "The access rules refuse it (`ACCESS_DENIED`: a right is missing; `SETTING_DENIED`).",
    404: "No such object, or not one of yours: others' objects are reported as absent.",
    409: "The object's state refuses the request; the message says what to do.",
    413: "The body is over `SPARKGATE_REQUEST_MAX_BYTES` (`PAYLOAD_TOO_LARGE`). Refused before "
    "routing, so in the native shape on every path.",
    422: "Invalid parameters or body (`INVALID_REQUEST`; a native error names each field at "
    "fault in `fields`), or a request that cannot be carried out as given.",
    429: "A per-user limit of the access rules is reached (`LIMIT_EXCEEDED`).",
    503: "The store is unreachable (`STORE_UNAVAILABLE`) or the server's configuration is broken "
    "(`INVALID_CONFIGURATION`); nothing was done: send it again after `Retry-After` seconds.",
}

# The headers ``errors.py`` adds to these statuses.
_HEADERS: dict[int, dict[str, Any]] = {
    401: {
        "WWW-Authenticate": {
            "description": "The schemes accepted: Basic and Bearer.",
            "required": True,
            "schema": {"type": "string"},
        }
    },
    503: {
        "Retry-After": {
            "description": "Seconds to wait before sending the request again.",
            "required": True,
            "schema": {"type": "string"},
        }
    },
}

# The body limit (``limits.py``) answers before routing, in the native shape on every path.
_NATIVE_ONLY = frozenset({413})


def refusals(reasons: Mapping[int, str]) -> dict[int | str, dict[str, Any]]:
    """A route's own error answers, for its ``responses=``; the schema gets their body shape
    from the route's path.

    @router.post("/{query_id}/cancel", responses=refusals({409: "It is already final."}))
    """
    return {status: {"description": reason} for status, reason in reasons.items()}


def install(app: FastAPI) -> None:
    """Serve ``app``'s OpenAPI schema with every route's errors (made once, when first asked)."""
    documented: list[dict[str, Any]] = []

    def openapi() -> dict[str, Any]:
        schema = FastAPI.openapi(app)  # cached by FastAPI until its routes change
        if not documented or documented[0] is not schema:
            document_errors(schema, app.routes)
            documented[:] = [schema]
        return schema

    app.openapi = openapi  # type: ignore[method-assign]  # FastAPI's documented way


class _Style:
    """How the errors of some paths look: the body model and the status remapping."""

    def __init__(self, model: type[BaseModel], statuses: Mapping[int, int]) -> None:
        self.model = model
        self.statuses = dict(statuses)

    @property
    def ref(self) -> dict[str, str]:
        return {"$ref": f"#/components/schemas/{self.model.__name__}"}


def document_errors(schema: dict[str, Any], routes: Iterable[BaseRoute]) -> None:
    """Give every operation of ``schema`` the error answers of its route (module docstring)."""
    native = _Style(NativeError, {})
    # The shapes the error handlers use for path prefixes (errors.register_error_body): what
    # the schema says is what is answered.
    others = [(s, _Style(s.model, s.statuses)) for s in error_styles()]
    for context in iter_route_contexts(list(routes)):
        path, methods = context.path_format, context.methods
        if not isinstance(context.original_route, APIRoute) or not context.include_in_schema:
            continue
        assert path is not None and methods is not None  # an API route has both
        style = next((style for s, style in others if s.covers(path)), native)
        for method in methods:
            operation = schema["paths"][path][method.lower()]
            statuses = _derived(context.dependant, operation) | _declared(context.responses)
            responses = operation["responses"]
            for status in [s for s in responses if s.isdigit() and int(s) >= 400]:
                del responses[status]  # FastAPI's 422, and the declared ones without a body
            for status, reasons in sorted(_remapped(statuses, style).items()):
                body = native if status in _NATIVE_ONLY else style
                responses[str(status)] = {
                    "description": " Or: ".join(reasons),
                    "content": {"application/json": {"schema": body.ref}},
                    **({"headers": _HEADERS[status]} if status in _HEADERS else {}),
                }
    _add_models(schema, list(dict.fromkeys([native.model, *(s.model for s, _ in others)])))
    _drop_unused(schema, ("HTTPValidationError", "ValidationError"))


def _derived(dependant: Dependant, operation: Mapping[str, Any]) -> dict[int, str]:
    calls = set(_calls(dependant))
    statuses: dict[int, str] = {}
    if get_user in calls:
        statuses[401] = REASONS[401]
    if dependant.path_params:
        statuses[404] = REASONS[404]
    # From the operation, so that a body declared by hand (``openapi_extra``) counts too.
    if operation.get("parameters") or operation.get("requestBody"):
        statuses[422] = REASONS[422]
    if operation.get("requestBody"):
        statuses[413] = REASONS[413]
    if dependant.body_params:  # a body FastAPI reads as JSON
        statuses[400] = REASONS[400]
    if calls & {get_node, get_user}:
        statuses[503] = REASONS[503]
    return statuses


def _calls(dependant: Dependant) -> Iterable[Callable[..., Any]]:
    for sub in dependant.dependencies:
        if sub.call is not None:
            yield sub.call
        yield from _calls(sub)


def _declared(responses: Mapping[int | str, Mapping[str, Any]]) -> dict[int, str]:
    return {
        int(status): str(response.get("description") or REASONS.get(int(status), ""))
        for status, response in responses.items()
        if str(status).isdigit() and int(status) >= 400
    }


def _remapped(statuses: Mapping[int, str], style: _Style) -> dict[int, list[str]]:
    """Statuses as the style answers them, with the reasons of each (409 and 422 are both
    Livy's 400)."""
    answered: dict[int, list[str]] = {}
    for status, reason in sorted(statuses.items()):
        target = status if status in _NATIVE_ONLY else style.statuses.get(status, status)
        reasons = answered.setdefault(target, [])
        if reason not in reasons:
            reasons.append(reason)
    return answered


def _add_models(schema: dict[str, Any], models: list[type[BaseModel]]) -> None:
    _, definitions = models_json_schema(
        [(model, "serialization") for model in models],
        ref_template="#/components/schemas/{model}",
    )
    components = schema.setdefault("components", {}).setdefault("schemas", {})
    for name, definition in definitions.get("$defs", {}).items():
        components.setdefault(name, definition)


def _drop_unused(schema: dict[str, Any], names: Iterable[str]) -> None:
    """Remove these components unless something still refers to them (in order: a component
    may be referred to only by one removed before it)."""
    components = schema.get("components", {}).get("schemas", {})
    for name in names:
        definition = components.pop(name, None)
        if definition is not None and f'"#/components/schemas/{name}"' in json.dumps(schema):
            components[name] = definition
