"""pyspark statements: Python run like Livy's REPL, in a namespace each session keeps.

- The namespace starts with ``spark`` (the session's own SparkSession), ``sc`` and
  ``sqlContext``, and keeps every name a statement defines for the session's next statements.
- If the code's last top-level statement is an expression, its value is echoed (``repr``,
  nothing for None) and kept as ``_``, as a REPL does.
- What the statement prints to stdout and stderr is captured, for this statement only (other
  sessions run at the same time on other threads).
- Lines starting with ``%`` are magics, as in Livy: ``%json NAME`` gives ``application/json``,
  ``%table NAME`` gives ``application/vnd.livy.table.v1+json``, ``%matplot NAME`` a PNG.
- The output is a dict of mimetypes: ``{"text/plain": stdout + stderr + echo}`` plus a magic's.
- A failure becomes the statement's error: Spark's condition or the exception's class as
  ``code``, and Livy's ``ename``, ``evalue`` and ``traceback`` (a list of lines).

    run_python("x = 40\\nx + 2", namespace)  # {"text/plain": "42"}
"""

from __future__ import annotations

import ast
import base64
import builtins
import datetime
import decimal
import io
import json
import math
import sys
import threading
import traceback
import warnings
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from sparkgate.engine.user_code import (
    Capture,
    StatementInterrupted,
    capturing,
    clean_text,
    interruptible,
)
from sparkgate.recorded import RecordedError
from sparkgate.runtime.contract import ExecResult, ExecutionContext
from sparkgate.runtime.error_text import shown_text, shown_traceback
from sparkgate.runtime.failures import DescribedError, recorded_failure
from sparkgate.runtime.session import OpenSession

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

FILENAME = "<stdin>"  # what tracebacks show for statement code, as in Livy and the REPL

TABLE_MIMETYPE = "application/vnd.livy.table.v1+json"


class UnknownMagic(Exception):
    pass


class MagicError(Exception):
    pass


@dataclass(frozen=True)
class PythonCell:
    tree: ast.Module


@dataclass(frozen=True)
class MagicCell:
    name: str
    argument: str


Cell = PythonCell | MagicCell


def _parse(code: str) -> ast.Module:
    # dont_inherit: this module's own __future__ imports must not change how user code runs.
    tree = compile(code, FILENAME, "exec", ast.PyCF_ONLY_AST, dont_inherit=True)
    assert isinstance(tree, ast.Module)
    return tree


def parse_cells(code: str) -> list[Cell]:
    """Python, or (when the whole does not parse) Python chunks and ``%magic`` lines, as Livy
    splits them. Raises SyntaxError for Python that does not parse."""
    try:
        return [PythonCell(_parse(code))]
    except SyntaxError:
        if not any(line.startswith("%") for line in code.split("\n")):
            raise
    cells: list[Cell] = []
    normal: list[str] = []
    for line in code.rstrip().split("\n"):
        if line.startswith("%"):
            if normal:
                cells.append(PythonCell(_parse("\n".join(normal))))
                normal = []
            name, _, argument = line[1:].partition(" ")
            cells.append(MagicCell(name.strip(), argument.strip()))
        else:
            normal.append(line)
    if normal:
        cells.append(PythonCell(_parse("\n".join(normal))))
    return cells


def _run_python(cell: PythonCell, namespace: dict[str, Any]) -> None:
    body = cell.tree.body
    if not body:
        return
    *head, last = body
    if head:
        exec(compile(ast.Module(head, []), FILENAME, "exec", dont_inherit=True), namespace)
    if isinstance(last, ast.Expr):
        expression = ast.Expression(last.value)
        value = eval(compile(expression, FILENAME, "eval", dont_inherit=True), namespace)
        if value is not None:
            namespace["_"] = value
            sys.stdout.write(f"{value!r}\n")
    else:
        exec(compile(ast.Module([last], []), FILENAME, "exec", dont_inherit=True), namespace)


def run_cells(cells: list[Cell], namespace: dict[str, Any]) -> dict[str, Any]:
    """Run the cells in order; the mimetypes of the last one (a magic's, or none)."""
    result: dict[str, Any] = {}
    for cell in cells:
        if isinstance(cell, PythonCell):
            _run_python(cell, namespace)
            result = {}
        else:
            result = run_magic(cell, namespace)
    return result


# -- magics ---------------------------------------------------------------------------------


