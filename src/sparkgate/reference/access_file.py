"""The access file's reference: every key with its type, default and meaning, read from the
pydantic models that parse the file (``sparkgate.auth.access`` and the models of its sections),
and a complete example that the real parser accepts (the tests parse it).

``model_sections`` is shared with the resource groups' page, which documents the
``resource_groups:`` key the same way.
"""

from __future__ import annotations

import json
import types
from dataclasses import dataclass
from typing import Any, Literal, Union, get_args, get_origin

from pydantic import BaseModel
from pydantic.fields import FieldInfo
from pydantic_core import PydanticUndefined

from sparkgate.auth.access import _AccessFile
from sparkgate.auth.resource_groups import ResourceGroupsFile

# A default longer than this is listed under the table rather than in it.
_SHORT_DEFAULT = 40


@dataclass(frozen=True)
class Key:
    """One key of a section: its name as written in the file, type, default and meaning."""

    name: str
    type: str
    default: str
    meaning: str
    long_default: tuple[str, ...] = ()  # a default listed in full under the table


@dataclass(frozen=True)
class Section:
    """The keys of one mapping of the file, at ``path`` (``tables[].columns[]``)."""

    path: str
    doc: str
    keys: tuple[Key, ...]


def _models(annotation: Any) -> list[type[BaseModel]]:
    """The models inside a field's type (``list[_Rule] | None`` -> ``[_Rule]``)."""
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return [annotation]
    return [model for arg in get_args(annotation) for model in _models(arg)]


def _type(annotation: Any, path: str) -> str:
    origin = get_origin(annotation)
    args = get_args(annotation)
    if origin in (Union, types.UnionType):
        return " or ".join(_type(arg, path) for arg in args if arg is not type(None))
    if origin is list:
        return f"list of {_type(args[0], path + '[]')}"
    if origin is dict:
        return f"map of {_type(args[0], path)} to {_type(args[1], path)}"
    if origin is Literal:
        return " or ".join(f"`{value}`" for value in args)
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return f"mapping (`{path}`)"
    names = {str: "string", int: "integer", float: "number", bool: "boolean"}
    return names.get(annotation, getattr(annotation, "__name__", str(annotation)))


def _default(field: FieldInfo) -> tuple[str, tuple[str, ...]]:
    if field.default_factory is not None:
        value: Any = field.default_factory()  # type: ignore[call-arg]
    elif field.default is PydanticUndefined:
        return "required", ()
    else:
        value = field.default
    if isinstance(value, BaseModel):
        return "its keys' defaults", ()
    shown = json.dumps(value)
    if len(shown) > _SHORT_DEFAULT and isinstance(value, list):
        return "the list below", tuple(str(item) for item in value)
    return f"`{shown}`", ()


def model_sections(model: type[BaseModel], path: str) -> list[Section]:
    """``model``'s keys, then those of the models inside it, each model once (a group's
    ``subGroups`` are groups); raises for a key without a description."""
    sections: list[Section] = []
    seen: set[type[BaseModel]] = set()

    def visit(current: type[BaseModel], at: str) -> None:
        seen.add(current)
        keys = []
        nested: list[tuple[type[BaseModel], str]] = []
        for name, field in current.model_fields.items():
            written = field.alias or name
            where = f"{at}.{written}" if at else written
            if not field.description:
                raise RuntimeError(f"{current.__name__}.{name} ({where}) has no description")
            default, long_default = _default(field)
            child_path = where + ("[]" if get_origin(_bare(field.annotation)) is list else "")
            keys.append(
                Key(
                    written,
                    _type(field.annotation, where),
                    default,
                    field.description,
                    long_default,
                )
            )
            nested += [(m, child_path) for m in _models(field.annotation) if m not in seen]
        sections.append(Section(at, (current.__doc__ or "").strip(), tuple(keys)))
        for child, child_at in nested:
            if child not in seen:
                visit(child, child_at)

    visit(model, path)
    return sections


def _bare(annotation: Any) -> Any:
    """``X`` of ``X | None``."""
    if get_origin(annotation) in (Union, types.UnionType):
        args = [arg for arg in get_args(annotation) if arg is not type(None)]
        return args[0] if len(args) == 1 else annotation
    return annotation


def _cell(text: str) -> str:
    """Text for a Markdown table's cell: its pipes escaped (`a|b` in a regular expression)."""
    return text.replace("|", "\\|")


