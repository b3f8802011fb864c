"""A script lexed once: the same statements as splitting always gave, each with the lexemes
its text alone would give (so parse errors point where they did), the normalised text for
result reuse, and the submit path's checks lexing nothing more."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import replace
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from sparkgate.auth.passwords import PasswordFile
from sparkgate.auth.principal import Identity, Principal
from sparkgate.auth.sql import sql_needs
from sparkgate.auth.users import Users
from sparkgate.errors import DeniedSetting, MissingRight
from sparkgate.settings import Settings
from sparkgate.sql import lexer
from sparkgate.sql.errors import SqlSyntaxError, location
from sparkgate.sql.lexed import LexedScript, ScriptStatement, reuse_key, reuse_text
from sparkgate.sql.lexer import Kind, Lexeme, lex
from sparkgate.sql.parser import parse
from sparkgate.sql.script import split_script
from sparkgate.states import StatementKind
from sparkgate.store import Store
from tests.sql.test_parser import PASS_THROUGH, SYNTAX_ERRORS, TRIGGERS
from tests.sql.test_script import SCRIPT


def split_as_before(text: str) -> list[ScriptStatement]:
    """split_script as it was before LexedScript: the reference the splitting must keep."""
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


SCRIPTS = [
    SCRIPT,
    *PASS_THROUGH[:-2],  # the last two do not lex, or are empty: below
    *(text for text, *_ in SYNTAX_ERRORS),
    *(f"SAVE STREAM v TO console {trigger}" for trigger, _ in TRIGGERS),
    "",
    "  ;; -- nothing\n",
    "SELECT 1; SET spark.sql.shuffle.partitions = 4",
    "set `spark.hadoop.a` = 'b';\n\n  /* two */ SELECT 'a;b' AS `c;d`; -- end ;",
    "SAVE STREAM v TO json OPTIONS ('path'='/x')\n;\nSTOP STREAM v;;",
    "CREATE STREAM s (a INT, b MAP<STRING, ARRAY<INT>>) USING json PARTITIONED BY (a)",
    "SELECT 5s, 1.5BD, X'41', r'x\\ny', 'it\\'s', \"q\" FROM t ORDER  BY a",
]


@pytest.mark.parametrize("text", SCRIPTS)
def test_statements_are_those_splitting_always_gave_with_their_own_lexemes(text: str) -> None:
    script = LexedScript.of(text)
    assert script.text == text
    assert [s.statement for s in script.statements] == split_as_before(text)
    assert split_script(text) == split_as_before(text)
    for statement in script.statements:
        assert list(statement.lexemes) == lex(statement.text)
        assert statement.text == statement.statement.text


@pytest.mark.parametrize("text", SCRIPTS)
def test_parse_from_the_lexemes_is_parse_from_the_text(text: str) -> None:
    for statement in LexedScript.of(text).statements:
        try:
            expected = parse(statement.text)
        except SqlSyntaxError as error:
            with pytest.raises(SqlSyntaxError) as caught:
                parse(statement.text, statement.lexemes)
            assert str(caught.value) == str(error)
            assert caught.value.params == error.params
        else:
            assert parse(statement.text, statement.lexemes) == expected


@pytest.mark.parametrize(("text", "line", "position", "found", "expected"), SYNTAX_ERRORS)
def test_parse_errors_keep_their_positions(
    text: str, line: int, position: int, found: str | None, expected: str | None
) -> None:
    # After another statement, on another line: the statement's own position, as before.
    script = LexedScript.of(f"SELECT 1;\n  -- next\n  {text};")
    statement = script.statements[1]
    assert statement.text == text
    with pytest.raises(SqlSyntaxError) as caught:
        parse(statement.text, statement.lexemes)
    error = caught.value
    assert (error.line, error.position) == (line, position)
    assert error.params["found"] == found
    if expected is not None:
        assert error.params["expected"] == expected
    shifted = error.shifted(statement.statement.line, statement.statement.position)
    assert (shifted.line, shifted.position) == (
        line + 2,
        position + (2 if line == 1 else 0),
    )


def test_text_that_cannot_be_lexed_is_refused_where_it_goes_wrong() -> None:
    with pytest.raises(SqlSyntaxError) as caught:
        LexedScript.of("SELECT 1;\nSELECT 'oops")
    assert (caught.value.line, caught.value.position) == (2, 8)
    with pytest.raises(SqlSyntaxError, match="Unterminated comment"):
        LexedScript.of("SELECT 1 /* never closed")


# -- the normalised text for result reuse -----------------------------------------------------


@pytest.mark.parametrize(
    ("text", "normal"),
    [
        ("SELECT 1", "SELECT 1"),
        ("select a, b from t where x = 'It''s'", "SELECT A , B FROM T WHERE X = 'It' 's'"),
        ("SELECT * FROM `My Table`;", "SELECT * FROM `My Table`"),
        ("  -- a comment\n select 1 /* another */ ;  ", "SELECT 1"),
        ("with q as (select 1) select * from q", "WITH Q AS ( SELECT 1 ) SELECT * FROM Q"),
        ("values (1, 'a')", "VALUES ( 1 , 'a' )"),
        ("table t", "TABLE T"),
        ("from t select a", "FROM T SELECT A"),
        ("(select 1) union (select 2)", "( SELECT 1 ) UNION ( SELECT 2 )"),
        ("((select 1))", "( ( SELECT 1 ) )"),
        (
            "SELECT \"double\", 'it\\'s', 'back\\\\slash'",
            "SELECT 'double' , 'it\\'s' , 'back\\\\slash'",
        ),
        ("SELECT 'a\\nb', r'a\\nb'", "SELECT 'a\nb' , 'a\\\\nb'"),
        ("SELECT `a``b`", "SELECT `a``b`"),
        ("SELECT 1.50, 5s, 10L, X'41'", "SELECT 1.50 , 5s , 10L , X'41'"),
        # A hint is one lexeme, kept as written: it is not a comment to Spark.
        ("select /*+ BROADCAST(t) */ * from t", "SELECT /*+ BROADCAST(t) */ * FROM T"),
        ("select a<=>b, a != b", "SELECT A <=> B , A != B"),
    ],
)
def test_reuse_text_of_one_read_only_query(text: str, normal: str) -> None:
    assert reuse_text(LexedScript.of(text)) == normal


@pytest.mark.parametrize(
    "text",
    [
        "",
        "-- only a comment",
        "SELECT 1; SELECT 2",  # not exactly one statement
        "SELECT 1;;SELECT 1",
        "SHOW TABLES",  # not a query
        "DESCRIBE t",
        "`select` 1",
        "'SELECT' 1",
        "(",
        "INSERT INTO t SELECT 1",
        "WITH q AS (SELECT 1) INSERT INTO t SELECT * FROM q",
        "FROM s INSERT OVERWRITE TABLE t SELECT *",
        "SELECT * FROM t UNION SELECT * FROM (DELETE FROM u)",
        "WITH x AS (SELECT 1) MERGE INTO t USING x ON true WHEN MATCHED THEN DELETE",
        "SELECT 1 AS set",  # a column called set: refused, conservatively
        "select a from t where update = 1",
        "EXPLAIN SELECT 1",
        "CREATE TABLE t AS SELECT 1",
        "CACHE TABLE c AS SELECT 1",
        "SET spark.sql.shuffle.partitions = 4",
        "select reset, use, add, load, truncate, msck, analyze, refresh, uncache, drop, alter",
    ],
)
def test_reuse_text_refuses_anything_else(text: str) -> None:
    assert reuse_text(LexedScript.of(text)) is None


REFUSED = [
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
]


@pytest.mark.parametrize("word", REFUSED)
def test_each_refused_word_refuses_in_any_case_but_not_in_strings_or_quotes(word: str) -> None:
    assert reuse_text(LexedScript.of(f"SELECT a FROM t WHERE {word.lower()} = 1")) is None
    assert reuse_text(LexedScript.of(f"SELECT a FROM t WHERE {word.title()} = 1")) is None
    assert reuse_text(LexedScript.of(f"SELECT '{word}', `{word}` FROM t -- {word}")) is not None


def test_what_makes_two_texts_the_same_query_and_what_does_not() -> None:
    def same(a: str, b: str) -> bool:
        return reuse_text(LexedScript.of(a)) == reuse_text(LexedScript.of(b))

    assert same("SELECT a FROM t", "select  A\nfrom T -- all of them")
    assert same("SELECT a FROM t", "/* c */ SELECT a FROM t;")
    assert same("SELECT 'x'", 'SELECT "x"')
    assert same("SELECT 'it\\'s'", 'SELECT "it\'s"')
    assert not same("SELECT 'x'", "SELECT 'X'")
    assert not same("SELECT `a`", "SELECT `A`")
    assert not same("SELECT `a`", "SELECT a")  # the quoted one is never a keyword
    assert not same("SELECT 1", "SELECT 2")
    assert not same("SELECT 1.0", "SELECT 1")  # decimal and integer
    assert not same("SELECT 'a' AS s", "SELECT a AS s")


def test_reuse_key_hashes_the_text_and_its_context() -> None:
    key = reuse_key("SELECT 1", '{"spark.sql.caseSensitive": "false"}')
    assert len(key) == 64 and int(key, 16) >= 0
    assert key == reuse_key("SELECT 1", '{"spark.sql.caseSensitive": "false"}')
    assert key != reuse_key("SELECT 1", '{"spark.sql.caseSensitive": "true"}')
    assert key != reuse_key("SELECT 2", '{"spark.sql.caseSensitive": "false"}')
    assert reuse_key("SELECT 'a'", "b") != reuse_key("SELECT 'a'b", "")
    assert len(reuse_key("SELECT '\ud800'", "")) == 64  # a lone surrogate from JSON


# -- a generated property: what must and must not change the normalised text --------------

# A query in a small grammar, as lexemes: (kind, value); rendered in many equivalent ways.
_WORDS = ["a", "b", "t", "sum", "as", "and", "or", "where", "group", "by", "not", "in", "x1"]
_PUNCT = ["(", ")", ",", ".", "=", "+", "*", "<", ">="]
_STRING_CHARS = st.sampled_from(["a", "B", " ", "'", '"', "\\", "%", "_", "n", "0", ";", "\n"])
_SEPARATORS = [" ", "  ", "\n", "\t", " /* c; 'x' */ ", " -- c; 'x'\n", "\n/* multi\nline */\n"]

_lexeme = st.one_of(
    st.tuples(st.just("word"), st.sampled_from(_WORDS)),
    st.tuples(st.just("punct"), st.sampled_from(_PUNCT)),
    st.tuples(st.just("number"), st.sampled_from(["1", "42", "1.5", "1e3", "7L"])),
    st.tuples(st.just("string"), st.text(_STRING_CHARS, max_size=6)),
    st.tuples(st.just("ident"), st.text(st.sampled_from(["a", "B", " ", "`", "-"]), min_size=1)),
)
_query = st.tuples(
    st.sampled_from(["select", "from", "with", "values", "table"]), st.lists(_lexeme)
)


def _string(value: str, quote: str) -> str:
    """A literal Spark reads as ``value``: the escapes Spark undoes, in either quote."""
    return quote + value.replace("\\", "\\\\").replace(quote, "\\" + quote) + quote


def _render(
    query: tuple[str, list[tuple[str, str]]],
    draw_sep: Callable[[], str],
    draw_upper: Callable[[], bool],
    draw_quote: Callable[[], str],
) -> str:
    first, rest = query
    parts = [first.upper() if draw_upper() else first]
    for kind, value in rest:
        parts.append(draw_sep())
        if kind == "word":
            parts.append(value.upper() if draw_upper() else value)
        elif kind == "string":
            parts.append(_string(value, draw_quote()))
        elif kind == "ident":
            parts.append("`" + value.replace("`", "``") + "`")
        else:
            parts.append(value)
    return draw_sep() + "".join(parts) + draw_sep()


def _plain(query: tuple[str, list[tuple[str, str]]]) -> str:
    return _render(query, lambda: " ", lambda: False, lambda: "'")


@given(_query, st.data())
def test_comments_whitespace_case_and_quotes_never_change_the_normalised_text(
    query: tuple[str, list[tuple[str, str]]], data: st.DataObject
) -> None:
    normal = reuse_text(LexedScript.of(_plain(query)))
    assert normal is not None
    varied = _render(
        query,
        lambda: data.draw(st.sampled_from(_SEPARATORS)),
        lambda: data.draw(st.booleans()),
        lambda: data.draw(st.sampled_from(["'", '"'])),
    )
    assert reuse_text(LexedScript.of(varied)) == normal
    assert reuse_text(LexedScript.of(normal)) == normal  # the normal form reads as itself


@given(_query, st.data())
def test_a_different_string_literal_always_changes_the_normalised_text(
    query: tuple[str, list[tuple[str, str]]], data: st.DataObject
) -> None:
    first, rest = query
    index = data.draw(st.integers(0, len(rest)))
    value = data.draw(st.text(_STRING_CHARS, max_size=6))
    other = data.draw(st.text(_STRING_CHARS, max_size=6).filter(lambda v: v != value))
    with_value = (first, [*rest[:index], ("string", value), *rest[index:]])
    with_other = (first, [*rest[:index], ("string", other), *rest[index:]])
    assert reuse_text(LexedScript.of(_plain(with_value))) != reuse_text(
        LexedScript.of(_plain(with_other))
    )


@given(_query, st.data())
def test_generated_scripts_split_and_lex_as_before(
    query: tuple[str, list[tuple[str, str]]], data: st.DataObject
) -> None:
    statements = [
        _render(
            query,
            lambda: data.draw(st.sampled_from(_SEPARATORS)),
            lambda: data.draw(st.booleans()),
            lambda: data.draw(st.sampled_from(["'", '"'])),
        )
        for _ in range(data.draw(st.integers(1, 3)))
    ]
    text = ";".join(statements) + data.draw(st.sampled_from(["", ";", "; -- end"]))
    script = LexedScript.of(text)
    assert [s.statement for s in script.statements] == split_as_before(text)
    assert all(list(s.lexemes) == lex(s.text) for s in script.statements)


# -- the submit path lexes once ----------------------------------------------------------------


@pytest.fixture
def lex_calls(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[str]]:
    calls: list[str] = []

    def counting(text: str) -> list[Lexeme]:
        calls.append(text)
        return lex(text)

    monkeypatch.setattr(lexer, "lex", counting)
    yield calls


@pytest.fixture
def bob(tmp_path: Path, sqlite_store: Store) -> tuple[Users, Principal]:
    PasswordFile(tmp_path / "passwords").set("bob", "bob-pw")
    (tmp_path / "access.yaml").write_text("rules:\n  - {users: [bob], allow: [sql, streams]}\n")
    settings = Settings(
        home=tmp_path,
        auth="password",
        auth_password_file=tmp_path / "passwords",
        access_file=tmp_path / "access.yaml",
    )
    users = Users(settings, sqlite_store)
    return users, users.principal(Identity("bob", via="password"))


SUBMITTED = (
    "SET spark.sql.shuffle.partitions = 4;\n"
    "CREATE STREAM r USING rate;\n"
    "SAVE STREAM r TO console;\n"
    "SELECT 'stream' FROM t"
)


def test_sql_needs_of_a_lexed_script_lexes_nothing_more(lex_calls: list[str]) -> None:
    script = LexedScript.of(SUBMITTED)
    needs = sql_needs(script)
    assert (needs.streams, needs.settings) == (True, ("spark.sql.shuffle.partitions",))
    assert reuse_text(script) is None
    assert lex_calls == [SUBMITTED]
    assert sql_needs(SUBMITTED) == needs  # from text: lexed once too
    assert lex_calls == [SUBMITTED, SUBMITTED]


def test_the_users_checks_lex_nothing_more_given_the_script(
    lex_calls: list[str], bob: tuple[Users, Principal]
) -> None:
    users, user = bob
    script = LexedScript.of(SUBMITTED)
    users.require_statement(user, StatementKind.SQL, SUBMITTED, target="session:1", script=script)
    users.check_sql(user, SUBMITTED, script=script)
    users.check_sql_settings(user, SUBMITTED, script=script)
    assert lex_calls == [SUBMITTED]
    denied = LexedScript.of("SET spark.master = yarn")
    with pytest.raises(DeniedSetting, match=r"spark\.master"):
        users.check_sql(user, denied.text, script=denied)
    with pytest.raises(ValueError, match="not of the SQL text"):
        users.check_sql(user, "SELECT 1", script=script)
    assert len(lex_calls) == 2


def test_the_users_checks_read_the_script_as_they_read_the_text(
    bob: tuple[Users, Principal],
) -> None:
    users, user = bob
    without_streams = replace(user, rights=frozenset({"sql"}))
    text = "SELECT 1; STOP STREAM q"
    with pytest.raises(MissingRight, match="'streams'"):
        users.check_sql(without_streams, text)
    with pytest.raises(MissingRight, match="'streams'"):
        users.check_sql(without_streams, text, script=LexedScript.of(text))
