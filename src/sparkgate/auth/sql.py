"""What a SQL text asks for, as far as the access rules care: streams, and Spark settings set
with ``SET key=value``. Pure: no store, no Spark."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from sparkgate.sql.lexed import LexedScript
from sparkgate.sql.lexer import Kind, Lexeme
from sparkgate.sql.parser import parse
from sparkgate.sql.statements import PassThrough


@dataclass(frozen=True)
class SqlNeeds:
    streams: bool  # CREATE STREAM, SAVE STREAM or STOP STREAM
    settings: tuple[str, ...]  # keys given a value by SET


def sql_needs(text_or_script: str | LexedScript) -> SqlNeeds:
    """Raises SqlSyntaxError (with the position) for text that cannot even be split, rather
    than letting a statement the checks could not read through. Given a LexedScript (the
    submit path makes one for all its readers), nothing is lexed here."""
    script = (
        text_or_script
        if isinstance(text_or_script, LexedScript)
        else LexedScript.of(text_or_script)
    )
    streams = False
    settings: list[str] = []
    for statement in script.statements:
        if not isinstance(parse(statement.text, statement.lexemes), PassThrough):
            streams = True
        key = _set_key(statement.text, statement.lexemes)
        if key is not None:
            settings.append(key)
    return SqlNeeds(streams, tuple(settings))


def _set_key(text: str, lexemes: Sequence[Lexeme]) -> str | None:
    """The key of ``SET key = value`` (``SET `key`=v`` too); None for other statements and for
    ``SET``, ``SET -v``, ``SET key`` (reads), ``SET TIME ZONE`` and ``SET VAR`` (variables).
    ``lexemes`` are ``text``'s, with offsets into it."""
    if len(lexemes) < 2 or not lexemes[0].is_word("SET"):
        return None
    if lexemes[1].is_word("VAR", "VARIABLE", "TIME", "ROLE", "CATALOG", "SCHEMA", "DATABASE"):
        return None
    for lexeme in lexemes[1:]:
        if lexeme.kind is Kind.PUNCT and lexeme.value == "=":
            key = text[lexemes[1].start : lexeme.start].strip()
            return key.replace("`", "").strip()
    return None
