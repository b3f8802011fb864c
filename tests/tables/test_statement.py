"""Recognising CTAS/RTAS statements: what is read from the head, and what passes through."""

from __future__ import annotations

import pytest

from sparkgate.tables.statement import CtasKind, CtasStatement, PassThrough, TableName, recognise


def ctas(sql: str) -> CtasStatement:
    recognised = recognise(sql)
    assert isinstance(recognised, CtasStatement), recognised
    return recognised


def test_plain_create() -> None:
    sql = "CREATE TABLE sales USING parquet AS SELECT id FROM range(10)"
    statement = ctas(sql)
    assert statement.kind is CtasKind.CREATE
    assert statement.table == TableName(("sales",))
    assert statement.provider == "parquet" and not statement.if_not_exists
    assert statement.query == "SELECT id FROM range(10)"
    assert sql[statement.query_offset :] == statement.query
    assert sql[statement.clauses_offset :].startswith(" USING parquet AS")
    assert statement.blockers == ()


@pytest.mark.parametrize(
    ("sql", "kind", "if_not_exists"),
    [
        ("CREATE TABLE t AS SELECT 1", CtasKind.CREATE, False),
        ("create table if not exists t as select 1", CtasKind.CREATE, True),
        ("CREATE OR REPLACE TABLE t AS SELECT 1", CtasKind.CREATE_OR_REPLACE, False),
        ("REPLACE TABLE t AS SELECT 1", CtasKind.REPLACE, False),
        ("Replace Table t As Select 1", CtasKind.REPLACE, False),
    ],
)
def test_kinds(sql: str, kind: CtasKind, if_not_exists: bool) -> None:
    statement = ctas(sql)
    assert (statement.kind, statement.if_not_exists) == (kind, if_not_exists)
    assert kind.replaces is (kind is not CtasKind.CREATE)
    assert kind.creates is (kind is not CtasKind.REPLACE)


def test_every_clause_is_read() -> None:
    statement = ctas(
        "CREATE TABLE IF NOT EXISTS spark_catalog.db.t USING PARQUET "
        "PARTITIONED BY (p, q) OPTIONS ('compression'='snappy', mergeSchema true, k = 1) "
        "TBLPROPERTIES ('owner.team'='data', retention = '7d') COMMENT 'daily' "
        "AS SELECT 1 AS a, 2 AS p, 3 AS q"
    )
    assert statement.table == TableName(("spark_catalog", "db", "t"))
    assert (statement.table.catalog, statement.table.database, statement.table.name) == (
        "spark_catalog",
        "db",
        "t",
    )
    assert statement.provider == "parquet"
    assert statement.partition_columns == ("p", "q")
    assert statement.options == {"compression": "snappy", "mergeSchema": "true", "k": "1"}
    assert statement.properties == {"owner.team": "data", "retention": "7d"}
    assert statement.comment == "daily"
    assert statement.blockers == ()
    assert statement.query == "SELECT 1 AS a, 2 AS p, 3 AS q"


def test_bucketing_and_class_name_providers() -> None:
    statement = ctas(
        "CREATE TABLE t USING org.apache.spark.sql.parquet "
        "CLUSTERED BY (a) SORTED BY (a) INTO 4 BUCKETS AS SELECT 1 AS a"
    )
    assert statement.provider == "org.apache.spark.sql.parquet"
    assert statement.bucketed and statement.blockers == ()


def test_comments_odd_whitespace_and_quoted_names() -> None:
    sql = (
        "/* nightly */ create\tor  replace\n table\n  `my db` . `Daily Sales` -- target\n"
        "  using csv\n  options (header 'true')\n"
        "as\n-- the query\nwith q as (select 1 as `as`) select * from q;  \n"
    )
    statement = ctas(sql)
    assert statement.kind is CtasKind.CREATE_OR_REPLACE
    assert statement.table.parts == ("my db", "Daily Sales")
    assert statement.provider == "csv" and statement.options == {"header": "true"}
    assert statement.query == "with q as (select 1 as `as`) select * from q"
    assert sql[statement.query_offset : statement.query_offset + 4] == "with"


def test_as_inside_the_query_and_strings_is_not_the_separator() -> None:
    statement = ctas("CREATE TABLE t COMMENT 'made as a test' AS SELECT 'x' AS `as`, 1 AS y")
    assert statement.comment == "made as a test"
    assert statement.query == "SELECT 'x' AS `as`, 1 AS y"


@pytest.mark.parametrize(
    "query",
    [
        "(SELECT 1)",
        "VALUES (1), (2)",
        "FROM src SELECT a",
        "TABLE src",
        "WITH q AS (SELECT 1) TABLE q",
    ],
)
def test_every_query_form(query: str) -> None:
    assert ctas(f"CREATE TABLE t USING parquet AS {query}").query == query


@pytest.mark.parametrize(
    ("sql", "blocker"),
    [
        ("CREATE TABLE t STORED AS PARQUET AS SELECT 1", "Hive format"),
        ("CREATE TABLE t USING parquet LOCATION '/data/t' AS SELECT 1", "LOCATION"),
        ("CREATE EXTERNAL TABLE t USING parquet LOCATION '/x' AS SELECT 1", "EXTERNAL"),
        (
            "CREATE TABLE t ROW FORMAT DELIMITED FIELDS TERMINATED BY ',' AS SELECT 1",
            "Hive format",
        ),
        ("CREATE TABLE t USING parquet PARTITIONED BY (p INT) AS SELECT 1 AS p", "Hive-style"),
        ("CREATE TABLE t USING parquet CLUSTER BY (a) AS SELECT 1 AS a", "does not stage"),
    ],
)
def test_clauses_sparkgate_cannot_stage_are_named(sql: str, blocker: str) -> None:
    statement = ctas(sql)
    assert any(blocker in b for b in statement.blockers), statement.blockers


@pytest.mark.parametrize(
    ("sql", "why"),
    [
        ("SELECT 1", "not a CREATE/REPLACE TABLE"),
        ("CREATE VIEW v AS SELECT 1", "not a CREATE/REPLACE TABLE"),
        ("CREATE TEMPORARY VIEW v AS SELECT 1", "temporary"),
        ("CREATE TABLE t (a INT) USING parquet", "without a query"),
        ("CREATE TABLE t USING parquet", "without a query"),
        ("CREATE TABLE t (a INT) USING parquet AS SELECT 1", "column list"),
        ("CREATE TABLE t USING parquet AS SELECT 1; SELECT 2", "more than one statement"),
        ("CREATE TABLE t AS 'oops", "not tokenisable"),
        ("CREATE TABLE AS SELECT 1", "no table name"),
        ("INSERT INTO t SELECT 1", "not a CREATE/REPLACE TABLE"),
        ("", "not a CREATE/REPLACE TABLE"),
    ],
)
def test_everything_else_passes_through(sql: str, why: str) -> None:
    recognised = recognise(sql)
    assert isinstance(recognised, PassThrough), recognised
    assert why in recognised.reason


def test_trailing_semicolons_and_comments_are_not_part_of_the_query() -> None:
    assert ctas("CREATE TABLE t AS SELECT 1 ;;").query == "SELECT 1"
    assert ctas("CREATE TABLE t AS SELECT 1 -- done").query == "SELECT 1"
