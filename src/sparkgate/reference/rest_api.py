"""The REST API reference page, from the app's own OpenAPI document.

The document is the one ``/openapi.json`` serves: the app is built (no server, no node: the
node starts with the app's lifespan, which never runs here) and asked for it. The page lists
every operation under its tag (or its path's first segment), with its parameters, its body and
every answer, then every schema those name, each linked from where it is used.

Written here rather than by an OpenAPI renderer plugin: neoteroi-mkdocs' MkDocs style needs a
stylesheet published outside its package (a remote file, which the site may not fetch), and its
plain Markdown style inlines each answer's whole schema and a generated example into every
operation (over 500 KB for this API), grouped by nothing.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from sparkgate.settings import Settings

Json = Mapping[str, Any]

_REF = "#/components/schemas/"
_METHODS = ("get", "put", "post", "patch", "delete", "head", "options")
# A code span (``x`` or `x`), kept as it is; outside them "<" starts HTML in Markdown.
_CODE = re.compile(r"(``.+?``|`[^`\n]+`)", re.DOTALL)


@dataclass(frozen=True)
class Parameter:
    name: str
    where: str  # path, query, header, cookie
    type: str  # Markdown: a type, or a link to a schema
    required: bool
    description: str


@dataclass(frozen=True)
class Answer:
    status: str
    body: str  # Markdown: the body's type and media type, or "" for none
    description: str


@dataclass(frozen=True)
class Operation:
    method: str
    path: str
    group: str
    summary: str
    description: str
    parameters: tuple[Parameter, ...]
    body: str  # Markdown: the request body's type and media type, or "" for none
    answers: tuple[Answer, ...]


@dataclass(frozen=True)
class Field:
    name: str
    type: str
    required: bool
    description: str


@dataclass(frozen=True)
class Schema:
    name: str
    description: str
    fields: tuple[Field, ...]
    values: str  # an enumeration's values, Markdown, or ""


def page() -> str:
    return render(openapi_document())


def openapi_document() -> dict[str, Any]:
    """What ``/openapi.json`` answers, without a server: building the app starts nothing."""
    from sparkgate.server import create_app

    # The defaults, not this environment's SPARKGATE_* variables: the page describes the API
    # every server has.
    document: dict[str, Any] = create_app(Settings.model_construct()).openapi()
    return document


def render(document: Json) -> str:
    operations = list(_operations(document))
    schemas = [_schema(name, body) for name, body in document["components"]["schemas"].items()]
    info = document["info"]
    lines = [
        "# REST API",
        "",
        f"Every operation of sparkgate {info['version']}'s HTTP API: the native API under "
        "`/v1`, the Livy API (`/sessions`, `/batches`), HiveServer2 over HTTP (`/cliservice`) "
        "and the node's own endpoints. A running server serves the same description, as "
        f"OpenAPI {document['openapi']}, at `/openapi.json`.",
        "",
        "An operation that answers 401 needs credentials: Basic (a user's password or access "
        "token) or a Bearer token. Each error answer names its body: the native error, or "
        "Livy's under the Livy paths.",
        "",
    ]
    groups: dict[str, list[Operation]] = {}
    for operation in operations:
        groups.setdefault(operation.group, []).append(operation)
    for group, members in groups.items():
        lines += [f"## {group}", ""]
        for operation in members:
            lines += _operation_lines(operation)
    lines += ["## Schemas", ""]
    for schema in sorted(schemas, key=lambda s: s.name.lower()):
        lines += _schema_lines(schema)
    return "\n".join(lines).rstrip() + "\n"


def _operations(document: Json) -> Iterable[Operation]:
    for path, methods in document["paths"].items():
        for method in _METHODS:
            if method not in methods:
                continue
            body: Json = methods[method]
            tags = body.get("tags") or [_first_segment(path)]
            yield Operation(
                method=method.upper(),
                path=path,
                group=str(tags[0]).capitalize(),
                summary=str(body.get("summary", "")),
                description=str(body.get("description", "")),
                parameters=tuple(_parameter(p) for p in body.get("parameters", [])),
                body=_content(body.get("requestBody", {}).get("content", {})),
                answers=tuple(
                    Answer(status, _content(answer.get("content", {})), answer["description"])
                    for status, answer in body["responses"].items()
                ),
            )


def _first_segment(path: str) -> str:
    segments = [s for s in path.split("/") if s]
    return segments[0] if segments else "/"


def _parameter(body: Json) -> Parameter:
    schema = body.get("schema", {})
    return Parameter(
        name=body["name"],
        where=body["in"],
        type=_type(schema),
        required=bool(body.get("required")),
        description=str(body.get("description") or schema.get("description") or ""),
    )


def _content(content: Json) -> str:
    """A body's type with its media types: "[`Query`](#schema-query) (application/json)"."""
    described = [f"{_type(media.get('schema', {}))} ({kind})" for kind, media in content.items()]
    return "; ".join(described)


