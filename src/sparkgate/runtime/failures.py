"""Turning what a statement raised into the error record the store and the API show."""

from __future__ import annotations

import re
from typing import Any

from sparkgate.errors import SparkgateError
from sparkgate.recorded import RecordedError
from sparkgate.runtime.error_text import (
    parameters_without_plan,
    simple_message,
    without_plan,
)

_PARSE_POSITION = re.compile(r"\(line (\d+), pos (\d+)\)")


class DescribedError(Exception):
    """A failure whose record is already worked out, stored as given: a Python statement's
    traceback, the line of a SQL script that failed, an error of SQL sparkgate ran on the
    user's behalf with positions moved back onto the statement the user wrote.

    raise DescribedError(RecordedError("ZeroDivisionError", "division by zero"))
    """

    def __init__(self, error: RecordedError) -> None:
        super().__init__(f"[{error.code}] {error.message}")
        self.recorded = error


def recorded_failure(exc: BaseException, code_text: str | None = None) -> RecordedError:
    """What ``exc`` leaves in a record: ``code``, ``message``, then ``sql_state``,
    ``parameters``, ``start_index``, ``stop_index``, ``fragment``, ``line``, ``position`` when
    known.

    ``code`` is Spark's error condition (``TABLE_OR_VIEW_NOT_FOUND``) when Spark gives one,
    sparkgate's own code for its errors, else the exception's class name. ``line`` and
    ``position`` are 1-based. Nothing of it carries the plan Spark analysed the statement in
    (``runtime.error_text``): the record is what every door shows.
    """
    if isinstance(exc, DescribedError):
        return exc.recorded
    if isinstance(exc, SparkgateError):
        return exc.recorded()
    code, message = type(exc).__name__, _first_message(exc)
    params: dict[str, Any] = {}
    condition = _call(exc, "getCondition")
    java = getattr(exc, "java_exception", None)
    if not condition and java is not None:
        # A Spark error of a class PySpark does not convert (sparkgate's own
        # INSUFFICIENT_PRIVILEGE) reaches Python as the py4j error around it.
        condition = _call(java, "getCondition")
        if condition:
            exc = java
    if condition:
        code = condition
        # PySpark's getMessage is Spark's message made from the condition and its
        # parameters, without the plan; Java's (sparkgate's own errors) has none either.
        spark_message = _call(exc, "getMessage")
        if spark_message:
            # Spark prefixes the condition ("[DIVIDE_BY_ZERO] ..."); it is already the code.
            message = without_plan(spark_message.removeprefix(f"[{condition}]").strip())
        sql_state = _call(exc, "getSqlState")
        if sql_state:
            params["sql_state"] = sql_state
        parameters = _call(exc, "getMessageParameters")
        if parameters:
            params["parameters"] = parameters_without_plan(parameters)
    params.update(_position(exc, code_text))
    return RecordedError(code, message, params)


def _position(exc: BaseException, code_text: str | None) -> dict[str, Any]:
    for context in _call(exc, "getQueryContext") or []:
        start = _call(context, "startIndex")
        if start is None or start < 0:
            continue
        found: dict[str, Any] = {
            "start_index": start,
            "stop_index": _call(context, "stopIndex"),
            "fragment": _call(context, "fragment"),
        }
        if code_text is not None:
            before = code_text[:start]
            found["line"] = before.count("\n") + 1
            found["position"] = start - (before.rfind("\n") + 1) + 1
        return found
    match = _PARSE_POSITION.search(str(getattr(exc, "_desc", "")) or str(exc))
    if match:
        line, pos = int(match.group(1)), int(match.group(2))
        return {"line": line, "position": pos + 1}
    return {}


def _first_message(exc: BaseException) -> str:
    """Spark's simple message of an error without a condition (not ``str``, to which PySpark
    adds the JVM stack trace when configured), else ``str(exc)``; without plan."""
    text = simple_message(exc)
    if text is None:
        text = without_plan(str(exc))
    return text.strip() or type(exc).__name__


def _call(obj: Any, name: str) -> Any:
    method = getattr(obj, name, None)
    if method is None:
        return None
    try:
        return method()
    except Exception:
        return None
