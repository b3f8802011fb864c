"""Definitions: what may run before every start of a job, and which ones a job uses."""

from __future__ import annotations

import pytest

from sparkgate.jobs.definitions import (
    check_definition,
    read_definitions,
    used_definitions,
    words,
)
from sparkgate.jobs.files import SourceFile


@pytest.mark.parametrize(
    ("text", "kind", "name"),
    [
        ("CREATE STREAM clicks USING rate", "stream", "clicks"),
        ("create or replace stream Clicks using rate", "stream", "clicks"),
        ("CREATE TEMPORARY VIEW v AS SELECT 1", "view", "v"),
        ("CREATE OR REPLACE TEMP VIEW v AS SELECT 1", "view", "v"),
        ("CREATE TABLE IF NOT EXISTS db.Sales (a INT) USING parquet", "table", "sales"),
        ("CREATE TABLE IF NOT EXISTS `cat`.`db`.`my t` AS SELECT 1", "table", "my t"),
        ("CREATE DATABASE IF NOT EXISTS analytics", "database", "analytics"),
        ("CREATE OR REPLACE VIEW db.v AS SELECT 1", "view", "v"),
        ("CREATE VIEW IF NOT EXISTS v AS SELECT 1", "view", "v"),
        ("CREATE OR REPLACE FUNCTION f AS 'x.Y'", "function", "f"),
    ],
)
def test_definitions_and_what_they_define(text: str, kind: str, name: str) -> None:
    checked = check_definition(text)
    assert checked.problem is None
    assert checked.definition is not None
    assert (checked.definition.kind, checked.definition.name) == (kind, name)


@pytest.mark.parametrize(
    ("text", "says"),
    [
        ("CREATE TABLE t (a INT)", "write CREATE TABLE IF NOT EXISTS"),
        ("CREATE OR REPLACE TABLE t AS SELECT 1", "(and its data) every time a job starts"),
        ("CREATE VIEW v AS SELECT 1", "IF NOT EXISTS (or OR REPLACE)"),
        ("CREATE DATABASE d", "IF NOT EXISTS"),
        ("SAVE STREAM v TO console", "are not definitions"),
        ("SELECT 1", "not a definition"),
        ("INSERT INTO t SELECT 1", "not a definition"),
        ("CREATE STREAM j USING json OPTIONS ('path'='/x')", "needs its columns"),
        ("CREATE STREAM r USING", "Syntax error"),
        ("CREATE TABLE IF NOT EXISTS", "without a name"),
    ],
)
def test_what_cannot_run_before_every_start(text: str, says: str) -> None:
    checked = check_definition(text)
    assert checked.definition is None and checked.problem is not None
    assert says in checked.problem


def test_reading_files_reports_each_problem_at_its_line() -> None:
    good = SourceFile(
        "tables.sql",
        "CREATE STREAM clicks USING rate;\n\n-- sales\nCREATE TABLE IF NOT EXISTS sales (a INT);\n",
    )
    bad = SourceFile(
        "more.sql",
        "CREATE TEMPORARY VIEW v AS SELECT 1;\nCREATE TABLE x (a INT);\nCREATE STREAM clicks "
        "USING rate",
    )
    definitions, errors = read_definitions([good, bad])
    assert [(d.name, d.file, d.line) for d in definitions] == [
        ("clicks", "tables.sql", 1),
        ("sales", "tables.sql", 4),
        ("v", "more.sql", 1),
    ]
    assert [(e.file, e.field, e.line) for e in errors] == [
        ("more.sql", "statement 2", 2),
        ("more.sql", "statement 3", 3),
    ]
    assert "defined twice: also at tables.sql:1" in errors[1].message


def test_an_unreadable_or_empty_file() -> None:
    _, errors = read_definitions(
        [SourceFile("a.sql", "CREATE STREAM 'x"), SourceFile("b.sql", " ")]
    )
    assert [(e.file, e.line) for e in errors] == [("a.sql", 1), ("b.sql", None)]


def test_a_job_uses_what_it_names_and_what_those_name() -> None:
    definitions, errors = read_definitions(
        [
            SourceFile(
                "defs.sql",
                "CREATE STREAM raw USING rate;\n"
                "CREATE TEMPORARY VIEW evens AS SELECT * FROM raw WHERE value % 2 = 0;\n"
                "CREATE STREAM other USING rate;\n"
                "CREATE DATABASE IF NOT EXISTS analytics;\n"
                "CREATE TABLE IF NOT EXISTS `analytics`.`My Table` (a INT)",
            )
        ]
    )
    assert not errors
    used = used_definitions(definitions, ["SELECT value FROM EVENS", "analytics.t"])
    assert [d.name for d in used] == ["raw", "evens", "analytics"]  # in file order
    assert [d.name for d in used_definitions(definitions, ["x = spark.table('other')"])] == [
        "other"
    ]
    # the table's definition names its database: the database is made first
    assert [d.name for d in used_definitions(definitions, ["SELECT * FROM `My Table`"])] == [
        "analytics",
        "my table",
    ]
    assert used_definitions(definitions, ["SELECT 1"]) == []


def test_words() -> None:
    assert words("SELECT `a``b`, c_1 FROM Db.T") == {"select", "a`b", "c_1", "from", "db", "t"}
