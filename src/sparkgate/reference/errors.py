"""The error-code reference: every ``ErrorCode`` with its SQLSTATE and meaning (from
``sparkgate.error_catalog``), the HTTP status and gRPC status it answers with, and how an
error looks at each door.

The statuses are not written here: they are what ``sparkgate.http.errors`` and
``sparkgate.connect.statuses`` decide for the exception classes that carry each code, found
by reading the source for the classes (``code = ErrorCode.X``) and for the errors raised with a
code given (``SqlError(..., code=ErrorCode.X)``).
"""

from __future__ import annotations

import ast
import importlib
import inspect
import re
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import grpc

import sparkgate
from sparkgate import livy
from sparkgate.connect import statuses as connect_statuses
from sparkgate.error_catalog import ERRORS
from sparkgate.http import errors as http_errors
from sparkgate.recorded import ErrorCode, SparkgateError

SRC = Path(sparkgate.__file__).parent
# Doors that are not HTTP: an error class of theirs is told in their own terms.
_NOT_HTTP = ("sparkgate.hive2", "sparkgate.connect")


@dataclass(frozen=True)
class CodeGroup:
    """The codes under one of ``ErrorCode``'s section comments, in the enum's order."""

    title: str
    codes: tuple[ErrorCode, ...]


def groups() -> list[CodeGroup]:
    """``ErrorCode``'s members under its section comments (``# not found``, ...)."""
    found: list[CodeGroup] = []
    title, codes = "General", list[ErrorCode]()
    for line in inspect.getsource(ErrorCode).splitlines():
        comment = re.fullmatch(r"\s*# (.+)", line)
        member = re.fullmatch(r"\s*([A-Z_]+) = \"\1\".*", line)
        if comment:
            if codes:
                found.append(CodeGroup(title, tuple(codes)))
            title, codes = comment.group(1), []
        elif member:
            codes.append(ErrorCode(member.group(1)))
    if codes:
        found.append(CodeGroup(title, tuple(codes)))
    listed = [code for group in found for code in group.codes]
    if sorted(listed) != sorted(ErrorCode):
        raise RuntimeError("ErrorCode's source no longer reads as sections of members")
    return found


def _module_name(path: Path) -> str:
    parts = ["sparkgate", *path.relative_to(SRC).with_suffix("").parts]
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def _error_code(node: ast.expr | None) -> str | None:
    """``X`` of an ``ErrorCode.X`` expression."""
    if (
        isinstance(node, ast.Attribute)
        and isinstance(node.value, ast.Name)
        and node.value.id == "ErrorCode"
    ):
        return node.attr
    return None


def _scan() -> tuple[dict[str, list[tuple[str, str]]], dict[str, set[str]]]:
    """From the source: the classes that declare a code (code -> [(module, class)]) and the
    class names raised with a code given (code -> {class name})."""
    declared: dict[str, list[tuple[str, str]]] = {}
    given: dict[str, set[str]] = {}
    for path in sorted(SRC.rglob("*.py")):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for node in ast.walk(tree):
            if isinstance(node, ast.ClassDef):
                for statement in node.body:
                    target = value = None
                    if isinstance(statement, ast.Assign) and len(statement.targets) == 1:
                        target, value = statement.targets[0], statement.value
                    elif isinstance(statement, ast.AnnAssign):
                        target, value = statement.target, statement.value
                    code = _error_code(value)
                    if isinstance(target, ast.Name) and target.id == "code" and code:
                        declared.setdefault(code, []).append((_module_name(path), node.name))
            elif isinstance(node, ast.Call):
                for keyword in node.keywords:
                    code = _error_code(keyword.value) if keyword.arg == "code" else None
                    func = node.func
                    while isinstance(func, ast.Attribute):  # SqlError.at(...)
                        func = func.value
                    if code and isinstance(func, ast.Name):
                        given.setdefault(code, set()).add(func.id)
    return declared, given


