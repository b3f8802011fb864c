"""Splitting a script into statements at the semicolons that end them (not those in strings
or comments), remembering where each starts so errors can point into the script.

    split_script("CREATE STREAM r USING rate;\\nSAVE STREAM r TO console;")
    -> [ScriptStatement(1, "CREATE STREAM r USING rate", line=1, ...),
        ScriptStatement(2, "SAVE STREAM r TO console", line=2, ...)]
"""

from __future__ import annotations

from dataclasses import dataclass

from sparkgate.sql.errors import location
from sparkgate.sql.lexer import Kind, Lexeme, lex


@dataclass(frozen=True)
class ScriptStatement:
    number: int  # 1-based, in script order
    text: str  # exactly as written, without the ';' and the comments around it
    offset: int  # where it starts in the script
    line: int  # 1-based line and position of its first character
    position: int


def split_script(text: str) -> list[ScriptStatement]:
    """The statements of ``text``; empty ones (``;;``, only comments) are dropped.
    Raises SqlSyntaxError (with the script's line and position) for unterminated strings."""
    statements: list[ScriptStatement] = []
    current: list[Lexeme] = []
    for lexeme in [*lex(text), None]:
        if lexeme is not None and not (lexeme.kind is Kind.PUNCT and lexeme.value == ";"):
            current.append(lexeme)
            continue
        if current:
            start, end = current[0].start, current[-1].end
            line, position = location(text, start)
            statements.append(
                ScriptStatement(len(statements) + 1, text[start:end], start, line, position)
            )
        current = []
    return statements