def _lookup(magic: str, name: str, namespace: dict[str, Any]) -> Any:
    if not name:
        raise MagicError(f"%{magic} needs the name of a variable: %{magic} NAME")
    if name not in namespace:
        raise NameError(f"name {name!r} is not defined")
    return namespace[name]


def _json_ready(magic: str, value: Any) -> Any:
    try:
        text = json.dumps(value, allow_nan=False)
    except (TypeError, ValueError) as exc:
        raise MagicError(f"%{magic}: the value cannot be shown as JSON: {exc}") from exc
    if "\\u0000" in text:
        raise MagicError(f"%{magic}: the value contains NUL characters, which JSON stores refuse")
    return json.loads(text)


def magic_json(name: str, namespace: dict[str, Any]) -> dict[str, Any]:
    return {"application/json": _json_ready("json", _lookup("json", name, namespace))}


_TABLE_TYPES: dict[type, tuple[str, Callable[[Any], Any]]] = {
    type(None): ("NULL_TYPE", lambda v: v),
    bool: ("BOOLEAN_TYPE", lambda v: v),
    int: ("INT_TYPE", lambda v: v),
    float: ("DOUBLE_TYPE", lambda v: v if math.isfinite(v) else str(v)),
    str: ("STRING_TYPE", str),
    datetime.date: ("DATE_TYPE", str),
    datetime.datetime: ("TIMESTAMP_TYPE", str),
    decimal.Decimal: ("DECIMAL_TYPE", str),
}


def _table_cell(value: Any) -> tuple[str, Any]:
    if isinstance(value, (list, tuple)):
        items = [_table_cell(item) for item in value]
        types = {kind for kind, _ in items if kind != "NULL_TYPE"}
        if len(types) > 1:
            raise MagicError("%table: an array holds values of different types")
        return "ARRAY_TYPE", [item for _, item in items]
    if isinstance(value, dict):
        converted = {str(k): _table_cell(v) for k, v in value.items()}
        types = {kind for kind, _ in converted.values() if kind != "NULL_TYPE"}
        if len(types) > 1:
            raise MagicError("%table: a map holds values of different types")
        return "MAP_TYPE", {k: item for k, (_, item) in converted.items()}
    kind, convert = _TABLE_TYPES.get(type(value), ("STRING_TYPE", str))
    return kind, convert(value)


def magic_table(name: str, namespace: dict[str, Any]) -> dict[str, Any]:
    """Rows (Rows, dicts, lists or tuples, or scalars) as Livy's table: typed headers + data.

    Columns are matched by name (Rows, dicts) or position (lists), in first-seen order; a
    column whose values have different types (nulls aside) is refused, as in Livy.
    """
    value = _lookup("table", name, namespace)
    rows = value if isinstance(value, (list, tuple)) else [value]
    keyed: list[dict[Any, Any]] = []
    for item in rows:
        row = item.asDict() if type(item).__name__ == "Row" and hasattr(item, "asDict") else item
        if isinstance(row, dict):
            keyed.append(dict(row))
        elif isinstance(row, (list, tuple)):
            keyed.append(dict(enumerate(row)))
        else:
            keyed.append({0: row})
    headers: dict[Any, dict[str, str]] = {}
    for row in keyed:
        for key, cell in row.items():
            kind, _ = _table_cell(cell)
            header = headers.setdefault(key, {"name": str(key), "type": kind})
            if kind == "NULL_TYPE":
                continue
            if header["type"] == "NULL_TYPE":
                header["type"] = kind
            elif header["type"] != kind:
                raise MagicError(
                    f"%table: column {key!r} has values of types {header['type']} and {kind}"
                )
    data = [[_table_cell(row.get(key))[1] for key in headers] for row in keyed]
    table = {"headers": list(headers.values()), "data": data}
    return {TABLE_MIMETYPE: _json_ready("table", table)}


def magic_matplot(name: str, namespace: dict[str, Any]) -> dict[str, Any]:
    """``%matplot plt``: the current matplotlib figure as a PNG (sparkmagic's %matplot)."""
    value = _lookup("matplot", name, namespace)
    figure = value.gcf() if hasattr(value, "gcf") else value
    if not hasattr(figure, "savefig"):
        raise MagicError(f"%matplot: {name} is neither matplotlib.pyplot nor a figure")
    image = io.BytesIO()
    figure.savefig(image, format="png")
    return {"image/png": base64.b64encode(image.getvalue()).decode("ascii"), "text/plain": ""}


