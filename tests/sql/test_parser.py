"""The SQL extensions' parser: every clause, case-insensitive keywords, errors that point at the
position and say what was expected, and everything else passed through untouched."""

from __future__ import annotations

import pytest

from sparkgate.sql.errors import SqlSyntaxError
from sparkgate.sql.parser import parse
from sparkgate.sql.statements import (
    Column,
    CreateStream,
    OutputMode,
    PassThrough,
    SaveStream,
    StopStream,
)


def save(text: str) -> SaveStream:
    parsed = parse(text)
    assert isinstance(parsed, SaveStream), parsed
    return parsed


def create(text: str) -> CreateStream:
    parsed = parse(text)
    assert isinstance(parsed, CreateStream), parsed
    return parsed


def syntax_error(text: str) -> SqlSyntaxError:
    with pytest.raises(SqlSyntaxError) as caught:
        parse(text)
    return caught.value


# Shared with tests/sql/test_lexed.py, which reads the same texts through a LexedScript.
PASS_THROUGH = [
    "SELECT 1",
    "select * from stream_events",  # mentions "stream", is not ours
    "CREATE TABLE stream (a INT) USING parquet",
    "CREATE STREAMING TABLE t AS SELECT 1",
    "CREATE TEMPORARY VIEW v AS SELECT 'SAVE STREAM x TO console'",
    "-- SAVE STREAM in a comment\nSELECT 1",
    "INSERT INTO t VALUES ('unterminated stream",  # Spark's to report, not ours
    "",
]


@pytest.mark.parametrize("text", PASS_THROUGH)
def test_anything_else_passes_through_untouched(text: str) -> None:
    assert parse(text) == PassThrough(text)


def test_save_stream_with_every_clause() -> None:
    parsed = save(
        "SAVE STREAM db.clicks TO Parquet IDENTIFIED BY clicks_archive TRIGGER 5 SECONDS "
        "OUTPUT MODE APPEND PARTITIONED ON (day, hour) "
        "OPTIONS ('path'='/data/clicks', retry.max.attempts = 3, 'compression' 'zstd', "
        "flag true, ratio 0.5)"
    )
    assert parsed.view == "db.clicks"
    assert parsed.provider == "parquet"
    assert parsed.query_name == "clicks_archive" and parsed.name == "clicks_archive"
    assert parsed.trigger is not None and parsed.trigger.seconds == 5.0
    assert parsed.trigger.spark_interval == "5000 milliseconds"
    assert parsed.output_mode is OutputMode.APPEND
    assert parsed.partitioned_on == ("day", "hour")
    assert [(o.key, o.value) for o in parsed.options] == [
        ("path", "/data/clicks"),
        ("retry.max.attempts", "3"),
        ("compression", "zstd"),
        ("flag", "true"),
        ("ratio", "0.5"),
    ]


def test_keywords_are_case_insensitive_and_clauses_come_in_any_order() -> None:
    parsed = save(
        "save stream v to console options ('numRows'='5') output mode Update "
        "trigger 1 minute identified by q;"
    )
    assert parsed.provider == "console"
    assert parsed.output_mode is OutputMode.UPDATE
    assert parsed.trigger is not None and parsed.trigger.seconds == 60.0
    assert parsed.name == "q"


def test_minimal_save_stream_names_the_query_after_its_view() -> None:
    parsed = save("SAVE STREAM foo TO CONSOLE")
    assert (parsed.view, parsed.provider, parsed.name) == ("foo", "console", "foo")
    assert (parsed.trigger, parsed.output_mode, parsed.partitioned_on, parsed.options) == (
        None,
        None,
        (),
        (),
    )
    assert save("SAVE STREAM analytics.foo TO json OPTIONS ('path'='/x')").name == "foo"


def test_quoted_names_keep_their_quotes_for_spark() -> None:
    parsed = save("SAVE STREAM `my db`.`odd name` TO console IDENTIFIED BY `q-1`")
    assert parsed.view == "`my db`.`odd name`"
    assert parsed.name == "q-1"