def carriers() -> dict[ErrorCode, list[type[BaseException]]]:
    """The exception classes each code is raised as (a subclass that keeps its parent's code
    too), found in the source and imported."""
    declared, given = _scan()
    by_name: dict[str, type[BaseException]] = {}
    found: dict[ErrorCode, list[type[BaseException]]] = {code: [] for code in ErrorCode}
    for code, places in declared.items():
        for module, name in places:
            cls = getattr(importlib.import_module(module), name)
            by_name[name] = cls
            for kind in _with_subclasses(cls):
                if getattr(kind, "code", None) == code and kind not in found[ErrorCode(code)]:
                    found[ErrorCode(code)].append(kind)
    for code, names in given.items():
        found[ErrorCode(code)].extend(by_name[name] for name in sorted(names) if name in by_name)
    return found


def _with_subclasses(cls: type[BaseException]) -> Iterator[type[BaseException]]:
    yield cls
    for sub in cls.__subclasses__():
        yield from _with_subclasses(sub)


def _answered(cls: type[BaseException]) -> SparkgateError | None:
    """An instance of ``cls`` for the status tables (which test ``isinstance``), if a door
    answers with it: not a class only ever recorded (``sparkgate.recorded``'s own), not a
    non-HTTP door's, not an engine's internal exception."""
    if not issubclass(cls, SparkgateError):
        return None
    recorded_only = cls.__module__ == "sparkgate.recorded" and cls is not SparkgateError
    if recorded_only or cls.__module__.startswith(_NOT_HTTP):
        return None
    instance: SparkgateError = cls.__new__(cls)
    return instance


def http_statuses(found: list[type[BaseException]]) -> list[int]:
    return sorted(
        {http_errors.status_of(e) for e in map(_answered, found) if e is not None},
    )


def grpc_statuses(found: list[type[BaseException]]) -> list[str]:
    names = set()
    for answered in map(_answered, found):
        if answered is not None:
            status = next(
                (s for kind, s in connect_statuses._STATUS if isinstance(answered, kind)),
                grpc.StatusCode.INTERNAL,
            )
            names.add(status.name)
    return sorted(names)


def _heading(comment: str) -> str:
    """A section comment as a heading: its first words, capitalised (not sparkgate's name)."""
    title = comment.split(" (", maxsplit=1)[0]
    return title if title.startswith("sparkgate") else title[:1].upper() + title[1:]


def _cell(values: list[int] | list[str]) -> str:
    return ", ".join(str(v) for v in values) or "—"


