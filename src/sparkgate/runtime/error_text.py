"""What of a failure's text a user may be shown: the message Spark would give without the
query plan it was analysed in.

Spark appends the analyzed plan to an analysis error's message (``getMessage`` of an
``ExtendedAnalysisException`` is its simple message, then ``";\\n"`` and the plan's tree). The
plan is the statement after sparkgate's rules rewrote it: the hidden columns of every table
read (``Relation [name#1, ssn#4]``), each mask's expression and each row filter. A user shown
it sees what the rules hide, so no error leaves sparkgate with one: in the store's record (and
so REST, HiveServer2 and Livy), a Python statement's traceback, or a Spark Connect status.

Where Spark gives the pieces (an exception object in this process: its condition, its simple
message, its parameters) they are used; the text of an error that reached us as text (a
Spark Connect status, a Java stack trace, a parameter's value) has plan trees cut out of it.
"""

from __future__ import annotations

import re
import traceback
from collections.abc import Mapping
from types import TracebackType
from typing import Any

# A line of a tree Spark printed (``TreeNode.treeString``): children hang under their parent
# with ``+- `` (last child) or ``:- `` (others), indented by ``   `` or ``:  `` per level.
_TREE_LINE = re.compile(r"^[ \t:|]*[+:]- ")
# An attribute of a resolved plan or expression: its name and its expression id (``ssn#241``,
# ``count(1)#5L``, ```a b`#3``). Nothing a user writes has one; every resolved plan does.
_ATTRIBUTE_ID = re.compile(r"[\w`)\]]#\d+L?\b")
# The root of an unresolved plan, which has no attribute ids yet: ``'Project ['ssn]``,
# ``!Filter ...``, after the ``;`` that ends the message it was appended to.
_UNRESOLVED_ROOT = re.compile(r"^['!][A-Z]\w*")
# A Java stack trace's frames: kept, they hold no plan, and end one that came before.
_FRAME_LINE = re.compile(r"^\s*(at [\w$.<>/]+\(|\.\.\. \d+ more)")
# The first line of a cause in a Java stack trace: its message, never a plan's root.
_CAUSE_LINE = re.compile(r"^\s*(Caused by|Suppressed): ")

NOT_SHOWN = "(Spark's details of this error name parts of the query plan; they are not shown.)"


def without_plan(text: str) -> str:
    """``text`` with every plan tree Spark printed into it cut out, and the ``;`` that joined
    it to the message before. What is not a plan stays as it was.

    without_plan("[X] Column `ssn` not found.;\\n'Project ['ssn]\\n+- Relation [a#1] parquet")
    == "[X] Column `ssn` not found."
    """
    lines = text.split("\n")
    plan = [_plan_line(line) for line in lines]
    for index, line in enumerate(lines):
        # A tree's root line has no connector: it is the line above its first child, or the
        # line after the ``;`` Spark joins a plan with.
        if plan[index] or _FRAME_LINE.match(line) or _CAUSE_LINE.match(line) or index == 0:
            continue
        child = index + 1 < len(lines) and _TREE_LINE.match(lines[index + 1]) is not None
        after_join = lines[index - 1].rstrip().endswith(";") and bool(
            _UNRESOLVED_ROOT.match(line.strip())
        )
        if child or after_join:
            plan[index] = True
    if len(lines) > 1 and (
        (_TREE_LINE.match(lines[1]) and not _CAUSE_LINE.match(lines[0]))
        or _ATTRIBUTE_ID.search(lines[0])
    ):
        # The first line is a plan's root or carries a plan's attributes: nothing of it is
        # the message.
        plan[0] = True
    elif len(lines) == 1 and _ATTRIBUTE_ID.search(lines[0]):
        plan[0] = True
    kept: list[str] = []
    cut = False
    for line, is_plan in zip(lines, plan, strict=True):
        if is_plan:
            if kept and not cut:
                kept[-1] = _without_join(kept[-1])
            cut = True
            continue
        cut = False
        kept.append(line)
    if any(plan) and not "".join(kept).strip():
        return NOT_SHOWN
    return "\n".join(kept).rstrip() if any(plan) else text


