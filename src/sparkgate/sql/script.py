"""Splitting a script into statements at the semicolons that end them (not those in strings
or comments), remembering where each starts so errors can point into the script.

    split_script("CREATE STREAM r USING rate;\\nSAVE STREAM r TO console;")
    -> [ScriptStatement(1, "CREATE STREAM r USING rate", line=1, ...),
        ScriptStatement(2, "SAVE STREAM r TO console", line=2, ...)]

The splitting itself is ``LexedScript.of`` (sql/lexed.py), which also keeps each statement's
lexemes for readers that need them.
"""

from __future__ import annotations

from sparkgate.sql.lexed import LexedScript, ScriptStatement

__all__ = ["ScriptStatement", "split_script"]


def split_script(text: str) -> list[ScriptStatement]:
    """The statements of ``text``; empty ones (``;;``, only comments) are dropped.
    Raises SqlSyntaxError (with the script's line and position) for unterminated strings."""
    return [lexed.statement for lexed in LexedScript.of(text).statements]
