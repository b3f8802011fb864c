"""What SQL asks of the access rules: stream statements and SET keys, found in every
statement of a script and never inside strings or comments."""

from __future__ import annotations

import pytest

from sparkgate.auth.sql import sql_needs
from sparkgate.sql.errors import SqlSyntaxError


@pytest.mark.parametrize(
    ("text", "streams", "settings"),
    [
        ("SELECT 1", False, ()),
        ("SET spark.master=yarn", False, ("spark.master",)),
        ("set `spark.hadoop.a` = 'b'", False, ("spark.hadoop.a",)),
        (
            "SELECT 1; SET spark.sql.shuffle.partitions = 4",
            False,
            ("spark.sql.shuffle.partitions",),
        ),
        ("SET", False, ()),
        ("SET -v", False, ()),
        ("SET spark.master", False, ()),  # a read
        ("SET VAR x = 1", False, ()),
        ("SET TIME ZONE 'UTC'", False, ()),
        ("SELECT 'SET spark.master=x' AS s", False, ()),
        ("-- SET spark.master=x\nSELECT 1", False, ()),
        ("CREATE STREAM r USING rate", True, ()),
        ("create or replace stream r using rate", True, ()),
        ("SAVE STREAM v TO noop", True, ()),
        ("STOP STREAM q", True, ()),
        ("SELECT 1 AS stream", False, ()),
    ],
)
def test_sql_needs(text: str, streams: bool, settings: tuple[str, ...]) -> None:
    needs = sql_needs(text)
    assert needs.streams is streams
    assert needs.settings == settings


def test_text_that_cannot_be_read_is_refused_not_waved_through() -> None:
    with pytest.raises(SqlSyntaxError):
        sql_needs("SELECT 'unterminated; SET spark.master=x")
