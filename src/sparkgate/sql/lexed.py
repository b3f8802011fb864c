"""A SQL text lexed once and split into its statements, each with its own lexemes, for every
reader on the submit path (the access checks, the extension parser, result reuse): lexing is
the costly part, so none of them lexes again.

    script = LexedScript.of("SET spark.sql.shuffle.partitions=4;\\nselect a from t -- mine")
    [s.text for s in script.statements]  # ["SET spark.sql.shuffle.partitions=4", "select a from t"]
    reuse_text(LexedScript.of("select a  from t -- mine"))  # "SELECT A FROM T"
    reuse_text(script)  # None: two statements
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from string import ascii_letters

from sparkgate.sql import lexer
from sparkgate.sql.errors import location
from sparkgate.sql.lexer import Kind, Lexeme


@dataclass(frozen=True)
class ScriptStatement:
    number: int  # 1-based, in script order
    text: str  # exactly as written, without the ';' and the comments around it
    offset: int  # where it starts in the script
    line: int  # 1-based line and position of its first character
    position: int


@dataclass(frozen=True)
class LexedStatement:
    statement: ScriptStatement
    # Offsets into statement.text, not the script's: exactly what lex(statement.text) gives, so
    # errors found in them point where they did when each statement was lexed alone.
    lexemes: tuple[Lexeme, ...]

    @property
    def text(self) -> str:
        return self.statement.text


@dataclass(frozen=True)
class LexedScript:
    text: str
    statements: tuple[LexedStatement, ...]  # empty ones (``;;``, only comments) dropped

    @classmethod
    def of(cls, text: str) -> LexedScript:
        """``text`` lexed once and split at the semicolons that end statements (not those in
        strings or comments). Raises SqlSyntaxError (with the script's line and position) for
        unterminated strings, identifiers and comments."""
        statements: list[LexedStatement] = []
        current: list[Lexeme] = []
        for lexeme in [*lexer.lex(text), None]:
            if lexeme is not None and not (lexeme.kind is Kind.PUNCT and lexeme.value == ";"):
                current.append(lexeme)
                continue
            if current:
                start, end = current[0].start, current[-1].end
                line, position = location(text, start)
                statement = ScriptStatement(
                    len(statements) + 1, text[start:end], start, line, position
                )
                shifted = tuple(
                    Lexeme(lx.kind, lx.value, lx.start - start, lx.end - start) for lx in current
                )
                statements.append(LexedStatement(statement, shifted))
            current = []
        return cls(text, tuple(statements))


# A read-only query starts with one of these (after any opening parentheses) ...
_QUERY_OPENERS = frozenset({"SELECT", "WITH", "VALUES", "TABLE", "FROM"})
# ... and has none of these as a bare word anywhere. Conservative on purpose: a column named
# `set` refuses reuse, which only costs recomputing the result.
_NOT_READ_ONLY = frozenset(
    {
        "INSERT",
        "UPDATE",
        "DELETE",
        "MERGE",
        "CREATE",
        "DROP",
        "ALTER",
        "CACHE",
        "UNCACHE",
        "REFRESH",
        "SET",
        "RESET",
        "USE",
        "ADD",
        "LOAD",
        "TRUNCATE",
        "MSCK",
        "ANALYZE",
        "EXPLAIN",
    }
)


def reuse_text(script: LexedScript) -> str | None:
    """The normalised text of a script that is exactly one read-only query, else None.

    Lexemes joined by one space: bare words upper-cased (Spark's identifiers are
    case-insensitive unless spark.sql.caseSensitive, which the reuse context carries), quoted
    identifiers and strings re-quoted canonically, numbers and operators as written. So
    whitespace, comments and the case of bare words make no difference; the content of a
    string, a quoted identifier or a number does.

        reuse_text(LexedScript.of('select a, "x" from `My T` -- mine'))
        -> "SELECT A , 'x' FROM `My T`"
    """
    if len(script.statements) != 1:
        return None
    statement = script.statements[0]
    lexemes = statement.lexemes
    first = next((lx for lx in lexemes if not (lx.kind is Kind.PUNCT and lx.value == "(")), None)
    if first is None or not first.is_word(*_QUERY_OPENERS):
        return None
    if any(lx.is_word(*_NOT_READ_ONLY) for lx in lexemes):
        return None
    return " ".join(_normal(statement.text, lx) for lx in lexemes)


def reuse_key(text_norm: str, context: str) -> str:
    """The key of a result for reuse: sha256 (hex) of the normalised text and the context
    (the settings a result depends on), separated by NUL. ``context`` holds no NUL (it is
    what separates), so no two (text, context) pairs share a key."""
    joined = text_norm + "\x00" + context
    return hashlib.sha256(joined.encode("utf-8", "surrogatepass")).hexdigest()


def _normal(text: str, lexeme: Lexeme) -> str:
    if lexeme.kind is Kind.WORD:
        return lexeme.value.upper()
    if lexeme.kind is Kind.IDENT:
        return "`" + lexeme.value.replace("`", "``") + "`"
    if lexeme.kind is Kind.STRING:
        # The value is as Spark reads it (escapes undone, raw strings kept raw), so 'it\'s'
        # and "it's" are one string. A prefix other than raw's (N'…') stays: it is not ours
        # to say what it means.
        written = text[lexeme.start : lexeme.end]
        prefix = written[: len(written) - len(written.lstrip(ascii_letters))].upper()
        prefix = "" if prefix == "R" else prefix
        return prefix + "'" + lexeme.value.replace("\\", "\\\\").replace("'", "\\'") + "'"
    return text[lexeme.start : lexeme.end]  # numbers and operators: as written