def render(sections: list[Section], top: str) -> list[str]:
    """Markdown: a heading and a table per section; ``top`` names the top section."""
    lines: list[str] = []
    for section in sections:
        lines += [f"## `{section.path}`" if section.path else f"## {top}", ""]
        if section.doc:
            lines += [" ".join(section.doc.replace("``", "`").split()), ""]
        lines += ["| Key | Type | Default | Meaning |", "| --- | --- | --- | --- |"]
        lines += [
            f"| `{k.name}` | {_cell(k.type)} | {k.default} | {_cell(k.meaning)} |"
            for k in section.keys
        ]
        lines.append("")
        for key in section.keys:
            if key.long_default:
                lines += [f"Default of `{key.name}`:", ""]
                lines += [f"- `{item}`" for item in key.long_default]
                lines.append("")
    return lines


# The first hour's complete example and the access-rules how-to's table rules, in one file.
EXAMPLE = """\
admins: [carol]                    # every right; see and act on everything ("@group" works too)
groups: {hr: [alice], finance: [bob], analysts: [dave, erin]}  # added to a JWT's or LDAP's
impersonators: [airflow]           # may pass Livy's proxyUser
rules:                             # the first rule naming the user or a group of theirs wins
  - {groups: [hr], allow: [sql, code, streams, jobs]}
  - {users: ["*"], allow: [sql, streams]}      # with tables:, code is for the trusted
conf:                              # Spark settings users may not set (this replaces the default)
  deny: ["spark.master", "spark.driver.*", "spark.executor.extra*", "spark.jars*",
         "spark.sql.warehouse.dir", "spark.hadoop.*"]
limits: {sessions_per_user: 10, running_queries_per_user: 20}
tables:                            # the first rule matching user and table wins
  - {group: hr, schema: hr, privileges: [SELECT, INSERT, DELETE, UPDATE, OWNERSHIP]}
  - group: finance
    schema: hr
    table: salaries
    privileges: [SELECT]
    columns:
      - {name: ssn, allow: false}                             # as if it did not exist
      - {name: salary, mask: "CASE WHEN is_member('hr') THEN salary ELSE round(salary, -4) END"}
    filter: "region = 'EU' OR current_user() = manager"       # the rows they may see
  - {schema: hr, table: eu_pay, privileges: [SELECT]}      # a view alice made over salaries
  - {group: analysts, schema: "sales|analysts", privileges: [SELECT, INSERT, DELETE, UPDATE]}
schemas:                           # who may create, alter and drop in a schema
  - {group: hr, schema: hr, owner: true}
  - {group: analysts, schema: analysts, owner: true}
resource_groups:                   # see the resource groups' reference
  rootGroups:
    - {name: analysts, hardConcurrencyLimit: 4, maxQueued: 100}
    - {name: low, hardConcurrencyLimit: 1, maxQueued: 100}
  selectors:
    - {group: analysts}
quotas:
  - {user: bob, per: day, executorCpuSeconds: 3600}          # then 429 until midnight UTC
  - {group: analysts, per: month, executorRunSeconds: 360000, onQuota: demote, demoteTo: low}
"""

_INTRO = """\
# Access file

The access file says who is an admin, who is in which group, who may impersonate, which
rights each user has, which Spark settings users may not set, per-user limits, table rules,
resource groups and quotas. Point `SPARKGATE_ACCESS_FILE` at it (YAML). It is re-read when it
changes, with no restart: a broken edit is logged and the rules in force stay (a broken file at
start-up stops the server with the reason). Changing the setting itself (adding a file, or
pointing at another) takes a restart, which recycles the engines.

Without an access file every authenticated user has every right but `admin`, admins come from
`SPARKGATE_ADMINS`, and the deny list of Spark settings is the default one (below). A key the
file does not know is refused, naming it. See [Users and rights](../how-to/users-and-rights.md)
and [Access rules](../how-to/access-rules.md) for how to use it.

## A complete example

```yaml
{example}```
"""


def page() -> str:
    sections = model_sections(_AccessFile, "")
    # The resource groups' own page documents their keys.
    groups = {s.path for s in model_sections(ResourceGroupsFile, "resource_groups")}
    shown = [s for s in sections if s.path not in groups]
    lines = [_INTRO.replace("{example}", EXAMPLE)]
    lines += render(shown, "Top-level keys")
    lines += [
        "## `resource_groups`",
        "",
        "Its keys are in the [resource groups' reference](resource-groups.md).",
        "",
    ]
    return "\n".join(lines)