_DOORS = """\
## How an error looks at each door

Every error has a stable `code` (below), a `message` that says what was tried, what the state
is and what to do, and parameters that depend on the error (`session_id`, `line`,
`position`, ...). An error that Spark raised keeps Spark's own error class as its `code` (for
example `DIVIDE_BY_ZERO`) and Spark's SQLSTATE as `sql_state`; a failed Python statement keeps
its exception's name (`ZeroDivisionError`) and a `traceback`.

**REST (`/v1`)**: the HTTP status in the tables below, and the error as a JSON body:

```json
{"error": {"code": "SESSION_NOT_FOUND", "message": "Session 7 does not exist.", "session_id": 7}}
```

A request body that does not validate answers `422` with `INVALID_REQUEST` and a `fields`
list (`[{"field": "kind", "message": "..."}]`). A `401` carries a `WWW-Authenticate` header
(Basic and Bearer); a `503` a `Retry-After: 2`. A path no route has answers `NOT_FOUND`
(`404`), a method the path does not take `METHOD_NOT_ALLOWED` (`405`, with `Allow`), any other
HTTP-level refusal `HTTP_ERROR` with its own status. An unexpected failure answers `500`
`INTERNAL_ERROR` naming only the exception's type; the server's log has the rest.

A query, session, engine, stream job, job run or deployment that failed keeps its error in
its `error` field, in the same shape (`{"code", "message", ...}`), whatever door ran it.

**Livy (`/sessions`, `/batches`)**: Livy's body, `{"msg": "<message>"}`, and Livy's statuses:
{livy_statuses}.

**HiveServer2 (JDBC, ODBC, PyHive)**: a refused call answers a `TStatus` with
`ERROR_STATUS` (`INVALID_HANDLE_STATUS` for a handle or object that does not exist) and
`errorMessage` `[CODE] message`. A failed or cancelled operation reports, in
`GetOperationStatus` and in the `TStatus` of the calls that read it, `errorMessage`
`[CODE] message (line L, pos P)` and `sqlState`: Spark's SQLSTATE when Spark raised the
error, otherwise the SQLSTATE of sparkgate's code in the tables below (a cancelled query
is `57014`). JDBC shows them as `SQLException.getMessage()` and `getSQLState()`.

**Spark Connect (`sc://`)**: sparkgate's own refusals end the call with the gRPC status in the
tables below and the details `[CODE] message`. An error raised by Spark in the engine is
relayed as Spark's own Connect server sends it: its gRPC status and a
`google.rpc.ErrorInfo` in the trailers (`grpc-status-details-bin`), whose metadata holds
`errorClass`, `sqlState` and `messageParameters`, so PySpark raises the same exception class
(`AnalysisException`, `SparkArithmeticException`, ...) with `getErrorClass()` and
`getSqlState()`; the query plan Spark appends to its texts is removed. A queued operation
that ended before its turn ends `CANCELLED` (cancelled) or `ABORTED` (its session ended).

## Reading the tables

- **SQLSTATE**: what a SQL client is told for the code (five characters; the class, its
  first two, says the kind: `08` connection/engine, `0A` not supported, `22` data, `28`
  authorization, `40` rolled back, `42` syntax or access, `53` resources, `55` object
  state, `57` stopped or cancelled, `HY`/`XX` general or internal).
- **HTTP** and **gRPC**: the status the REST door (Livy: see above) and the Spark Connect door
  answer when the error refuses a request; `—` for a code only ever recorded (in a query's,
  session's, job's `error`) or told only at the HiveServer2 door.
"""


def page() -> str:
    missing = [code for code in ErrorCode if code not in ERRORS]
    if missing:
        raise RuntimeError(f"codes without an entry in sparkgate.error_catalog: {missing}")
    found = carriers()
    livy_statuses = ", ".join(f"`{a}` is answered `{b}`" for a, b in livy.STATUSES.items())
    lines = [
        "# Error codes",
        "",
        "Every error sparkgate reports has a code from this page, or Spark's own error class "
        "for an error Spark raised (see Spark's "
        "[error conditions](https://spark.apache.org/docs/latest/sql-error-conditions.html)).",
        "",
        _DOORS.replace("{livy_statuses}", livy_statuses),
    ]
    for group in groups():
        lines += [
            f"## {_heading(group.title)}",
            "",
            "| Code | SQLSTATE | HTTP | gRPC | Meaning |",
            "| --- | --- | --- | --- | --- |",
        ]
        for code in group.codes:
            entry = ERRORS[code]
            http = _cell(http_statuses(found[code]))
            if code in _STARLETTE_STATUSES:
                http = _STARLETTE_STATUSES[code]
            grpc_cell = _cell(grpc_statuses(found[code]))
            lines.append(
                f"| `{code.value}` | `{entry.sqlstate}` | {http} | {grpc_cell} | {entry.meaning} |"
            )
        lines.append("")
    return "\n".join(lines)


# The codes the HTTP layer gives Starlette's own refusals (a path no route has, a method the
# path does not take, any other), which no exception class of sparkgate's carries.
_STARLETTE_STATUSES: dict[ErrorCode, str] = {
    **{code: str(status) for status, code in http_errors._HTTP_CODES.items()},
    ErrorCode.HTTP_ERROR: "its own",
}