def test_to_table_names_the_table() -> None:
    parsed = save("SAVE STREAM v TO TABLE warehouse.events PARTITIONED BY (day)")
    assert (parsed.provider, parsed.table, parsed.partitioned_on) == (
        "table",
        "warehouse.events",
        ("day",),
    )


TRIGGERS = [  # shared with tests/sql/test_lexed.py
    ("TRIGGER 5 SECONDS", 5.0),
    ("TRIGGER 1 SECOND", 1.0),
    ("TRIGGER 100 MILLISECONDS", 0.1),
    ("TRIGGER 250 MILLISECOND", 0.25),
    ("TRIGGER 2 HOURS", 7200.0),
    ("TRIGGER 5 MINUTES", 300.0),
    ("TRIGGER 1 DAY", 86400.0),
    ("TRIGGER 50s", 50.0),
    ("TRIGGER 100ms", 0.1),
    ("TRIGGER 250us", 0.00025),
    ("TRIGGER 1m", 60.0),
    ("TRIGGER 1min", 60.0),
    ("TRIGGER 1h", 3600.0),
    ("TRIGGER 1d", 86400.0),
    ("TRIGGER 1.5 s", 1.5),
    ("TRIGGER INTERVAL 10 SECONDS", 10.0),
    ("TRIGGER '30 seconds'", 30.0),
]


@pytest.mark.parametrize(("trigger", "seconds"), TRIGGERS)
def test_trigger_units(trigger: str, seconds: float) -> None:
    parsed = save(f"SAVE STREAM v TO console {trigger}")
    assert parsed.trigger is not None
    assert parsed.trigger.seconds == pytest.approx(seconds)


def test_create_stream_with_columns_and_options() -> None:
    parsed = create(
        "CREATE STREAM events (id BIGINT, payload MAP<STRING, ARRAY<INT>>, "
        "amount DECIMAL(10, 2) NOT NULL COMMENT 'in, euros') "
        "USING JSON OPTIONS ('path'='/in', 'maxFilesPerTrigger'='10')"
    )
    assert parsed.name == "events" and parsed.provider == "json" and parsed.table is None
    assert parsed.columns == (
        Column("id", "BIGINT"),
        Column("payload", "MAP<STRING, ARRAY<INT>>"),
        Column("amount", "DECIMAL(10, 2) NOT NULL COMMENT 'in, euros'"),
    )
    assert parsed.schema_ddl == (
        "`id` BIGINT, `payload` MAP<STRING, ARRAY<INT>>, "
        "`amount` DECIMAL(10, 2) NOT NULL COMMENT 'in, euros'"
    )
    assert parsed.option("MAXFILESPERTRIGGER") is not None
    assert not parsed.or_replace


def test_create_stream_forms() -> None:
    rate = create("create or replace stream r using rate options (rowsPerSecond 10)")
    assert (rate.provider, rate.columns, rate.or_replace) == ("rate", None, True)
    table = create("CREATE STREAM s FROM TABLE sales.orders OPTIONS ('maxFilesPerTrigger'='1')")
    assert (table.provider, table.table) == (None, "sales.orders")
    assert [o.key for o in table.options] == ["maxFilesPerTrigger"]


def test_stop_stream() -> None:
    assert parse("STOP STREAM clicks_archive") == StopStream(
        "STOP STREAM clicks_archive", "clicks_archive"
    )


def test_comments_and_a_trailing_semicolon_are_fine() -> None:
    parsed = save("/* archive */ SAVE STREAM v -- the view\n TO console ;")
    assert parsed.provider == "console"


