"""Fingerprints ignore how a query is written, and only that."""

from __future__ import annotations

import textwrap

import pytest

from sparkgate.jobs.definitions import read_definitions, used_definitions
from sparkgate.jobs.files import SourceFile
from sparkgate.jobs.fingerprint import (
    canonical_python,
    canonical_sql,
    canonical_table,
    job_fingerprints,
)
from sparkgate.jobs.manifest import load_manifests
from sparkgate.store.jobs import Fingerprints

SAME_SQL = [
    (
        "SELECT a, b FROM src WHERE c = 1",
        "select  a,\n       b   -- the two columns\nFROM SRC\nwhere C=1",
    ),
    ("SELECT `a` FROM t", "SELECT a FROM T"),
    ("SELECT a FROM t /* why */", "SELECT a FROM t;"),
    (  # sqlglot cannot parse GROUP BY window(...): the token fallback still normalises
        "SELECT window(ts, '1 minute') AS w, count(*) FROM s GROUP BY window(ts, '1 minute')",
        "select WINDOW(`TS`,'1 minute') as W, COUNT(*)\nfrom s -- per minute\n"
        "group by window(ts, '1 minute')",
    ),
]
DIFFERENT_SQL = [
    ("SELECT a FROM t WHERE c = 1", "SELECT a FROM t WHERE c = 2"),
    ("SELECT a FROM t WHERE s = 'x'", "SELECT a FROM t WHERE s = 'X'"),  # literals keep case
    ("SELECT a, b FROM t", "SELECT b, a FROM t"),
    (
        "SELECT window(ts, '1 minute') FROM s GROUP BY window(ts, '1 minute')",
        "SELECT window(ts, '2 minutes') FROM s GROUP BY window(ts, '2 minutes')",
    ),
]


@pytest.mark.parametrize(("a", "b"), SAME_SQL)
def test_same_query_written_differently(a: str, b: str) -> None:
    assert canonical_sql(a) == canonical_sql(b)


@pytest.mark.parametrize(("a", "b"), DIFFERENT_SQL)
def test_different_queries_differ(a: str, b: str) -> None:
    assert canonical_sql(a) != canonical_sql(b)


def test_python_code_compared_by_syntax_tree() -> None:
    a = "df = spark.range(10)\noutput = df.filter('id > 3')\n"
    b = "# the output\ndf = spark.range( 10 )\n\noutput = df.filter(\n    'id > 3'\n)  # keep\n"
    c = "df = spark.range(10)\noutput = df.filter('id > 4')\n"
    assert canonical_python(a) == canonical_python(b) != canonical_python(c)


def test_text_sqlglot_only_half_reads_is_compared_as_tokens() -> None:
    # sqlglot keeps CREATE STREAM as an opaque command: the tokens still ignore layout
    assert canonical_sql("CREATE STREAM r USING rate OPTIONS ('rowsPerSecond'='5')") == (
        canonical_sql("create  stream R\n using RATE options ( 'rowsPerSecond' = '5' )")
    )
    assert canonical_sql("CREATE STREAM r USING rate OPTIONS ('rowsPerSecond'='5')") != (
        canonical_sql("CREATE STREAM r USING rate OPTIONS ('rowsPerSecond'='6')")
    )
    # WATERMARK: sqlglot cannot read it; different delays stay different
    assert canonical_sql(
        "SELECT * FROM s WATERMARK ts DELAY OF INTERVAL 10 SECONDS"
    ) != canonical_sql("SELECT * FROM s WATERMARK ts DELAY OF INTERVAL 20 SECONDS")


def test_canonical_table_names() -> None:
    assert canonical_table("Analytics.`Clicks`") == canonical_table("analytics.clicks")
    assert canonical_table("a.clicks") != canonical_table("b.clicks")


def job(text: str, *definitions: str) -> Fingerprints:
    loaded = load_manifests([SourceFile("m.yaml", textwrap.dedent(text))])
    assert loaded.ok, loaded.errors
    [one] = loaded.manifests
    shared, errors = read_definitions([SourceFile("d.sql", ";\n".join(definitions))])
    assert not errors or not definitions
    texts = [one.manifest.sql or "", one.manifest.code or "", *one.manifest.sources]
    return job_fingerprints(one.manifest, used_definitions(shared, texts))


BASE = """\
    name: clicks
    description: Clicks
    target-table: analytics.clicks
    sources: [CREATE STREAM raw USING rate]
    sql: SELECT value FROM raw WHERE value % 2 = 0
    trigger: 1s
    properties: {spark.sql.shuffle.partitions: 2}
    retry: {max-attempts: 3}
    """


@pytest.mark.parametrize(
    ("change", "kinds"),
    [
        (("value % 2 = 0", "VALUE % 2 = 0 -- evens"), set()),
        (("FROM raw WHERE", "from raw\n      where"), set()),
        (("analytics.clicks", "Analytics.Clicks"), set()),
        (("description: Clicks", "description: Clicks, by page"), {"supervision"}),
        (("max-attempts: 3", "max-attempts: 4"), {"supervision"}),
        (("partitions: 2", "partitions: 4"), {"config"}),
        (("trigger: 1s", "trigger: 2s"), {"config"}),
        (("trigger: 1s", "trigger: 1000ms"), set()),
        (("value % 2 = 0", "value % 3 = 0"), {"query"}),
        (("analytics.clicks", "analytics.clicks2"), {"query"}),
        (("USING rate]", "USING rate OPTIONS ('rowsPerSecond'='9')]"), {"query"}),
        (("trigger: 1s", "trigger: 1s\n    output-mode: update"), {"query"}),
        (("trigger: 1s", "trigger: 1s\n    metadata-columns: false"), {"query"}),
        (("trigger: 1s", "trigger: 1s\n    sink-options: {compression: zstd}"), {"config"}),
    ],
)
def test_what_each_change_touches(change: tuple[str, str], kinds: set[str]) -> None:
    before, after = job(BASE), job(BASE.replace(*change))
    changed = {
        k for k in ("query", "config", "supervision") if getattr(before, k) != getattr(after, k)
    }
    assert changed == kinds


def test_shared_definitions_count_only_for_the_jobs_that_use_them() -> None:
    reads = BASE.replace("    sources: [CREATE STREAM raw USING rate]\n", "")
    used = "CREATE STREAM raw USING rate"
    unused = "CREATE STREAM other USING rate"
    assert job(reads, used, unused) == job(reads, used, unused + " OPTIONS ('x'='1')")
    assert job(reads, used).query != job(reads, used + " OPTIONS ('x'='1')").query


def test_a_batch_job_ignores_what_it_does_not_use() -> None:
    batch = BASE.replace("name: clicks", "name: clicks\n    mode: batch").replace(
        "sources: [CREATE STREAM raw USING rate]",
        "sources: [CREATE TEMPORARY VIEW raw AS SELECT 1 AS value]",
    )
    assert job(batch) == job(batch.replace("trigger: 1s", "trigger: 9s"))
    assert job(batch) == job(batch.replace("max-attempts: 3", "max-attempts: 9"))
    assert job(batch).query != job(BASE).query


def test_code_is_compared_by_syntax_tree() -> None:
    code = BASE.replace(
        "sql: SELECT value FROM raw WHERE value % 2 = 0",
        "code: |\n      output = spark.table('raw')",
    )
    assert job(code) == job(code.replace("spark.table('raw')", "spark.table( 'raw' )  # all"))
    assert job(code).query != job(code.replace("'raw'", "'raw2'")).query