def parameters_without_plan(parameters: Mapping[str, Any]) -> dict[str, str]:
    """Each of an error's message parameters, without plan: some conditions put a whole
    plan or expression tree in one (``treeNode``, ``plan``, ``sqlExpr`` of a resolved
    expression)."""
    return {str(key): without_plan(str(value)) for key, value in parameters.items()}


def simple_message(exc: Any) -> str | None:
    """The message Spark gives an exception without its plan, from the exception itself:
    ``getSimpleMessage`` (an ``AnalysisException``'s message with its query context, before
    the plan) where it has one, else ``getMessage`` (Spark attaches plans only to analysis
    errors). ``None`` if ``exc`` is no Java exception (or PySpark's around one)."""
    java = getattr(exc, "_origin", None) or getattr(exc, "java_exception", None)
    if java is None:
        # Not a Java error: PySpark's own getMessage is "[None] ..." for one without a
        # condition, and nothing else here has a plan to leave out.
        return None
    for name in ("getSimpleMessage", "getMessage"):
        method = getattr(java, name, None)
        if method is None:
            continue
        try:
            message = method()
        except Exception:
            continue
        if message is not None:
            return without_plan(str(message))
    return None


def shown_text(exc: BaseException) -> str:
    """``str(exc)`` as a user may see it: a Spark error's simple message (with the JVM stack
    trace PySpark adds when configured, minus any plan), else ``str(exc)`` without plans."""
    text = str(exc)
    if _is_spark_error(exc):
        message = simple_message(exc)
        if message is not None:
            trace = text.partition("\n\nJVM stacktrace:\n")[2]
            return message + (f"\n\nJVM stacktrace:\n{without_plan(trace)}" if trace else "")
    return without_plan(text)


def shown_traceback(
    exc: BaseException,
    tb: TracebackType | None,
    *,
    chain: bool = True,
    _seen: frozenset[int] = frozenset(),
) -> list[str]:
    """``traceback.format_exception(type(exc), exc, tb, chain=chain)``, each exception's
    text as ``shown_text`` gives it: the traceback of a failed ``spark.sql(...)`` ends with
    the Java error's text, plan included."""
    lines: list[str] = []
    seen = _seen | {id(exc)}
    if chain:
        cause, context = exc.__cause__, exc.__context__
        if cause is not None and id(cause) not in seen:
            lines += shown_traceback(cause, cause.__traceback__, _seen=seen)
            lines.append(
                "\nThe above exception was the direct cause of the following exception:\n\n"
            )
        elif context is not None and not exc.__suppress_context__ and id(context) not in seen:
            lines += shown_traceback(context, context.__traceback__, _seen=seen)
            lines.append(
                "\nDuring handling of the above exception, another exception occurred:\n\n"
            )
    if tb is not None:
        lines.append("Traceback (most recent call last):\n")
        lines.extend(traceback.format_list(traceback.extract_tb(tb)))
    kind = type(exc)
    name = kind.__qualname__
    if kind.__module__ not in ("builtins", "__main__"):
        name = f"{kind.__module__}.{name}"
    text = shown_text(exc)
    lines.append(f"{name}: {text}\n" if text else f"{name}\n")
    return lines


def _is_spark_error(exc: BaseException) -> bool:
    return hasattr(exc, "_origin") or hasattr(exc, "java_exception")


def _plan_line(line: str) -> bool:
    if _FRAME_LINE.match(line):
        return False
    return bool(_TREE_LINE.match(line) or _ATTRIBUTE_ID.search(line))


def _without_join(line: str) -> str:
    """The line a plan was appended to, without the ``;`` (and ``line 1 pos 7;``) that
    joined them."""
    return re.sub(r";\s*(line \d+ pos \d+;?)?\s*$", "", line)
