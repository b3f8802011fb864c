"""Errors of SQL sparkgate ran on the user's behalf, told in terms of what the user wrote.

A staged CTAS runs ``CREATE TABLE <staging table> <the user's clauses> AS <the user's query>``
(or the query alone): Spark's error positions then count from the start of that text, and its
messages name the staging table. ``relocate`` maps positions back onto the statement the user
submitted and names the user's table instead, so a failing staged CTAS reports exactly what
the same CTAS run by Spark would.

    shift = Shift(ran_prefix=42, user_offset=14)   # ran[42:] == user[14:]
    relocated(error, shift, ran_sql, user_sql, names={"`sparkgate_staging_x`": "`t`"})
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from sparkgate.recorded import RecordedError

# "== SQL (line 1, position 42) ==" (position 1-based) in runtime error messages, and
# "line 1 pos 41" (0-based) in analysis messages.
_SQL_HEADER = re.compile(r"== SQL \(line (\d+), position (\d+)\) ==")
_LINE_POS = re.compile(r"line (\d+) pos (\d+)")


@dataclass(frozen=True)
class Shift:
    """The text sparkgate ran is its own ``ran_prefix`` characters, then the user's statement
    from ``user_offset`` on."""

    ran_prefix: int
    user_offset: int

    def to_user(self, index: int) -> int:
        # Inside sparkgate's own prefix: the place the user's text resumes is the best answer.
        return max(index - self.ran_prefix, 0) + self.user_offset


def relocated(
    error: RecordedError,
    shift: Shift,
    ran_sql: str,
    user_sql: str,
    names: Mapping[str, str] | None = None,
) -> RecordedError:
    """``error`` (``recorded_failure(exc, ran_sql)``) as if Spark had run ``user_sql``."""
    return RecordedError.stored(relocate(error.to_json(), shift, ran_sql, user_sql, names))


def relocate(
    error: Mapping[str, Any],
    shift: Shift,
    ran_sql: str,
    user_sql: str,
    names: Mapping[str, str] | None = None,
) -> dict[str, Any]:
    """``relocated`` on an error record's JSON (or any record with its position keys)."""
    moved = dict(error)
    for key in ("start_index", "stop_index"):
        if isinstance(moved.get(key), int) and moved[key] >= 0:
            moved[key] = shift.to_user(moved[key])
    if isinstance(moved.get("start_index"), int):
        moved["line"], moved["position"] = line_and_position(user_sql, moved["start_index"])
    elif isinstance(moved.get("line"), int) and isinstance(moved.get("position"), int):
        index = _index_of(ran_sql, moved["line"], moved["position"] - 1)
        moved["line"], moved["position"] = line_and_position(user_sql, shift.to_user(index))
    if isinstance(moved.get("message"), str):
        moved["message"] = _relocate_message(moved["message"], shift, ran_sql, user_sql)
    renamed: dict[str, Any] = rename(moved, names or {})
    return renamed


def rename(value: Any, names: Mapping[str, str]) -> Any:
    """Replace each name in ``names`` by its value, in every string of an error record."""
    if isinstance(value, str):
        for old, new in names.items():
            value = value.replace(old, new)
        return value
    if isinstance(value, dict):
        return {k: rename(v, names) for k, v in value.items()}
    if isinstance(value, list):
        return [rename(v, names) for v in value]
    return value


def line_and_position(sql: str, index: int) -> tuple[int, int]:
    """1-based line and column of ``sql[index]``."""
    before = sql[:index]
    return before.count("\n") + 1, index - (before.rfind("\n") + 1) + 1


def _index_of(sql: str, line: int, column0: int) -> int:
    lines = sql.split("\n")
    return sum(len(text) + 1 for text in lines[: max(line - 1, 0)]) + column0


def _relocate_message(message: str, shift: Shift, ran_sql: str, user_sql: str) -> str:
    def header(match: re.Match[str]) -> str:
        index = shift.to_user(_index_of(ran_sql, int(match.group(1)), int(match.group(2)) - 1))
        line, position = line_and_position(user_sql, index)
        return f"== SQL (line {line}, position {position}) =="

    def line_pos(match: re.Match[str]) -> str:
        index = shift.to_user(_index_of(ran_sql, int(match.group(1)), int(match.group(2))))
        line, position = line_and_position(user_sql, index)
        return f"line {line} pos {position - 1}"

    return _LINE_POS.sub(line_pos, _SQL_HEADER.sub(header, message))