def _schema(name: str, body: Json) -> Schema:
    required = set(body.get("required", []))
    fields = tuple(
        Field(
            name=field,
            type=_type(schema),
            required=field in required,
            description=_field_description(schema),
        )
        for field, schema in body.get("properties", {}).items()
    )
    values = ", ".join(f"`{v}`" for v in body.get("enum", []))
    return Schema(name, str(body.get("description", "")), fields, values)


def _field_description(schema: Json) -> str:
    text = str(schema.get("description", ""))
    if "default" in schema and schema["default"] is not None:
        default = f"Default: `{_literal(schema['default'])}`."
        text = f"{text} {default}" if text else default
    return text


def _literal(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value) if not isinstance(value, str) else value


def _type(schema: Json) -> str:
    """A schema's type in a few words of Markdown, a named schema as a link to its section."""
    if "$ref" in schema:
        name = str(schema["$ref"]).removeprefix(_REF)
        return f"[`{name}`](#{_anchor(name)})"
    for combined in ("anyOf", "oneOf", "allOf"):
        if combined in schema:
            parts = [_type(part) for part in schema[combined]]
            joiner = " and " if combined == "allOf" else " or "
            return joiner.join(dict.fromkeys(parts))
    if "const" in schema:
        return f"`{_literal(schema['const'])}`"
    if "enum" in schema:
        return "one of " + ", ".join(f"`{_literal(v)}`" for v in schema["enum"])
    kind = schema.get("type")
    if isinstance(kind, list):
        return " or ".join(_type({**schema, "type": k}) for k in kind)
    if kind == "array":
        return f"array of {_type(schema.get('items', {}))}"
    if kind == "object":
        extra = schema.get("additionalProperties")
        if isinstance(extra, Mapping) and extra:
            return f"object of {_type(extra)}"
        return "object"
    if kind is None:
        return "any"
    text = str(kind)
    if "format" in schema:
        text += f" ({schema['format']})"
    return text


def _anchor(name: str) -> str:
    return "schema-" + re.sub(r"[^a-z0-9]+", "-", name.lower()).strip("-")


def _operation_lines(operation: Operation) -> list[str]:
    lines = [f"### `{operation.method} {operation.path}`", ""]
    if operation.summary:
        lines += [f"**{_text(operation.summary)}**", ""]
    if operation.description:
        lines += [_text(operation.description), ""]
    if operation.parameters:
        lines += [
            "| Parameter | In | Type | Required | Description |",
            "| --- | --- | --- | --- | --- |",
        ]
        lines += [
            _row(f"`{p.name}`", p.where, p.type, "yes" if p.required else "no", p.description)
            for p in operation.parameters
        ]
        lines.append("")
    if operation.body:
        lines += [f"Request body: {operation.body}", ""]
    lines += ["| Status | Body | Description |", "| --- | --- | --- |"]
    lines += [_row(a.status, a.body or "none", a.description) for a in operation.answers]
    lines.append("")
    return lines


def _schema_lines(schema: Schema) -> list[str]:
    lines = [f"### {schema.name} {{#{_anchor(schema.name)}}}", ""]
    if schema.description:
        lines += [_text(schema.description), ""]
    if schema.values:
        lines += [f"One of {schema.values}.", ""]
    if schema.fields:
        lines += ["| Field | Type | Required | Description |", "| --- | --- | --- | --- |"]
        lines += [
            _row(f"`{f.name}`", f.type, "yes" if f.required else "no", f.description)
            for f in schema.fields
        ]
        lines.append("")
    return lines


def _row(*cells: str) -> str:
    """A table row: a cell is one line, and its "|" is not a column's edge."""
    flat = [" ".join(_text(cell).split()).replace("|", "\\|") for cell in cells]
    return "| " + " | ".join(flat) + " |"


def _text(text: str) -> str:
    """Docstring text as Markdown: "<" and ">" outside code spans are text, not HTML."""
    parts = _CODE.split(text)
    return "".join(
        part if index % 2 else part.replace("<", "&lt;").replace(">", "&gt;")
        for index, part in enumerate(parts)
    )
