"""The OpenAPI schema documents every answer an operation gives, errors in the shape really
sent, and a closed schema for every JSON success."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from sparkgate import livy
from sparkgate.auth.access import RIGHTS
from sparkgate.errors import PayloadTooLarge, QueryNotFound
from sparkgate.http.errors import native_body
from sparkgate.livy.bodies import LivyError
from sparkgate.livy.common import livy_error_body
from sparkgate.schemas.errors import NativeError
from sparkgate.schemas.users import Whoami
from sparkgate.settings import Settings

Operation = tuple[str, str, dict[str, Any]]


@pytest.fixture(scope="module")
def schema() -> dict[str, Any]:
    from sparkgate.server import create_app

    return create_app(Settings(home=Path("/nonexistent"))).openapi()


@pytest.fixture(scope="module")
def operations(schema: dict[str, Any]) -> list[Operation]:
    found = [
        (method.upper(), path, operation)
        for path, methods in schema["paths"].items()
        for method, operation in methods.items()
    ]
    assert len(found) > 50
    return found


def _livy(path: str) -> bool:
    return path.startswith(livy.PREFIXES)


def _errors(operation: dict[str, Any]) -> dict[int, dict[str, Any]]:
    return {int(s): r for s, r in operation["responses"].items() if int(s) >= 400}


def _resolve(schema: dict[str, Any], node: dict[str, Any]) -> dict[str, Any]:
    ref = node.get("$ref")
    if ref is None:
        return node
    resolved: dict[str, Any] = schema["components"]["schemas"][ref.rsplit("/", 1)[-1]]
    return resolved


def test_every_operation_but_healthz_documents_401(operations: list[Operation]) -> None:
    for method, path, operation in operations:
        if path == "/healthz":
            assert 401 not in _errors(operation)
            continue
        assert 401 in _errors(operation), (method, path)
        assert "WWW-Authenticate" in _errors(operation)[401]["headers"]


def test_every_operation_documents_503_with_retry_after(operations: list[Operation]) -> None:
    for method, path, operation in operations:
        assert "Retry-After" in _errors(operation)[503]["headers"], (method, path)


def test_an_object_in_the_path_may_be_absent(operations: list[Operation]) -> None:
    for method, path, operation in operations:
        if "{" in path:
            assert 404 in _errors(operation), (method, path)


def test_parameters_and_bodies_may_be_invalid(operations: list[Operation]) -> None:
    checked = 0
    for method, path, operation in operations:
        if not (operation.get("parameters") or operation.get("requestBody")):
            continue
        invalid = 400 if _livy(path) else 422  # Livy says 400 for the native 422 and 409
        assert invalid in _errors(operation), (method, path)
        if _livy(path):
            assert 422 not in _errors(operation), (method, path)
        if operation.get("requestBody"):
            assert 413 in _errors(operation), (method, path)
        if "application/json" in operation.get("requestBody", {}).get("content", {}):
            assert 400 in _errors(operation), (method, path)  # not UTF-8
        checked += 1
    assert checked > 40


def test_error_bodies_are_the_shape_of_their_path(
    schema: dict[str, Any], operations: list[Operation]
) -> None:
    for method, path, operation in operations:
        for status, response in _errors(operation).items():
            # The body limit answers before routing: natively on every path.
            livy_shaped = _livy(path) and status != 413
            expected = "LivyError" if livy_shaped else "NativeError"
            ref = response["content"]["application/json"]["schema"]["$ref"]
            assert ref == f"#/components/schemas/{expected}", (method, path, status)
    components = schema["components"]["schemas"]
    assert "HTTPValidationError" not in components
    assert "ValidationError" not in components


def test_route_specific_refusals_are_documented(operations: list[Operation]) -> None:
    statuses = {(m, p): set(_errors(o)) for m, p, o in operations}
    assert {403, 404, 409, 429} <= statuses["POST", "/v1/queries"]
    assert 409 in statuses["GET", "/v1/queries/{query_id}/result"]
    assert 409 in statuses["POST", "/v1/queries/{query_id}/cancel"]
    assert {403, 429} <= statuses["POST", "/v1/sessions"]
    assert 403 in statuses["POST", "/v1/engines/{engine_id}/stop"]
    assert 403 not in statuses["GET", "/v1/audit"]  # a user reads their own events
    assert {403, 409} <= statuses["POST", "/v1/deployments"]
    assert {403, 400, 429} <= statuses["POST", "/sessions/{session_id}/statements"]


def test_every_json_success_has_a_closed_schema(
    schema: dict[str, Any], operations: list[Operation]
) -> None:
    for method, path, operation in operations:
        for status, response in operation["responses"].items():
            if not status.startswith("2"):
                continue
            content = response["content"]
            if "application/json" not in content:
                assert content, (method, path, status)  # HTML, Thrift: a media type of its own
                continue
            top = content["application/json"]["schema"]
            for option in top.get("anyOf", [top]):
                body = _resolve(schema, option)
                assert body.get("type") == "object", (method, path, status, body)
                assert body.get("additionalProperties") is False, (method, path, status)
                assert body.get("properties"), (method, path, status)


def test_error_models_describe_what_the_handlers_send() -> None:
    error = QueryNotFound(7).recorded()
    assert NativeError.model_validate(native_body(404, error)).error.model_extra == {"query_id": 7}
    NativeError.model_validate({"error": PayloadTooLarge(10).to_dict()})
    LivyError.model_validate(livy_error_body(400, error))


def test_rights_are_the_access_rules_rights() -> None:
    rights = Whoami.model_json_schema()["properties"]["rights"]["items"]["enum"]
    assert tuple(rights) == RIGHTS
