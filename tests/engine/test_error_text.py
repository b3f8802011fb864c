"""An error's text as a user may see it: Spark's message without the plan it was analysed in
(runtime.error_text), and the record every door shows (runtime.failures)."""

from __future__ import annotations

import re
from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from sparkgate.runtime.error_text import (
    NOT_SHOWN,
    parameters_without_plan,
    shown_text,
    shown_traceback,
    without_plan,
)
from sparkgate.runtime.failures import recorded_failure

# What bob saw (issue 58), cut down: the message, then the analyzed plan Spark appended.
SEEN = (
    "[UNRESOLVED_COLUMN.WITH_SUGGESTION] A column, variable, or function parameter with name "
    "`ssn` cannot be resolved. Did you mean one of the following? [`name`, `region`, `salary`]."
    " SQLSTATE: 42703;\n"
    "'Project ['ssn]\n"
    "+- SubqueryAlias spark_catalog.hr.salaries\n"
    "   +- Project [name#250, region#243, round(salary#242, -4) AS salary#251]\n"
    "      +- Filter (region#243 = EU)\n"
    "         +- Relation spark_catalog.hr.salaries[name#240,ssn#241,salary#242,region#243]"
    " parquet\n"
)
PLAN_SIGNS = re.compile(r"#\d|[+:]- |Relation|Filter|Project|round\(")


def test_what_bob_saw_keeps_the_message_and_loses_the_plan() -> None:
    assert without_plan(SEEN) == SEEN.split(";\n", maxsplit=1)[0]


def test_the_plan_of_an_error_with_a_position_and_its_query_context() -> None:
    message = (
        "[UNRESOLVED_COLUMN.WITH_SUGGESTION] A column `ssn` cannot be resolved. SQLSTATE: "
        "42703; line 1 pos 7;\n"
        "== SQL (line 1, position 8) ==\nSELECT ssn FROM hr.salaries\n       ^^^\n"
    )
    text = message + ";\n'Project ['ssn]\n+- 'UnresolvedRelation [hr, salaries], [], false"
    assert without_plan(text) == message.rstrip()
    # One node, unresolved: no child and no attribute ids, known by its quote after the ";".
    assert without_plan("[X] Bad.;\n'UnresolvedRelation [hr, salaries], [], false") == "[X] Bad."


def test_text_without_a_plan_is_unchanged() -> None:
    for text in ("", "division by zero", "[X] a;\nb", "a # 1 and #2", "x\n  at y(Z.java:1)"):
        assert without_plan(text) == text


def test_a_java_stack_trace_keeps_its_frames_and_causes_without_the_plan() -> None:
    trace = (
        "org.apache.spark.sql.catalyst.ExtendedAnalysisException: [X] Bad column;\n"
        "Project [ssn#241]\n"
        "+- Relation hr.salaries[name#240,ssn#241] parquet\n"
        "\n"
        "\tat org.apache.spark.sql.Checker.check(Checker.scala:12)\n"
        "\tat org.apache.spark.sql.Dataset.ofRows(Dataset.scala:99)\n"
        "Caused by: java.lang.IllegalStateException: attribute ssn#241 missing\n"
        "\t... 12 more\n"
    )
    shown = without_plan(trace)
    assert not PLAN_SIGNS.search(shown), shown
    assert "ExtendedAnalysisException: [X] Bad column" in shown
    assert "\tat org.apache.spark.sql.Dataset.ofRows(Dataset.scala:99)" in shown
    assert "\t... 12 more" in shown


def test_a_message_that_is_all_plan_says_so() -> None:
    assert without_plan("Resolved attribute(s) ssn#241 missing from name#240") == NOT_SHOWN
    assert without_plan("Project [a#1]\n+- LocalRelation [a#1]") == NOT_SHOWN


def test_parameters_lose_plans_and_keep_the_rest() -> None:
    shown = parameters_without_plan(
        {"objectName": "`ssn`", "treeNode": "Filter (region#3 = EU)\n+- Relation [a#1] csv"}
    )
    assert shown == {"objectName": "`ssn`", "treeNode": NOT_SHOWN}


# -- any plan, appended to any message ---------------------------------------------------------

_WORD = st.text("abcdefghijklmnopqrstuvwxyzABCXYZ0123456789_`.,()[]'\"=<>*/-", min_size=1)
_NAME = st.from_regex(r"[a-z_][a-z0-9_]{0,8}", fullmatch=True)
_NODE = st.sampled_from(
    ["Project", "Filter", "Join Inner,", "Aggregate", "SubqueryAlias", "Sort", "Relation", "Window"]
)


@st.composite
def _attribute(draw: st.DrawFn) -> str:
    return f"{draw(_NAME)}#{draw(st.integers(0, 99999))}{draw(st.sampled_from(['', 'L']))}"


@st.composite
def _node_line(draw: st.DrawFn, *, unresolved: bool) -> str:
    attributes = ", ".join(draw(st.lists(_attribute(), min_size=1, max_size=4)))
    if unresolved:
        return f"'{draw(_NODE)} ['{draw(_NAME)}, {attributes}]"
    return f"{draw(_NODE)} [{attributes}]"


@st.composite
def plans(draw: st.DrawFn) -> str:
    """A plan tree as TreeNode.treeString prints one: a root, then children under ``+- `` /
    ``:- `` connectors, each level indented by ``   `` or ``:  ``."""
    unresolved = draw(st.booleans())
    lines = [draw(_node_line(unresolved=unresolved))]
    depth = 0
    for _ in range(draw(st.integers(0, 6))):
        depth = draw(st.integers(0, depth + 1))
        indent = "".join(draw(st.sampled_from(["   ", ":  "])) for _ in range(depth))
        connector = draw(st.sampled_from(["+- ", ":- "]))
        lines.append(indent + connector + draw(_node_line(unresolved=unresolved)))
    return "\n".join(lines)


