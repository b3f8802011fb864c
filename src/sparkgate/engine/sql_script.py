"""Splitting a SQL script into its statements, with Spark SQL's own lexical rules.

A naive split on ``;`` breaks on ``';'`` in a string, a ``;`` in a comment or a backquoted
name; sqlglot's Spark tokenizer knows strings, comments and quoting, so the split happens only
at real statement separators. Each statement keeps its line in the script, so an error can
point at the line of the file.

    split_sql("CREATE VIEW v AS SELECT ';' AS s;\\n-- done\\nSELECT * FROM v")
    # [SqlPiece(text="CREATE VIEW v AS SELECT ';' AS s", line=1, offset=0, column=0),
    #  SqlPiece(text="SELECT * FROM v", line=3, offset=42, column=0)]
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from sparkgate.recorded import SqlScriptInvalid
from sparkgate.runtime.failures import DescribedError


@dataclass(frozen=True)
class SqlPiece:
    text: str
    line: int  # 1-based line of the statement's first token in the script
    offset: int  # its character offset in the script
    column: int = 0  # 0-based column of that first token on its line


def split_sql(script: str) -> list[SqlPiece]:
    """The script's statements in order; empty statements (``;;``, comments only) are dropped.

    Raises ``DescribedError`` (``SQL_SCRIPT_INVALID``, with the line) when the script cannot
    be tokenized, e.g. an unterminated string or comment.
    """
    from sqlglot.dialects.dialect import Dialect
    from sqlglot.errors import TokenError
    from sqlglot.tokenizer_core import TokenType

    try:
        tokens = Dialect.get_or_raise("spark").tokenize(script)
    except TokenError as exc:
        invalid = SqlScriptInvalid(f"The SQL script cannot be read: {exc}")
        raise DescribedError(invalid.recorded()) from exc
    pieces: list[SqlPiece] = []
    current: list[Any] = []
    for token in [*tokens, None]:
        if token is not None and token.token_type is not TokenType.SEMICOLON:
            current.append(token)
            continue
        if current:
            first, last = current[0], current[-1]
            text = script[first.start : last.end + 1]
            line = script.count("\n", 0, first.start) + 1
            column = first.start - (script.rfind("\n", 0, first.start) + 1)
            pieces.append(SqlPiece(text, line, first.start, column))
        current = []
    return pieces


def shift_error(error: Mapping[str, Any], piece: SqlPiece, index: int) -> dict[str, Any]:
    """An error's positions found in ``piece`` (lines counted in the piece) as positions in
    the script: a ``RecordedError``'s ``params``, or any record with the same keys."""
    shifted = dict(error, statement=index, statement_line=piece.line)
    if isinstance(error.get("line"), int):
        shifted["line"] = error["line"] + piece.line - 1
        if error["line"] == 1 and isinstance(error.get("position"), int):
            shifted["position"] = error["position"] + piece.column
    if isinstance(error.get("start_index"), int):
        shifted["start_index"] = error["start_index"] + piece.offset
        stop = error.get("stop_index")
        if isinstance(stop, int):
            shifted["stop_index"] = stop + piece.offset
    return shifted