MAGICS: dict[str, Callable[[str, dict[str, Any]], dict[str, Any]]] = {
    "json": magic_json,
    "table": magic_table,
    "matplot": magic_matplot,
}


def run_magic(cell: MagicCell, namespace: dict[str, Any]) -> dict[str, Any]:
    if not cell.name:
        raise UnknownMagic("magic command not specified")
    handler = MAGICS.get(cell.name)
    if handler is None:
        known = ", ".join(f"%{name}" for name in MAGICS)
        raise UnknownMagic(f"unknown magic command '%{cell.name}' (known: {known})")
    return handler(cell.argument, namespace)


# -- output and errors ----------------------------------------------------------------------


def compose_output(result: dict[str, Any], stdout: str, stderr: str) -> dict[str, Any]:
    """Livy's rule: text/plain is the magic's text, then stdout, then stderr, right-stripped;
    present when not empty or when nothing else is."""
    data = dict(result)
    text = (str(data.pop("text/plain", "")) + stdout + stderr).rstrip()
    if text or not data:
        data["text/plain"] = clean_text(text)
    return data


def _user_traceback(exc: BaseException) -> list[str]:
    """Livy's traceback list: the frames from the statement's own code on, no chained causes."""
    if isinstance(exc, (SyntaxError, UnknownMagic, MagicError)):
        return [clean_text(line) for line in traceback.format_exception_only(type(exc), exc)]
    tb = exc.__traceback__
    while tb is not None and tb.tb_frame.f_code.co_filename != FILENAME:
        tb = tb.tb_next
    return [clean_text(line) for line in shown_traceback(exc, tb, chain=False)]


def describe_python_failure(exc: BaseException, code: str) -> RecordedError:
    """The store's error for a failed statement, with Livy's ename / evalue / traceback."""
    found = recorded_failure(exc)
    params = dict(found.params)
    if isinstance(exc, SyntaxError) and exc.lineno is not None:
        params["line"] = exc.lineno
        if exc.offset is not None:
            params["position"] = exc.offset
    params.update(
        ename=type(exc).__name__,
        evalue=clean_text(shown_text(exc)),
        traceback=_user_traceback(exc),
    )
    return RecordedError(found.code, clean_text(found.message), params)


# -- the executor -----------------------------------------------------------------------------


# Warnings PySpark prints into statement output that Livy clients then fail to parse: the
# livy client's download() and sparkmagic's %%sql both print df.toJSON() rows and read every
# output line as JSON, and PySpark 4 warns (on stderr, captured) that toJSON will change.
_CLIENT_BREAKING_WARNINGS = (r"The return type of DataFrame\.toJSON will be changed",)


def prepare_namespace(namespace: dict[str, Any], spark: SparkSession) -> dict[str, Any]:
    """Give a session's namespace what Livy's pyspark shell starts with, the first time."""
    for message in _CLIENT_BREAKING_WARNINGS:
        warnings.filterwarnings("ignore", message=message, category=UserWarning)
    if "__builtins__" not in namespace:
        from pyspark.sql import SQLContext

        namespace.update(
            __name__="__main__",
            __builtins__=builtins,
            spark=spark,
            sc=spark.sparkContext,
            sqlContext=SQLContext(spark.sparkContext, spark),
        )
    return namespace


def run_python(
    code: str,
    namespace: dict[str, Any],
    *,
    output_limit: int = 8_000_000,
    cancelled: threading.Event | None = None,
) -> dict[str, Any]:
    """Run ``code`` in ``namespace``; its output mimetypes. Raises ``DescribedError``, or
    ``StatementInterrupted`` when cancelled."""
    capture = Capture(output_limit)
    with capturing(capture), interruptible(cancelled or threading.Event()):
        try:
            result = run_cells(parse_cells(code), namespace)
        except StatementInterrupted:
            raise
        except BaseException as exc:  # SystemExit too: a statement cannot end the engine
            raise DescribedError(describe_python_failure(exc, code)) from None
    return compose_output(result, capture.stdout.getvalue(), capture.stderr.getvalue())


def run_statement(ctx: ExecutionContext) -> ExecResult:
    """The executor of ``pyspark`` statements."""
    namespace = session_namespace(ctx.session)
    data = run_python(
        ctx.statement.code,
        namespace,
        output_limit=ctx.settings.python_output_max_chars,
        cancelled=ctx.cancelled,
    )
    return ExecResult(output={"data": data})


def session_namespace(session: OpenSession) -> dict[str, Any]:
    return prepare_namespace(session.namespace, session.spark)
