"""Parsing sparkgate's SQL extensions: a pure function from text to a statement value.

    parse("SAVE STREAM clicks TO parquet OPTIONS ('path'='/data/clicks')")
    -> SaveStream(view="clicks", provider="parquet", options=(Option("path", ...),), ...)
    parse("SELECT 1") -> PassThrough("SELECT 1")

Keywords are case-insensitive. Anything that does not start like an extension (``CREATE
[OR REPLACE] STREAM``, ``SAVE STREAM``, ``STOP STREAM``) passes through untouched for Spark to
run; an extension that breaks the grammar raises SqlSyntaxError saying where and what was
expected. The clauses of SAVE STREAM may come in any order, each at most once.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from sparkgate.sql import lexer
from sparkgate.sql.durations import COMPACT_HELP, unit_seconds
from sparkgate.sql.errors import SqlSyntaxError
from sparkgate.sql.lexer import Kind, Lexeme
from sparkgate.sql.statements import (
    Column,
    CreateStream,
    Option,
    OutputMode,
    PassThrough,
    SaveStream,
    Statement,
    StopStream,
    Trigger,
)

# Cheap filter: only text that mentions STREAM at all is lexed.
_MENTIONS_STREAM = re.compile(r"stream", re.IGNORECASE)
# An extension's opening words, after any comments: decides whose error an unreadable text is.
_OPENING = re.compile(
    r"(?:\s+|--[^\n]*|/\*.*?\*/)*(?:CREATE\s+(?:OR\s+REPLACE\s+)?|SAVE\s+|STOP\s+)STREAM\b",
    re.IGNORECASE | re.DOTALL,
)
_PLAIN_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_SAVE_CLAUSES = ("IDENTIFIED BY", "TRIGGER", "OUTPUT MODE", "PARTITIONED ON", "OPTIONS")


def parse(text: str, lexemes: Sequence[Lexeme] | None = None) -> Statement:
    """A sparkgate extension, or PassThrough(text) for Spark. Raises SqlSyntaxError.

    ``lexemes``: those of ``text`` when already made (offsets into ``text``, as
    ``LexedStatement.lexemes`` has them), so it is not lexed again."""
    if not _MENTIONS_STREAM.search(text):
        return PassThrough(text)
    if lexemes is None:
        try:
            lexemes = lexer.lex(text)
        except SqlSyntaxError:
            if _OPENING.match(text):
                raise
            return PassThrough(text)  # not ours: Spark reports it in its own words
    if not _is_extension(lexemes):
        return PassThrough(text)
    return _Parser(text, lexemes).statement()


def _is_extension(lexemes: Sequence[Lexeme]) -> bool:
    words = lexemes[:4]
    if len(words) >= 2 and words[0].is_word("SAVE", "STOP"):
        return words[1].is_word("STREAM")
    if len(words) >= 2 and words[0].is_word("CREATE"):
        if words[1].is_word("STREAM"):
            return True
        return len(words) >= 4 and words[1].is_word("OR") and words[3].is_word("STREAM")
    return False


def one_of(items: list[str]) -> str:
    """``["A", "B", "C"]`` -> ``"A, B or C"``."""
    return items[0] if len(items) == 1 else ", ".join(items[:-1]) + " or " + items[-1]


def quote_name(part: str) -> str:
    """A name part as Spark reads it: plain when it can be, else in backticks."""
    if _PLAIN_NAME.fullmatch(part):
        return part
    return "`" + part.replace("`", "``") + "`"


class _Parser:
    def __init__(self, text: str, lexemes: Sequence[Lexeme]) -> None:
        self.text = text
        self.lexemes = lexemes
        self.index = 0

    # -- the statements ------------------------------------------------------------------

    def statement(self) -> Statement:
        first = self.next_word("CREATE", "SAVE", "STOP")
        if first.is_word("CREATE"):
            or_replace = False
            if self.peek_word("OR"):
                self.index += 1
                self.next_word("REPLACE")
                or_replace = True
            self.next_word("STREAM")
            result: Statement = self.create_stream(or_replace)
        elif first.is_word("SAVE"):
            self.next_word("STREAM")
            result = self.save_stream()
        else:
            self.next_word("STREAM")
            name, _ = self.name("the name of a streaming query")
            result = StopStream(self.text, name)
        self.end()
        return result

    def create_stream(self, or_replace: bool) -> CreateStream:
        offsets = {"name": self.offset()}
        name, _ = self.name("the stream's name")
        if self.peek_punct("."):
            raise self.error(
                "a stream is a temporary view, so its name takes no database",
                expected="USING, FROM TABLE or a column list",
            )
        columns: tuple[Column, ...] | None = None
        provider: str | None = None
        table: str | None = None
        if self.peek_word("FROM"):
            self.index += 1
            self.next_word("TABLE")
            offsets["table"] = self.offset()
            table = self.qualified_name("a table name")
        else:
            if self.peek_punct("("):
                offsets["columns"] = self.offset()
                columns = self.columns()
            if not self.peek_word("USING"):
                expected = "USING" if columns is not None else "USING, FROM TABLE or a column list"
                raise self.error(None, expected=expected)
            self.index += 1
            offsets["provider"] = self.offset()
            provider = self.name("a source provider (rate, json, parquet, ...)")[0].lower()
        options: tuple[Option, ...] = ()
        if self.peek_word("OPTIONS"):
            offsets["options"] = self.offset()
            self.index += 1
            options = self.options()
        return CreateStream(
            self.text,
            name,
            provider,
            table,
            columns=columns,
            options=options,
            or_replace=or_replace,
            offsets=offsets,
        )

    def save_stream(self) -> SaveStream:
        offsets = {"view": self.offset()}
        view = self.qualified_name("the name of a streaming view or table")
        self.next_word("TO")
        offsets["provider"] = self.offset()
        provider = self.name("a sink provider (parquet, json, table, console, memory, ...)")[0]
        provider = provider.lower()
        table: str | None = None
        if provider == "table":
            offsets["table"] = self.offset()
            table = self.qualified_name("the name of the table to write to")
        query_name: str | None = None
        trigger: Trigger | None = None
        mode: OutputMode | None = None
        partitioned: tuple[str, ...] = ()
        options: tuple[Option, ...] = ()
        seen: set[str] = set()
        while not self.at_end():
            start = self.offset()
            clause = self.clause(seen)
            offsets[clause] = start
            if clause == "IDENTIFIED BY":
                query_name = self.name("a query name")[0]
            elif clause == "TRIGGER":
                trigger = self.trigger()
            elif clause == "OUTPUT MODE":
                word = self.next_word("APPEND", "COMPLETE", "UPDATE")
                mode = OutputMode(word.value.lower())
            elif clause == "PARTITIONED ON":
                partitioned = self.name_list("a column name")
            else:
                options = self.options()
        return SaveStream(
            self.text,
            view,
            provider,
            table=table,
            query_name=query_name,
            trigger=trigger,
            output_mode=mode,
            partitioned_on=partitioned,
            options=options,
            offsets={_OFFSET_KEYS.get(k, k): v for k, v in offsets.items()},
        )

    def clause(self, seen: set[str]) -> str:
        """The next SAVE STREAM clause's name, having read its keywords."""
        here = self.peek()
        remaining = [c for c in _SAVE_CLAUSES if c not in seen]
        expected = one_of([*remaining, "the end of the statement"])
        for clause in _SAVE_CLAUSES:
            words = clause.split()
            if here is not None and here.is_word(words[0]):
                if clause in seen:
                    raise self.error(f"{clause} is given twice", expected=expected)
                self.index += 1
                if clause == "PARTITIONED ON":
                    self.next_word("ON", "BY")
                elif len(words) > 1:
                    self.next_word(words[1])
                seen.add(clause)
                return clause
        raise self.error(None, expected=expected)

    # -- clause parts --------------------------------------------------------------------

    def columns(self) -> tuple[Column, ...]:
        self.next_punct("(")
        columns: list[Column] = []
        while True:
            name, _ = self.name("a column name")
            start = self.offset()
            depth = 0
            while not self.at_end():
                here = self.peek()
                assert here is not None
                if here.kind is Kind.PUNCT and here.value in ("(", "<"):
                    depth += 1
                elif here.kind is Kind.PUNCT and here.value in (")", ">"):
                    if depth == 0:
                        break
                    depth -= 1
                elif here.kind is Kind.PUNCT and here.value == "," and depth == 0:
                    break
                self.index += 1
            end = self.lexemes[self.index - 1].end if self.index else start
            if end <= start:
                raise self.error(None, expected=f"a type for column {name}")
            columns.append(Column(name, self.text[start:end]))
            if self.peek_punct(","):
                self.index += 1
                continue
            self.next_punct(")")
            return tuple(columns)

    def options(self) -> tuple[Option, ...]:
        self.next_punct("(")
        options: list[Option] = []
        seen: set[str] = set()
        if self.peek_punct(")"):
            self.index += 1
            return ()
        while True:
            offset = self.offset()
            key = self.option_key()
            if key.lower() in seen:
                raise SqlSyntaxError.at(
                    self.text,
                    offset,
                    f"Syntax error at or near '{key}': option '{key}' is given twice",
                    found=key,
                    expected="each option once",
                )
            seen.add(key.lower())
            if self.peek_punct("="):
                self.index += 1
            options.append(Option(key, self.option_value(), offset))
            if self.peek_punct(","):
                self.index += 1
                continue
            self.next_punct(")")
            return tuple(options)

    def option_key(self) -> str:
        here = self.peek()
        if here is not None and here.kind is Kind.STRING:
            self.index += 1
            return here.value
        parts = [self.name("an option key ('key' = 'value')")[0]]
        while self.peek_punct("."):
            self.index += 1
            parts.append(self.name("the rest of the option key")[0])
        return ".".join(parts)

    def option_value(self) -> str:
        here = self.peek()
        if here is not None and here.kind in (Kind.STRING, Kind.NUMBER):
            self.index += 1
            return here.value
        if here is not None and here.is_word("TRUE", "FALSE"):
            self.index += 1
            return here.value.lower()
        if here is not None and here.kind is Kind.PUNCT and here.value == "-":
            after = self.peek(1)
            if after is not None and after.kind is Kind.NUMBER:
                self.index += 2
                return "-" + after.value
        raise self.error(None, expected="an option value (a string, number, true or false)")

    def trigger(self) -> Trigger:
        if self.peek_word("INTERVAL"):
            self.index += 1
        here = self.peek()
        expected = f"a trigger interval: 5 SECONDS, 1 MINUTE, or {COMPACT_HELP}"
        if here is None:
            raise self.error(None, expected=expected)
        if here.kind is Kind.STRING:
            number, _, unit = here.value.strip().partition(" ")
            self.index += 1
            return self._trigger(here, number, unit.strip(), expected)
        if here.kind is not Kind.NUMBER:
            raise self.error(None, expected=expected)
        self.index += 1
        match = re.fullmatch(r"(\d+(?:\.\d+)?)([A-Za-z]*)", here.value)
        if match is None:
            self.index -= 1
            raise self.error(None, expected=expected)
        number, unit = match.group(1), match.group(2)
        if not unit:
            word = self.peek()
            if word is None or word.kind is not Kind.WORD:
                raise self.error(None, expected="a unit: MILLISECONDS, SECONDS, MINUTES, HOURS")
            self.index += 1
            unit = word.value
        return self._trigger(here, number, unit, expected)

    def _trigger(self, first: Lexeme, number: str, unit: str, expected: str) -> Trigger:
        size = unit_seconds(unit)
        if size is None or not re.fullmatch(r"\d+(\.\d+)?", number):
            self.index -= 1
            raise self.error(f"'{unit or number}' is not a unit of time", expected=expected)
        written = self.text[first.start : self.lexemes[self.index - 1].end]
        return Trigger(float(number) * size, written)

    def name_list(self, what: str) -> tuple[str, ...]:
        self.next_punct("(")
        names = [self.name(what)[0]]
        while self.peek_punct(","):
            self.index += 1
            names.append(self.name(what)[0])
        self.next_punct(")")
        return tuple(names)

    def qualified_name(self, what: str) -> str:
        parts = [self.name(what)[0]]
        while self.peek_punct("."):
            self.index += 1
            parts.append(self.name(what)[0])
        if len(parts) > 3:
            raise self.error("a name has at most three parts (catalog.database.name)")
        return ".".join(quote_name(p) for p in parts)

    def name(self, what: str) -> tuple[str, Lexeme]:
        here = self.peek()
        if here is None or not here.is_name:
            raise self.error(None, expected=what)
        self.index += 1
        return here.value, here

    # -- tokens --------------------------------------------------------------------------

    def peek(self, ahead: int = 0) -> Lexeme | None:
        position = self.index + ahead
        if position >= len(self.lexemes):
            return None
        here = self.lexemes[position]
        if here.kind is Kind.PUNCT and here.value == ";" and self._only_semicolons_from(position):
            return None  # a trailing ';' ends the statement
        return here

    def _only_semicolons_from(self, position: int) -> bool:
        return all(lx.kind is Kind.PUNCT and lx.value == ";" for lx in self.lexemes[position:])

    def at_end(self) -> bool:
        return self.peek() is None

    def offset(self) -> int:
        here = self.peek()
        return here.start if here is not None else len(self.text.rstrip().rstrip(";").rstrip())

    def peek_word(self, *words: str) -> bool:
        here = self.peek()
        return here is not None and here.is_word(*words)

    def peek_punct(self, value: str) -> bool:
        here = self.peek()
        return here is not None and here.kind is Kind.PUNCT and here.value == value

    def next_word(self, *words: str) -> Lexeme:
        here = self.peek()
        if here is None or not here.is_word(*words):
            raise self.error(None, expected=one_of(list(words)))
        self.index += 1
        return here

    def next_punct(self, value: str) -> Lexeme:
        here = self.peek()
        if here is None or here.kind is not Kind.PUNCT or here.value != value:
            raise self.error(None, expected=f"'{value}'")
        self.index += 1
        return here

    def end(self) -> None:
        if not self.at_end():
            raise self.error(None, expected="the end of the statement")

    def error(self, problem: str | None, expected: str | None = None) -> SqlSyntaxError:
        here = self.peek()
        found = None if here is None else self.text[here.start : here.end]
        where = "at end of input" if found is None else f"at or near '{found}'"
        message = problem or f"Syntax error {where}"
        if problem is not None:
            message = f"Syntax error {where}: {problem}"
        if expected:
            message += f"; expected {expected}"
        return SqlSyntaxError.at(self.text, self.offset(), message, found=found, expected=expected)


_OFFSET_KEYS = {
    "IDENTIFIED BY": "query_name",
    "TRIGGER": "trigger",
    "OUTPUT MODE": "output_mode",
    "PARTITIONED ON": "partitioned_on",
    "OPTIONS": "options",
}