# A Spark message: words, and maybe the query context Spark writes under it.
_MESSAGES = st.builds(
    lambda condition, words, context: (
        f"[{condition}] {' '.join(words)}" + (f"\n== SQL ==\n{context}\n  ^^^" if context else "")
    ),
    st.from_regex(r"[A-Z_]{3,20}", fullmatch=True),
    st.lists(_WORD, min_size=1, max_size=12),
    st.one_of(st.none(), st.lists(_WORD, min_size=1, max_size=5).map(" ".join)),
).filter(lambda message: not re.search(r"\w#\d", message))


@given(message=_MESSAGES, plan=plans(), position=st.booleans())
def test_no_plan_appended_to_a_message_survives(message: str, plan: str, position: bool) -> None:
    joined = message + ("; line 1 pos 7" if position else "") + ";\n" + plan
    shown = without_plan(joined)
    assert shown == message.rstrip()
    for line in plan.split("\n"):
        assert line not in shown.split("\n")


@given(message=_MESSAGES, plan=plans(), frames=st.integers(1, 4))
def test_no_plan_survives_in_a_stack_trace(message: str, plan: str, frames: int) -> None:
    trace = (
        f"org.apache.spark.sql.AnalysisException: {message};\n{plan}\n"
        + "".join(f"\tat a.B.c{i}(B.scala:{i})\n" for i in range(frames))
        + f"Caused by: org.apache.spark.SparkException: {message};\n{plan}\n\t... 3 more"
    )
    shown = without_plan(trace)
    assert not re.search(r"\w#\d", shown), shown
    assert shown.count("\tat a.B.c") == frames
    assert f"Caused by: org.apache.spark.SparkException: {message}" in shown


# -- a Spark error, as Python holds it --------------------------------------------------------


class _JavaAnalysisError:
    """What py4j hands Python for a Java AnalysisException: its methods."""

    def __init__(self, simple: str, plan: str) -> None:
        self.simple, self.plan = simple, plan

    def getSimpleMessage(self) -> str:
        return self.simple

    def getMessage(self) -> str:
        return f"{self.simple};\n{self.plan}"


class _CapturedError(Exception):
    """PySpark's exception around a Java one without a condition (``_origin``, ``_desc``)."""

    def __init__(self, origin: _JavaAnalysisError) -> None:
        super().__init__()
        self._origin = origin
        self._desc = origin.getMessage()

    def __str__(self) -> str:
        return f"{self._desc}\n\nJVM stacktrace:\n{self._origin.getMessage()}\n\tat a.B.c(B.java:1)"


class _ConditionError(_CapturedError):
    def getCondition(self) -> str:
        return "UNRESOLVED_COLUMN.WITH_SUGGESTION"

    def getMessage(self) -> str:
        return f"[UNRESOLVED_COLUMN.WITH_SUGGESTION] {self._origin.simple}"

    def getSqlState(self) -> str:
        return "42703"

    def getMessageParameters(self) -> dict[str, Any]:
        return {"objectName": "`ssn`", "plan": "Project [ssn#1]\n+- Relation [ssn#1] csv"}


def test_recorded_failure_keeps_the_simple_message_and_no_plan() -> None:
    origin = _JavaAnalysisError("Bad column `ssn`", "Project [ssn#1]\n+- Relation [ssn#1] csv")
    recorded = recorded_failure(_CapturedError(origin))
    assert recorded.message == "Bad column `ssn`"
    with_condition = recorded_failure(_ConditionError(origin)).to_json()
    assert with_condition["code"] == "UNRESOLVED_COLUMN.WITH_SUGGESTION"
    assert with_condition["message"] == "Bad column `ssn`"
    assert with_condition["parameters"] == {"objectName": "`ssn`", "plan": NOT_SHOWN}
    assert with_condition["sql_state"] == "42703"


def test_shown_text_and_traceback_of_a_spark_error_hold_no_plan() -> None:
    origin = _JavaAnalysisError("Bad column `ssn`", "Project [ssn#1]\n+- Relation [ssn#1] csv")
    try:
        try:
            raise ValueError("first")
        except ValueError:
            raise _CapturedError(origin) from None
    except _CapturedError as exc:
        text = shown_text(exc)
        lines = shown_traceback(exc, exc.__traceback__)
    assert text.startswith("Bad column `ssn`\n\nJVM stacktrace:\n")
    assert "\tat a.B.c(B.java:1)" in text
    assert not PLAN_SIGNS.search(text), text
    assert lines[0] == "Traceback (most recent call last):\n"
    assert lines[-1].startswith("tests.engine.test_error_text._CapturedError: Bad column `ssn`")
    assert not any(PLAN_SIGNS.search(line) for line in lines), lines
    assert not any("first" in line for line in lines)  # its context was suppressed


def test_a_traceback_shows_its_causes_as_python_would() -> None:
    try:
        try:
            raise KeyError("inner")
        except KeyError as inner:
            raise RuntimeError("Project [a#1]\n+- Relation [a#1] csv") from inner
    except RuntimeError as exc:
        lines = shown_traceback(exc, exc.__traceback__)
    text = "".join(lines)
    assert "KeyError: 'inner'" in text
    assert "The above exception was the direct cause of the following exception:" in text
    assert text.rstrip().endswith(f"RuntimeError: {NOT_SHOWN}")
