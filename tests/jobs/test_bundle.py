"""A deploy's files read as one: every job valid, or every problem where it was written."""

from __future__ import annotations

import textwrap

from sparkgate.jobs.bundle import load_bundle
from sparkgate.jobs.files import SourceFile
from sparkgate.stream_spec import RetryPolicy


def yaml(path: str, text: str) -> SourceFile:
    return SourceFile(path, textwrap.dedent(text))


CLICKS = yaml(
    "clicks.yaml",
    """\
    name: clicks
    target-table: analytics.clicks
    sql: SELECT value FROM raw
    """,
)
DEFINITIONS = SourceFile(
    "tables.sql",
    "CREATE STREAM raw USING rate;\nCREATE STREAM unused USING rate OPTIONS ('rowsPerSecond'='1')",
)


def test_valid_jobs_with_the_definitions_they_use() -> None:
    totals = yaml(
        "totals.yaml",
        "name: totals\nmode: batch\ntarget-table: t\nsql: SELECT count(*) FROM range(3)\n",
    )
    bundle = load_bundle([CLICKS, totals], None, [DEFINITIONS], RetryPolicy())
    assert bundle.ok, bundle.errors
    clicks, batch = bundle.jobs
    assert [d.name for d in clicks.definitions] == ["raw"] and batch.definitions == []
    declared = clicks.declared()
    assert (declared.name, declared.batch, declared.query) == (
        "clicks",
        False,
        clicks.fingerprints.query,
    )
    assert batch.declared().batch


def test_what_only_the_generated_script_shows_is_reported_at_the_field() -> None:
    complete = yaml(
        "complete.yaml",
        """\
        name: complete
        target-table: t1
        sql: SELECT value FROM raw
        output-mode: complete
        """,
    )
    partitioned = yaml(
        "partitioned.yaml",
        """\
        name: partitioned
        target-table: t2
        sources: [CREATE STREAM r USING rate]
        sql: SELECT value FROM r
        sink-options: {retry.typo: 1}
        """,
    )
    bundle = load_bundle([complete, partitioned], None, [DEFINITIONS], RetryPolicy())
    assert bundle.jobs == []
    found = {(e.file, e.field, e.line): e.message for e in bundle.errors}
    assert set(found) == {
        ("complete.yaml", "output-mode", 4),
        ("partitioned.yaml", "sink-options.retry.typo", 5),
    }
    assert "writes OUTPUT MODE APPEND only" in found[("complete.yaml", "output-mode", 4)]


def test_a_source_that_only_spark_sql_checks_is_reported_in_its_definitions_file() -> None:
    bad = SourceFile("tables.sql", "CREATE STREAM raw USING rate OPTIONS ('a'='1', 'a'='2')")
    bundle = load_bundle([CLICKS], None, [bad], RetryPolicy())
    [error] = bundle.errors
    assert (error.file, error.field, error.line) == ("tables.sql", "statement 1", 1)
    assert "given twice" in error.message


def test_one_table_one_writer() -> None:
    other = yaml(
        "other.yaml",
        "name: other\nmode: batch\ntarget-table: Analytics.Clicks\nsql: SELECT 1\n",
    )
    bundle = load_bundle([CLICKS, other], None, [DEFINITIONS], RetryPolicy())
    [error] = bundle.errors
    assert (error.file, error.field, error.line) == ("other.yaml", "target-table", 3)
    assert "also the target of job 'clicks' (clicks.yaml)" in error.message


def test_problems_in_every_file_are_listed_together() -> None:
    bad_template = SourceFile("template.yaml", "trigger: never\n")
    bad_definitions = SourceFile("tables.sql", "CREATE TABLE x (a INT)")
    bundle = load_bundle([CLICKS], bad_template, [bad_definitions], RetryPolicy())
    assert {e.file for e in bundle.errors} == {"template.yaml", "tables.sql"}
    assert bundle.jobs == []
