"""Lexing SQL text the way Spark does (through sqlglot's Spark tokenizer), into lexemes that
keep their exact place in the text, so every parse error can point at a line and position.

sqlglot splits some single lexemes into several synthetic tokens (``5s`` becomes ``5 :: s``,
a smallint literal); those share one span and are merged back here into the text as written.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from enum import StrEnum

from sqlglot.dialects.spark import Spark
from sqlglot.errors import TokenError
from sqlglot.tokenizer_core import TokenType

from sparkgate.sql.errors import SqlSyntaxError


class Kind(StrEnum):
    WORD = "word"  # a bare word: keyword or identifier (SAVE, stream, my_view)
    IDENT = "ident"  # a `quoted` identifier: never a keyword
    STRING = "string"  # a string literal, unescaped
    NUMBER = "number"  # a number as written, with any unit glued on (5, 1.5, 100ms, 1min)
    PUNCT = "punct"  # ( ) , . = < > ; and the other operators


@dataclass(frozen=True)
class Lexeme:
    kind: Kind
    value: str  # a word as written, a string unescaped, an identifier unquoted
    start: int  # offsets into the text: text[start:end] is the lexeme as written
    end: int

    def is_word(self, *words: str) -> bool:
        """True if this is a bare word equal (ignoring case) to one of ``words``."""
        return self.kind is Kind.WORD and self.value.upper() in words

    @property
    def is_name(self) -> bool:
        return self.kind in (Kind.WORD, Kind.IDENT)


_STRING_TYPES = frozenset(
    {TokenType.STRING, TokenType.RAW_STRING, TokenType.NATIONAL_STRING, TokenType.BYTE_STRING}
)
_WORD = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_WORDS = re.compile(r"[A-Za-z_][A-Za-z0-9_]*(\s+[A-Za-z_][A-Za-z0-9_]*)+")
_NUMBER = re.compile(r"\d+(\.\d*)?([eE][+-]?\d+)?[A-Za-z]*|\.\d+([eE][+-]?\d+)?[A-Za-z]*")
_TOKENIZER = Spark().tokenizer()


def lex(text: str) -> list[Lexeme]:
    """The lexemes of ``text`` (comments and whitespace dropped).

    Raises SqlSyntaxError pointing at an unterminated string, identifier or comment.
    """
    try:
        tokens = _TOKENIZER.tokenize(text)
    except TokenError:
        raise _unterminated(text) from None
    lexemes: list[Lexeme] = []
    index = 0
    while index < len(tokens):
        token = tokens[index]
        span = (token.start, token.end)
        group = 1
        while (
            index + group < len(tokens)
            and (
                tokens[index + group].start,
                tokens[index + group].end,
            )
            == span
        ):
            group += 1
        raw = text[token.start : token.end + 1]
        if _WORDS.fullmatch(raw):  # sqlglot reads some phrases as one token: PARTITIONED BY
            for word in re.finditer(r"\S+", raw):
                start = token.start + word.start()
                lexemes.append(Lexeme(Kind.WORD, word.group(0), start, start + len(word.group(0))))
            index += group
            continue
        if group > 1 or token.token_type is TokenType.NUMBER or _NUMBER.fullmatch(raw):
            kind, value = Kind.NUMBER, raw
        elif token.token_type in _STRING_TYPES:
            kind, value = Kind.STRING, token.text
        elif token.token_type is TokenType.IDENTIFIER:
            kind, value = Kind.IDENT, token.text
        elif _WORD.fullmatch(raw):
            kind, value = Kind.WORD, raw
        else:
            kind, value = Kind.PUNCT, raw
        lexemes.append(Lexeme(kind, value, token.start, token.end + 1))
        index += group
    return lexemes


# Complete constructs, in the order Spark's lexer tries them; what none of these matches at a
# quote, backtick or comment opener is the unterminated construct.
_COMPLETE = re.compile(
    r"""'(?:\\.|[^'\\])*'|"(?:\\.|[^"\\])*"|`(?:``|[^`])*`|--[^\n]*|/\*.*?\*/|[^'"`/-]+|.""",
    re.DOTALL,
)


def _unterminated(text: str) -> SqlSyntaxError:
    position = 0
    while position < len(text):
        match = _COMPLETE.match(text, position)
        opener = text[position]
        if opener in "'\"`" and (match is None or match.group(0) == opener):
            what = "identifier" if opener == "`" else "string"
            return _error_at(text, position, f"unterminated {what}: it opens here with {opener}")
        if text.startswith("/*", position) and (match is None or not match.group(0).endswith("*/")):
            return _error_at(text, position, "unterminated comment: it opens here with /*")
        assert match is not None  # the last alternative matches any character
        position = match.end()
    return _error_at(text, len(text), "the text cannot be read as SQL")


def _error_at(text: str, offset: int, message: str) -> SqlSyntaxError:
    return SqlSyntaxError.at(text, offset, message)
