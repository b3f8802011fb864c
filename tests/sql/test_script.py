"""Durations and script splitting."""

from __future__ import annotations

import pytest

from sparkgate.sql.durations import format_duration, parse_duration, unit_seconds
from sparkgate.sql.errors import SqlSyntaxError
from sparkgate.sql.script import split_script


@pytest.mark.parametrize(
    ("text", "seconds"),
    [
        ("50s", 50.0),
        ("100ms", 0.1),
        ("250us", 0.00025),
        ("1m", 60.0),
        ("1min", 60.0),
        ("1h", 3600.0),
        ("1d", 86400.0),
        ("1.5s", 1.5),
        ("2H", 7200.0),
    ],
)
def test_durations_as_the_seed_writes_them(text: str, seconds: float) -> None:
    assert parse_duration(text) == pytest.approx(seconds)


@pytest.mark.parametrize("text", ["", "5", "s", "5 parsecs", "-1s", "1 s s", "5mins"])
def test_durations_that_are_not(text: str) -> None:
    with pytest.raises(ValueError, match="not a duration; write a number and a unit"):
        parse_duration(text)


def test_unit_words_and_formatting() -> None:
    assert unit_seconds("SECONDS") == 1.0 and unit_seconds("minute") == 60.0
    assert unit_seconds("ms") == 0.001 and unit_seconds("fortnight") is None
    assert [format_duration(s) for s in (1.0, 0.25, 120.0, 3600.0, 0.00025, 1.5)] == [
        "1s",
        "250ms",
        "2min",
        "1h",
        "250us",
        "1500ms",
    ]


# Shared with tests/sql/test_lexed.py.
SCRIPT = (
    "-- clicks\n"
    "CREATE STREAM r USING rate;  /* ; in a comment */ ;\n"
    "  CREATE TEMPORARY VIEW v AS SELECT ';' AS s, value FROM r ;\n"
    "SAVE STREAM v TO console"
)


def test_split_script_keeps_text_and_place_of_each_statement() -> None:
    script = SCRIPT
    parts = split_script(script)
    assert [p.text for p in parts] == [
        "CREATE STREAM r USING rate",
        "CREATE TEMPORARY VIEW v AS SELECT ';' AS s, value FROM r",
        "SAVE STREAM v TO console",
    ]
    assert [(p.number, p.line, p.position) for p in parts] == [(1, 2, 1), (2, 3, 3), (3, 4, 1)]
    assert all(script[p.offset :].startswith(p.text) for p in parts)


def test_split_script_of_nothing_and_of_unterminated_text() -> None:
    assert split_script("  ;; -- nothing\n") == []
    with pytest.raises(SqlSyntaxError) as caught:
        split_script("SELECT 1;\nSELECT 'oops")
    assert (caught.value.line, caught.value.position) == (2, 8)