SYNTAX_ERRORS = [  # text, line, position, found, expected; shared with tests/sql/test_lexed.py
    ("SAVE STREAM v TOO console", 1, 15, "TOO", "TO"),
    ("SAVE STREAM", 1, 12, None, "the name of a streaming view or table"),
    (
        "SAVE STREAM v TO console extra",
        1,
        26,
        "extra",
        "IDENTIFIED BY, TRIGGER, OUTPUT MODE, PARTITIONED ON, OPTIONS or the end of the statement",
    ),
    ("SAVE STREAM v\nTO console\nOUTPUT MODE sideways", 3, 13, "sideways", None),
    ("SAVE STREAM v TO console TRIGGER 5 parsecs", 1, 36, "parsecs", None),
    ("SAVE STREAM v TO console TRIGGER soon", 1, 34, "soon", None),
    ("SAVE STREAM v TO console PARTITIONED ON a", 1, 41, "a", "'('"),
    ("SAVE STREAM v TO console OPTIONS ('a'=)", 1, 39, ")", None),
    ("SAVE STREAM v TO console IDENTIFIED q", 1, 37, "q", "BY"),
    ("SAVE STREAM v TO TABLE", 1, 23, None, "the name of the table to write to"),
    ("CREATE STREAM s.x USING rate", 1, 16, ".", None),
    ("CREATE STREAM s (a int,) USING rate", 1, 24, ")", "a column name"),
    ("CREATE STREAM s (a) USING rate", 1, 19, ")", "a type for column a"),
    ("CREATE STREAM s (a int)", 1, 24, None, "USING"),
    ("CREATE STREAM s", 1, 16, None, "USING, FROM TABLE or a column list"),
    ("CREATE OR REPLACE STREAM", 1, 25, None, "the stream's name"),
    ("STOP STREAM", 1, 12, None, "the name of a streaming query"),
]


@pytest.mark.parametrize(("text", "line", "position", "found", "expected"), SYNTAX_ERRORS)
def test_syntax_errors_point_at_the_position_and_say_what_was_expected(
    text: str, line: int, position: int, found: str | None, expected: str | None
) -> None:
    error = syntax_error(text)
    assert (error.line, error.position) == (line, position), str(error)
    assert error.params["found"] == found
    if expected is not None:
        assert error.params["expected"] == expected
        assert f"expected {expected}" in error.message
    assert error.code == "PARSE_SYNTAX_ERROR"
    assert str(error).endswith(f"(line {line}, position {position})")


def test_a_clause_given_twice_is_an_error() -> None:
    error = syntax_error("SAVE STREAM v TO console TRIGGER 1s OUTPUT MODE append TRIGGER 2s")
    assert "TRIGGER is given twice" in error.message
    assert (error.line, error.position) == (1, 56)


def test_an_option_given_twice_is_an_error_whatever_its_case() -> None:
    error = syntax_error("SAVE STREAM v TO console OPTIONS ('path'='a', 'PATH'='b')")
    assert "option 'PATH' is given twice" in error.message
    assert error.position == 47


def test_unterminated_strings_and_comments_are_located() -> None:
    error = syntax_error("SAVE STREAM v TO console OPTIONS ('path'='/x)")
    assert (error.line, error.position) == (1, 42)
    assert "Unterminated string" in error.message
    error = syntax_error("SAVE STREAM v TO console /* never closed")
    assert "Unterminated comment" in error.message and error.position == 26
    error = syntax_error("SAVE STREAM `v TO console")
    assert "Unterminated identifier" in error.message and error.position == 13


def test_offsets_point_at_each_clause() -> None:
    text = "SAVE STREAM v TO json IDENTIFIED BY q OUTPUT MODE append OPTIONS ('path'='/x')"
    parsed = save(text)
    assert text[parsed.offsets["view"] :].startswith("v TO")
    assert text[parsed.offsets["provider"] :].startswith("json")
    assert text[parsed.offsets["query_name"] :].startswith("IDENTIFIED")
    assert text[parsed.offsets["output_mode"] :].startswith("OUTPUT")
    assert text[parsed.offsets["options"] :].startswith("OPTIONS")
    assert text[parsed.options[0].offset :].startswith("'path'")
