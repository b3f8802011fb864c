"""Errors in sparkgate's SQL extensions, each pointing at where in the text it is.

``line`` and ``position`` are 1-based, like Spark's own parse errors, so one renderer shows
both: ``[PARSE_SYNTAX_ERROR] Syntax error at or near 'TOO': expected TO (line 1, position 17)``.
"""

from __future__ import annotations

from typing import Any, Self

from sparkgate.errors import InvalidRequest
from sparkgate.recorded import ErrorCode


def location(text: str, offset: int) -> tuple[int, int]:
    """The 1-based (line, position) of ``offset`` in ``text``."""
    before = text[:offset]
    return before.count("\n") + 1, offset - (before.rfind("\n") + 1) + 1


class SqlError(InvalidRequest):
    """An error in a statement's text, at ``line``/``position``; ``code`` names the problem."""

    code: str = ErrorCode.INVALID_STREAM_DEFINITION  # or the one given, perhaps Spark's

    def __init__(
        self, message: str, *, line: int, position: int, code: str | None = None, **params: Any
    ) -> None:
        message = message[:1].upper() + message[1:]
        super().__init__(message, line=line, position=position, **params)
        if code is not None:
            self.code = code
        self.line = line
        self.position = position

    @classmethod
    def at(cls, text: str, offset: int, message: str, **params: Any) -> Self:
        """An error at character ``offset`` of ``text``."""
        line, position = location(text, offset)
        return cls(message, line=line, position=position, **params)

    def shifted(self, line: int, position: int, **params: Any) -> Self:
        """The same error, for a statement that starts at (line, position) of a script."""
        extra = {k: v for k, v in self.params.items() if k not in ("line", "position")}
        return type(self)(
            self.message,
            line=line + self.line - 1,
            position=self.position + (position - 1 if self.line == 1 else 0),
            code=self.code,
            **{**extra, **params},
        )

    def __str__(self) -> str:
        return f"[{self.code}] {self.message} (line {self.line}, position {self.position})"


class SqlSyntaxError(SqlError):
    """The text does not follow the grammar; ``found`` and ``expected`` say how."""

    code = ErrorCode.PARSE_SYNTAX_ERROR
