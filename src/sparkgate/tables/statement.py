"""Recognising ``CREATE [OR REPLACE] TABLE ... AS SELECT`` and ``REPLACE TABLE ... AS SELECT``.

Pure: text in, a ``CtasStatement`` (or ``PassThrough``, with the reason) out; no Spark.

    recognise("CREATE TABLE IF NOT EXISTS db.sales USING parquet AS SELECT * FROM raw")
    -> CtasStatement(kind=CREATE, table=TableName(("db", "sales")), if_not_exists=True,
                     provider="parquet", query="SELECT * FROM raw", ...)
    recognise("SELECT 1") -> PassThrough("not a CREATE/REPLACE TABLE statement")

Only the statement's head (up to the ``AS`` before the query) is read: it is tokenised with
sqlglot's Spark dialect, and its clauses (``USING``, ``PARTITIONED BY``, ``OPTIONS``,
``TBLPROPERTIES``, ...) parsed by sqlglot. The query is kept verbatim, with its offset in the
text, and handed to Spark as it is: whatever SQL Spark accepts in a query stays accepted, and
errors in it can be reported at their place in the statement the user wrote.

A statement whose head sparkgate cannot stage (an explicit ``LOCATION``, Hive format, a clause
it does not know) is still recognised, with ``blockers`` saying why; the caller then lets Spark
run it as Spark would.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any

import sqlglot
from sqlglot import Token, TokenType, exp
from sqlglot.dialects.spark import Spark
from sqlglot.errors import ErrorLevel, SqlglotError

_SPARK = Spark()
_WORD = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
# What may follow AS in a CTAS: a query.
_QUERY_STARTS = frozenset(
    {
        TokenType.SELECT,
        TokenType.WITH,
        TokenType.L_PAREN,
        TokenType.FROM,
        TokenType.VALUES,
        TokenType.TABLE,
    }
)
# Tokens that end a table name rather than being part of one.
_NOT_NAMES = frozenset({TokenType.ALIAS, TokenType.USING, TokenType.L_PAREN, TokenType.SEMICOLON})


class CtasKind(StrEnum):
    CREATE = "create"  # CREATE TABLE [IF NOT EXISTS] t ... AS query
    CREATE_OR_REPLACE = "create_or_replace"  # CREATE OR REPLACE TABLE t ... AS query
    REPLACE = "replace"  # REPLACE TABLE t ... AS query

    @property
    def replaces(self) -> bool:
        return self is not CtasKind.CREATE

    @property
    def creates(self) -> bool:
        return self is not CtasKind.REPLACE


@dataclass(frozen=True)
class TableName:
    """A table name as written, unquoted: ``("t",)``, ``("db", "t")``, ``("cat", "db", "t")``."""

    parts: tuple[str, ...]

    @property
    def name(self) -> str:
        return self.parts[-1]

    @property
    def database(self) -> str | None:
        return self.parts[-2] if len(self.parts) >= 2 else None

    @property
    def catalog(self) -> str | None:
        return self.parts[-3] if len(self.parts) >= 3 else None


@dataclass(frozen=True)
class CtasStatement:
    kind: CtasKind
    table: TableName
    if_not_exists: bool
    # the query after AS, verbatim, and where it starts in the statement
    query: str
    query_offset: int
    # where the clauses after the table name start (they run up to the query)
    clauses_offset: int
    provider: str | None = None  # USING x, lower-cased; None: Spark's default
    partition_columns: tuple[str, ...] = ()
    bucketed: bool = False  # CLUSTERED BY ... INTO n BUCKETS
    options: Mapping[str, str] = field(default_factory=dict)  # OPTIONS (...)
    properties: Mapping[str, str] = field(default_factory=dict)  # TBLPROPERTIES (...)
    comment: str | None = None
    location: str | None = None
    # Why sparkgate cannot stage this statement, in its own words; empty: it can, as far as
    # the text goes (the catalog may still say otherwise).
    blockers: tuple[str, ...] = ()


@dataclass(frozen=True)
class PassThrough:
    """Not a statement sparkgate runs its own way; Spark gets it as written."""

    reason: str


def recognise(sql: str) -> CtasStatement | PassThrough:
    """The CTAS/RTAS statement ``sql`` is, or why it is none (see the module docstring)."""
    try:
        tokens = _SPARK.tokenize(sql)
    except SqlglotError as exc:
        return PassThrough(f"not tokenisable ({_first_line(exc)}); Spark reports the error")
    while tokens and tokens[-1].token_type is TokenType.SEMICOLON:
        tokens.pop()
    head = _Head.read(tokens)
    if isinstance(head, PassThrough):
        return head
    as_index = _find_as(tokens, head.after_name)
    if as_index is None:
        return PassThrough("no AS before a query: a CREATE TABLE without a query")
    query_tokens = tokens[as_index + 1 :]
    if not query_tokens or query_tokens[0].token_type not in _QUERY_STARTS:
        return PassThrough("AS is not followed by a query")
    if any(t.token_type is TokenType.SEMICOLON for t in query_tokens):
        return PassThrough("more than one statement; Spark reports the error")
    if tokens[head.after_name].token_type is TokenType.L_PAREN:
        # Spark refuses a column list in a CTAS with its own clear error.
        return PassThrough("a column list in a CTAS; Spark reports the error")
    query_offset = query_tokens[0].start
    clauses_offset = tokens[head.after_name - 1].end + 1
    clause_tokens = tokens[head.after_name : as_index]
    clauses = _Clauses.read(sql, clause_tokens)
    blockers = list(head.blockers) + list(clauses.blockers)
    return CtasStatement(
        kind=head.kind,
        table=head.table,
        if_not_exists=head.if_not_exists,
        query=sql[query_offset : query_tokens[-1].end + 1],
        query_offset=query_offset,
        clauses_offset=clauses_offset,
        provider=clauses.provider,
        partition_columns=tuple(clauses.partition_columns),
        bucketed=clauses.bucketed,
        options=dict(clauses.options),
        properties=dict(clauses.properties),
        comment=clauses.comment,
        location=clauses.location,
        blockers=tuple(blockers),
    )


@dataclass
class _Head:
    kind: CtasKind
    table: TableName
    if_not_exists: bool
    after_name: int  # index of the first token after the table name
    blockers: list[str]

    @classmethod
    def read(cls, tokens: Sequence[Token]) -> _Head | PassThrough:
        def upper(i: int) -> str:
            return tokens[i].text.upper() if i < len(tokens) else ""

        def kind_of(i: int) -> TokenType | None:
            return tokens[i].token_type if i < len(tokens) else None

        blockers: list[str] = []
        i = 0
        if kind_of(0) is TokenType.CREATE:
            i = 1
            kind = CtasKind.CREATE
            if kind_of(1) is TokenType.OR and kind_of(2) is TokenType.REPLACE:
                kind, i = CtasKind.CREATE_OR_REPLACE, 3
            if upper(i) in ("TEMPORARY", "TEMP"):
                return PassThrough("a temporary table or view")
            if upper(i) == "EXTERNAL":
                blockers.append("EXTERNAL: the table's data is not sparkgate's to stage")
                i += 1
        elif kind_of(0) is TokenType.REPLACE:
            kind, i = CtasKind.REPLACE, 1
        else:
            return PassThrough("not a CREATE/REPLACE TABLE statement")
        if kind_of(i) is not TokenType.TABLE:
            return PassThrough("not a CREATE/REPLACE TABLE statement")
        i += 1
        if_not_exists = False
        if upper(i) == "IF" and kind_of(i + 1) is TokenType.NOT and upper(i + 2) == "EXISTS":
            if_not_exists, i = True, i + 3
        parts: list[str] = []
        while True:
            token = tokens[i] if i < len(tokens) else None
            if token is None or not _is_name_part(token):
                return PassThrough("no table name where one was expected")
            parts.append(token.text)
            i += 1
            if kind_of(i) is not TokenType.DOT:
                break
            i += 1
        if i >= len(tokens):
            return PassThrough("no AS before a query: a CREATE TABLE without a query")
        return cls(kind, TableName(tuple(parts)), if_not_exists, i, blockers)


def _is_name_part(token: Token) -> bool:
    if token.token_type is TokenType.IDENTIFIER:  # `back-quoted`: any text
        return True
    return token.token_type not in _NOT_NAMES and bool(_WORD.match(token.text))


def _find_as(tokens: Sequence[Token], start: int) -> int | None:
    """The AS that introduces the query: the first one outside parentheses, except the AS of
    a Hive ``STORED AS`` clause."""
    depth = 0
    for i in range(start, len(tokens)):
        token = tokens[i]
        if token.token_type is TokenType.L_PAREN:
            depth += 1
        elif token.token_type is TokenType.R_PAREN:
            depth -= 1
        elif (
            token.token_type is TokenType.ALIAS
            and depth == 0
            and tokens[i - 1].text.upper() != "STORED"
        ):
            return i
    return None


@dataclass
class _Clauses:
    provider: str | None = None
    partition_columns: list[str] = field(default_factory=list)
    bucketed: bool = False
    options: dict[str, str] = field(default_factory=dict)
    properties: dict[str, str] = field(default_factory=dict)
    comment: str | None = None
    location: str | None = None
    blockers: list[str] = field(default_factory=list)

    @classmethod
    def read(cls, sql: str, tokens: Sequence[Token]) -> _Clauses:
        clauses = cls()
        if not tokens:
            return clauses
        text = sql[tokens[0].start : tokens[-1].end + 1]
        base = tokens[0].start
        # USING a.b.c (a class name) is beyond sqlglot; read it here and blank it out.
        for i, token in enumerate(tokens):
            if token.token_type is TokenType.USING and i + 1 < len(tokens):
                j = i + 1
                parts = [tokens[j].text]
                while j + 2 < len(tokens) and tokens[j + 1].token_type is TokenType.DOT:
                    parts.append(tokens[j + 2].text)
                    j += 2
                clauses.provider = ".".join(parts).lower()
                start, end = token.start - base, tokens[j].end + 1 - base
                text = text[:start] + " " * (end - start) + text[end:]
                break
        try:
            parsed = sqlglot.parse_one(
                f"CREATE TABLE t {text} AS SELECT 1", read="spark", error_level=ErrorLevel.RAISE
            )
        except SqlglotError as exc:
            clauses.blockers.append(f"clauses sparkgate cannot read ({_first_line(exc)})")
            return clauses
        if not isinstance(parsed, exp.Create):
            clauses.blockers.append("clauses sparkgate cannot read")
            return clauses
        properties = parsed.args.get("properties")
        for prop in properties.expressions if properties else []:
            clauses._take(prop)
        return clauses

    def _take(self, prop: exp.Expression) -> None:
        if isinstance(prop, exp.FileFormatProperty):
            if prop.args.get("hive_format"):
                self.blockers.append(f"Hive format ({prop.sql(dialect='spark')})")
            else:
                self.provider = _text(prop.this).lower()
        elif isinstance(prop, exp.PartitionedByProperty):
            columns = prop.this.expressions if isinstance(prop.this, exp.Schema) else [prop.this]
            for column in columns:
                if isinstance(column, exp.Identifier | exp.Column):
                    self.partition_columns.append(column.name)
                else:  # PARTITIONED BY (p INT): Hive's form
                    self.blockers.append(f"Hive-style {prop.sql(dialect='spark')}")
                    return
        elif isinstance(prop, exp.ClusteredByProperty):
            self.bucketed = True
        elif isinstance(prop, exp.OptionsProperty):
            self.options.update(_pairs(prop.expressions))
        elif type(prop) is exp.Property:
            self.properties.update(_pairs([prop]))  # one TBLPROPERTIES entry
        elif isinstance(prop, exp.SchemaCommentProperty):
            self.comment = _text(prop.this)
        elif isinstance(prop, exp.LocationProperty):
            self.location = _text(prop.this)
            self.blockers.append("LOCATION is given: the table's data is not sparkgate's to stage")
        elif isinstance(prop, exp.ExternalProperty):
            self.blockers.append("EXTERNAL: the table's data is not sparkgate's to stage")
        elif isinstance(prop, exp.RowFormatDelimitedProperty | exp.RowFormatSerdeProperty):
            self.blockers.append(f"Hive format ({prop.sql(dialect='spark')})")
        else:
            self.blockers.append(f"a clause sparkgate does not stage ({prop.sql(dialect='spark')})")


def _pairs(items: Sequence[exp.Expression]) -> dict[str, str]:
    pairs = {}
    for item in items:
        if isinstance(item, exp.Property):
            pairs[_text(item.this)] = _text(item.args.get("value"))
    return pairs


def _text(node: Any) -> str:
    if node is None:
        return ""
    if isinstance(node, str):
        return node
    if isinstance(node, exp.Literal):
        return str(node.this)
    if isinstance(node, exp.Boolean):
        return "true" if node.this else "false"
    if isinstance(node, exp.Identifier | exp.Var | exp.Column):
        return str(node.name)
    return str(node.sql(dialect="spark"))


def _first_line(exc: BaseException) -> str:
    return str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
