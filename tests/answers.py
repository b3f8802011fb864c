"""Answers as the native API sends them, for clients tested against a fake transport: one
valid JSON value of a model, made from its own JSON schema (every key, the least value of
each type), so the example follows the model as it changes."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel


def example(model: type[BaseModel], **fields: Any) -> dict[str, Any]:
    """A JSON answer of ``model``, with ``fields`` as given."""
    schema = model.model_json_schema(mode="serialization")
    made: dict[str, Any] = _value(schema, schema.get("$defs", {}))
    return made | fields


def _value(schema: dict[str, Any], defs: dict[str, Any]) -> Any:
    if "$ref" in schema:
        return _value(defs[schema["$ref"].rsplit("/", 1)[-1]], defs)
    if "const" in schema:
        return schema["const"]
    if "enum" in schema:
        return schema["enum"][0]
    if "anyOf" in schema:  # nullable fields are null; otherwise the first choice
        choices = schema["anyOf"]
        if any(choice.get("type") == "null" for choice in choices):
            return None
        return _value(choices[0], defs)
    kind = schema.get("type")
    if kind == "object":
        properties = schema.get("properties", {})
        return {name: _value(field, defs) for name, field in properties.items()}
    if kind == "array":
        return []
    if kind == "string":
        return "2026-11-28T12:00:00.000Z" if schema.get("format") == "date-time" else "x"
    if kind == "integer":
        return 1
    if kind == "number":
        return 1.5
    if kind == "boolean":
        return True
    return None  # free-form (Any): null
