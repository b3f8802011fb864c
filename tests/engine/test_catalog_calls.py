"""Catalog statements (JDBC metadata calls) against a real Spark catalog: listings, patterns,
column layouts and types, and refused requests."""

from __future__ import annotations

import itertools
import json
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, cast

import pytest

from sparkgate.engine import catalog_calls
from sparkgate.engine.executors import EXECUTORS
from sparkgate.engine.jdbc_patterns import jdbc_pattern, spark_prefilter
from sparkgate.engine.jdbc_types import jdbc_type
from sparkgate.results import read_page
from sparkgate.runtime.contract import ExecutionContext
from sparkgate.runtime.failures import DescribedError
from sparkgate.runtime.session import OpenSession
from sparkgate.settings import Settings
from sparkgate.states import SessionKind, SessionState, StatementKind, StatementState
from sparkgate.store import Store
from sparkgate.store.records import SessionRecord, StatementRecord
from sparkgate.store.session_attributes import SessionAttributes

TABLE_COLUMNS = [
    "TABLE_CAT",
    "TABLE_SCHEM",
    "TABLE_NAME",
    "TABLE_TYPE",
    "REMARKS",
    "TYPE_CAT",
    "TYPE_SCHEM",
    "TYPE_NAME",
    "SELF_REFERENCING_COL_NAME",
    "REF_GENERATION",
]
COLUMN_COLUMNS = [
    ("TABLE_CAT", "string"),
    ("TABLE_SCHEM", "string"),
    ("TABLE_NAME", "string"),
    ("COLUMN_NAME", "string"),
    ("DATA_TYPE", "int"),
    ("TYPE_NAME", "string"),
    ("COLUMN_SIZE", "int"),
    ("BUFFER_LENGTH", "tinyint"),
    ("DECIMAL_DIGITS", "int"),
    ("NUM_PREC_RADIX", "int"),
    ("NULLABLE", "int"),
    ("REMARKS", "string"),
    ("COLUMN_DEF", "string"),
    ("SQL_DATA_TYPE", "int"),
    ("SQL_DATETIME_SUB", "int"),
    ("CHAR_OCTET_LENGTH", "int"),
    ("ORDINAL_POSITION", "int"),
    ("IS_NULLABLE", "string"),
    ("SCOPE_CATALOG", "string"),
    ("SCOPE_SCHEMA", "string"),
    ("SCOPE_TABLE", "string"),
    ("SOURCE_DATA_TYPE", "smallint"),
    ("IS_AUTO_INCREMENT", "string"),
]


@dataclass
class Answer:
    columns: list[tuple[str, str]]
    rows: list[list[Any]]

    def column(self, name: str) -> list[Any]:
        index = [n for n, _ in self.columns].index(name)
        return [row[index] for row in self.rows]


@dataclass
class Catalog:
    """The objects the module creates, and a way to send catalog requests as their user."""

    user: Any  # the user's SparkSession: its temporary views count, others' do not
    results: Path
    ids: Iterator[int]

    def context(self, code: str) -> ExecutionContext:
        now = time.time()
        session = SessionRecord(
            1, SessionKind.INTERACTIVE, None, SessionState.BUSY, 1, {}, None, None,
            SessionAttributes(), None,
            1, 1, now, now, None, now, now,
        )  # fmt: skip
        statement = StatementRecord(
            next(self.ids), 1, 0, StatementKind.CATALOG, code, StatementState.RUNNING, None,
            None, None, 0.0, 1, now, now, None, now,
        )  # fmt: skip
        return ExecutionContext(
            OpenSession(session, self.user),
            statement,
            Settings(home=self.results.parent, results_dir=self.results),
            cast(Store, None),  # catalog calls do not touch the store
            1,
            threading.Event(),
        )

    def call(self, request: dict[str, Any]) -> Answer:
        outcome = EXECUTORS[StatementKind.CATALOG](self.context(json.dumps(request)))
        assert outcome.result is not None
        assert outcome.result.path is not None
        rows, total = read_page(outcome.result.path, 0, 1000)
        assert outcome.result.row_count == total == len(rows)
        columns = [(c.name, c.type) for c in outcome.result.schema]
        return Answer(columns, rows)


pytestmark = pytest.mark.spark


@pytest.fixture(scope="module")
def catalog(spark: Any, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Catalog]:
    home = tmp_path_factory.mktemp("catalog-calls")
    user = spark.newSession()
    other = spark.newSession()
    statements = [
        "CREATE DATABASE cc_sales COMMENT 'sales'",
        "CREATE DATABASE cc_hr",
        "CREATE TABLE cc_sales.orders (order_id INT NOT NULL COMMENT 'the id', "
        "amount DECIMAL(10,2), big_amount DECIMAL(30,4), tags ARRAY<INT>, "
        "attrs MAP<STRING, INT>, point STRUCT<x: INT, y: DOUBLE>, "
        "info STRUCT<x: INT, `y z`: STRING>, placed TIMESTAMP, placed_ntz TIMESTAMP_NTZ, "
        "day DATE, paid BOOLEAN, tiny TINYINT, small SMALLINT, huge BIGINT, ratio FLOAT, "
        "score DOUBLE, raw BINARY, note STRING, region STRING) "
        "USING parquet PARTITIONED BY (region) COMMENT 'all orders'",
        f"CREATE TABLE cc_sales.order_items (item_id BIGINT, order_id INT) USING parquet "
        f"LOCATION '{home / 'order_items'}'",
        "CREATE VIEW cc_sales.v_orders COMMENT 'open orders' AS "
        "SELECT order_id, amount FROM cc_sales.orders",
        "CREATE TABLE cc_hr.people (person_id INT, name STRING) USING parquet",
        "CREATE FUNCTION cc_sales.cc_upper AS "
        "'org.apache.hadoop.hive.ql.udf.generic.GenericUDFUpper'",
        "CREATE GLOBAL TEMP VIEW cc_global AS SELECT 'x' AS label",
    ]
    for sql in statements:
        spark.sql(sql)
    user.sql(
        "CREATE TEMP VIEW cc_tmp AS SELECT 1 AS one, INTERVAL '1 2' DAY TO HOUR AS span, "
        "INTERVAL '1' MONTH AS months, NULL AS nothing"
    )
    other.sql("CREATE TEMP VIEW cc_not_mine AS SELECT 1 AS one")
    try:
        yield Catalog(user, home / "results", itertools.count(1))
    finally:
        spark.sql("DROP FUNCTION IF EXISTS cc_sales.cc_upper")
        spark.sql("DROP VIEW IF EXISTS global_temp.cc_global")
        spark.sql("DROP DATABASE IF EXISTS cc_sales CASCADE")
        spark.sql("DROP DATABASE IF EXISTS cc_hr CASCADE")


# -- pure parts -----------------------------------------------------------------------


@pytest.mark.parametrize(
    ("pattern", "name", "matched"),
    [
        ("cc_sales", "CC_SALES", True),  # case-insensitive, like Spark's catalog
        ("cc_s%", "cc_sales", True),
        ("cc_s%", "cc_hr", False),
        ("cc_hr", "ccXhr", True),  # _ is any one character
        ("cc\\_hr", "ccXhr", False),  # unless escaped
        ("cc\\_hr", "cc_hr", True),
        ("100\\%", "100%", True),
        ("100\\%", "1000", False),
        ("cc*", "cc_hr", True),  # * as in Spark's own patterns
        ("a.b", "axb", False),  # regex characters are literal
        ("a.b", "a.b", True),
    ],
)
def test_jdbc_patterns(pattern: str, name: str, matched: bool) -> None:
    compiled = jdbc_pattern(pattern)
    assert compiled is not None
    assert (compiled.fullmatch(name) is not None) is matched


@pytest.mark.parametrize("pattern", [None, "", "%", "*"])
def test_patterns_matching_everything(pattern: str | None) -> None:
    assert jdbc_pattern(pattern) is None
    assert spark_prefilter(pattern) is None


def test_spark_prefilter_only_widens() -> None:
    assert spark_prefilter("order_%") == "order*"
    assert spark_prefilter("date_add") == "date*add"
    assert spark_prefilter("a.b") is None  # Spark would read the dot as a regex
    assert spark_prefilter("a\\_b") is None


def test_type_names_follow_spark_sql() -> None:
    collated = jdbc_type({"name": "string", "collation": "UTF8_LCASE"})
    assert collated.name == "STRING COLLATE UTF8_LCASE"
    assert jdbc_type({"name": "char", "length": 3}) == catalog_calls.JdbcType(
        "CHAR(3)", catalog_calls.SqlTypes.CHAR, 3
    )
    assert jdbc_type({"name": "interval"}).size == 16  # a calendar interval
    nested = jdbc_type(
        {
            "name": "map",
            "key_type": {"name": "int"},
            "value_type": {
                "name": "struct",
                "fields": [
                    {"name": "a`b", "type": {"name": "decimal", "precision": 3, "scale": 1}}
                ],
            },
        }
    )
    assert nested.name == "MAP<INT, STRUCT<`a``b`: DECIMAL(3,1)>>"
    assert jdbc_type({"name": "geography(4326)"}) == catalog_calls.JdbcType(
        "GEOGRAPHY(4326)", catalog_calls.SqlTypes.OTHER
    )


# -- the calls ------------------------------------------------------------------------


def test_catalogs_are_none_as_in_spark_thrift_server(catalog: Catalog) -> None:
    answer = catalog.call({"call": "catalogs"})
    assert answer.columns == [("TABLE_CAT", "string")]
    assert answer.rows == []


def test_schemas_list_databases_and_global_temp(catalog: Catalog) -> None:
    everything = catalog.call({"call": "schemas"})
    assert everything.columns == [("TABLE_SCHEM", "string"), ("TABLE_CATALOG", "string")]
    names = everything.column("TABLE_SCHEM")
    assert {"cc_hr", "cc_sales", "default", "global_temp"} <= set(names)
    assert names == sorted(names)
    assert set(everything.column("TABLE_CATALOG")) == {""}
    for pattern, expected in [
        ("CC\\_%", ["cc_hr", "cc_sales"]),
        ("cc_s%", ["cc_sales"]),
        ("glob%", ["global_temp"]),
        ("nope", []),
    ]:
        answer = catalog.call({"call": "schemas", "catalog": None, "schema": pattern})
        assert answer.column("TABLE_SCHEM") == expected, pattern


def test_tables_with_types_comments_and_temporary_views(catalog: Catalog) -> None:
    answer = catalog.call({"call": "tables", "schema": "cc%"})
    assert answer.columns == [(name, "string") for name in TABLE_COLUMNS]
    # Ordered by type, schema, name; the session's temporary views have no schema.
    assert answer.rows == [
        ["", "cc_hr", "people", "TABLE", "", None, None, None, None, None],
        ["", "cc_sales", "order_items", "TABLE", "", None, None, None, None, None],
        ["", "cc_sales", "orders", "TABLE", "all orders", None, None, None, None, None],
        ["", None, "cc_tmp", "VIEW", "", None, None, None, None, None],
        ["", "cc_sales", "v_orders", "VIEW", "open orders", None, None, None, None, None],
    ]
    views = catalog.call({"call": "tables", "schema": "%", "table_types": ["view"]})
    names = [row[1:3] for row in views.rows]
    assert [None, "cc_tmp"] in names and ["global_temp", "cc_global"] in names
    assert ["cc_sales", "v_orders"] in names and [None, "cc_not_mine"] not in names
    assert set(views.column("TABLE_TYPE")) == {"VIEW"}

    def names_of(**request: Any) -> list[str]:
        return catalog.call({"call": "tables", **request}).column("TABLE_NAME")

    assert names_of(schema="cc_sales", table="ORDER%", table_types=["TABLE"]) == [
        "order_items",
        "orders",
    ]
    assert names_of(schema="cc_sales", table="order\\_items", table_types=[]) == ["order_items"]
    assert names_of(schema="global_temp", table="cc\\_%") == ["cc_tmp", "cc_global"]
    assert names_of(schema="cc_hr", table="nope") == []


def test_table_types(catalog: Catalog) -> None:
    answer = catalog.call({"call": "table_types"})
    assert answer.columns == [("TABLE_TYPE", "string")]
    assert answer.rows == [["TABLE"], ["VIEW"]]


def test_columns_layout_and_types(catalog: Catalog) -> None:
    answer = catalog.call({"call": "columns", "schema": "cc_sales", "table": "orders"})
    assert answer.columns == COLUMN_COLUMNS
    by_name = {row[3]: row for row in answer.rows}
    # name: DATA_TYPE, TYPE_NAME, COLUMN_SIZE, DECIMAL_DIGITS, NUM_PREC_RADIX
    expected = {
        "order_id": (4, "INT", 4, 0, 10),
        "amount": (3, "DECIMAL(10,2)", 8, 2, 10),
        "big_amount": (3, "DECIMAL(30,4)", 16, 4, 10),
        "tags": (2003, "ARRAY<INT>", None, None, None),
        "attrs": (2000, "MAP<STRING, INT>", None, None, None),
        "point": (2002, "STRUCT<x: INT, y: DOUBLE>", 12, None, None),
        "info": (2002, "STRUCT<x: INT, `y z`: STRING>", None, None, None),
        "placed": (93, "TIMESTAMP", 8, 6, None),
        "placed_ntz": (93, "TIMESTAMP_NTZ", 8, 6, None),
        "day": (91, "DATE", 4, None, None),
        "paid": (16, "BOOLEAN", 1, 0, None),
        "tiny": (-6, "TINYINT", 1, 0, 10),
        "small": (5, "SMALLINT", 2, 0, 10),
        "huge": (-5, "BIGINT", 8, 0, 10),
        "ratio": (6, "FLOAT", 4, 7, 10),
        "score": (8, "DOUBLE", 8, 15, 10),
        "raw": (-2, "BINARY", None, None, None),
        "note": (12, "STRING", None, None, None),
        "region": (12, "STRING", None, None, None),
    }
    assert list(by_name) == list(expected)  # table order, the partition column last
    for name, (code, type_name, size, digits, radix) in expected.items():
        row = by_name[name]
        assert (row[4], row[5], row[6], row[8], row[9]) == (code, type_name, size, digits, radix)
    assert by_name["order_id"] == [
        None, "cc_sales", "orders", "order_id", 4, "INT", 4, None, 0, 10, 1, "the id",
        None, None, None, None, 1, "YES", None, None, None, None, "NO",
    ]  # fmt: skip
    assert answer.column("ORDINAL_POSITION") == list(range(1, len(expected) + 1))  # 1-based
    assert set(answer.column("TABLE_CAT")) == {None}


def test_columns_of_views_across_tables_in_order(catalog: Catalog) -> None:
    answer = catalog.call({"call": "columns", "schema": "cc%", "column": "%\\_id"})
    assert [[*row[1:4], row[16]] for row in answer.rows] == [
        ["cc_hr", "people", "person_id", 1],
        ["cc_sales", "order_items", "item_id", 1],
        ["cc_sales", "order_items", "order_id", 2],
        ["cc_sales", "orders", "order_id", 1],
        ["cc_sales", "v_orders", "order_id", 1],
    ]
    temporary = catalog.call({"call": "columns", "schema": "global_temp", "table": "cc%"})
    assert [[*row[1:7], row[10], row[17]] for row in temporary.rows] == [
        [None, "cc_tmp", "one", 4, "INT", 4, 0, "NO"],
        [None, "cc_tmp", "span", 1111, "INTERVAL DAY TO HOUR", 8, 0, "NO"],
        [None, "cc_tmp", "months", 1111, "INTERVAL MONTH", 4, 0, "NO"],
        [None, "cc_tmp", "nothing", 0, "VOID", 1, 1, "YES"],
        ["global_temp", "cc_global", "label", 12, "STRING", None, 0, "NO"],
    ]


def test_columns_run_no_spark_job_per_table(spark: Any, catalog: Catalog) -> None:
    def jobs_for(group: str, request: dict[str, Any]) -> int:
        sc = spark.sparkContext
        sc.setJobGroup(group, "catalog call")
        try:
            catalog.call(request)
        finally:
            sc.setLocalProperty("spark.jobGroup.id", None)
        sc._jsc.sc().listenerBus().waitUntilEmpty()
        return len(sc.statusTracker().getJobIdsForGroup(group))

    one = jobs_for("cc-one-table", {"call": "columns", "schema": "cc%", "table": "people"})
    every = jobs_for("cc-all-tables", {"call": "columns", "schema": "cc%"})
    assert every == one


def test_type_info(catalog: Catalog) -> None:
    answer = catalog.call({"call": "type_info"})
    assert [name for name, _ in answer.columns] == [
        "TYPE_NAME", "DATA_TYPE", "PRECISION", "LITERAL_PREFIX", "LITERAL_SUFFIX",
        "CREATE_PARAMS", "NULLABLE", "CASE_SENSITIVE", "SEARCHABLE", "UNSIGNED_ATTRIBUTE",
        "FIXED_PREC_SCALE", "AUTO_INCREMENT", "LOCAL_TYPE_NAME", "MINIMUM_SCALE",
        "MAXIMUM_SCALE", "SQL_DATA_TYPE", "SQL_DATETIME_SUB", "NUM_PREC_RADIX",
    ]  # fmt: skip
    assert dict(answer.columns)["NULLABLE"] == "smallint"
    assert dict(answer.columns)["CASE_SENSITIVE"] == "boolean"
    assert answer.column("TYPE_NAME") == [
        "VOID", "BOOLEAN", "STRING", "BINARY", "TINYINT", "SMALLINT", "INT", "BIGINT",
        "FLOAT", "DOUBLE", "DECIMAL", "DATE", "TIMESTAMP", "ARRAY", "MAP", "STRUCT", "CHAR",
        "VARCHAR", "INTERVAL_YEAR_MONTH", "INTERVAL_DAY_TIME",
    ]  # fmt: skip
    rows = {row[0]: row for row in answer.rows}
    assert rows["INT"] == [
        "INT", 4, 10, None, None, None, 1, False, 3, False, False, False, None, 0, 0,
        None, None, 10,
    ]  # fmt: skip
    assert rows["STRING"][7] is True and rows["MAP"][8] == 0 and rows["DECIMAL"][2] == 38


def test_functions(catalog: Catalog) -> None:
    catalog.user.udf.register("cc_twice", lambda x: x * 2)
    answer = catalog.call({"call": "functions", "schema": "cc_sales", "function": "cc\\_%"})
    assert answer.columns == [
        ("FUNCTION_CAT", "string"),
        ("FUNCTION_SCHEM", "string"),
        ("FUNCTION_NAME", "string"),
        ("REMARKS", "string"),
        ("FUNCTION_TYPE", "int"),
        ("SPECIFIC_NAME", "string"),
    ]
    assert [[*row[:3], row[4]] for row in answer.rows] == [
        ["", "cc_sales", "cc_twice", 0],
        ["", "cc_sales", "cc_upper", 0],
    ]
    assert answer.rows[1][5] == "org.apache.hadoop.hive.ql.udf.generic.GenericUDFUpper"
    # Built-in and temporary functions are listed under every schema, as Spark does.
    hr = catalog.call({"call": "functions", "schema": "cc_hr", "function": "CC%"})
    assert hr.column("FUNCTION_NAME") == ["cc_twice"]
    upper = catalog.call({"call": "functions", "schema": "cc_%", "function": "upper"})
    assert [row[1:3] for row in upper.rows] == [["cc_hr", "upper"], ["cc_sales", "upper"]]
    assert "Returns `str` with all characters changed to uppercase" in upper.rows[0][3]


def test_keys_are_empty_with_jdbc_layouts(catalog: Catalog) -> None:
    keys = catalog.call({"call": "primary_keys", "schema": "cc_sales", "table": "orders"})
    assert keys.rows == [] and keys.columns[4] == ("KEY_SEQ", "int")
    references = catalog.call({"call": "cross_reference", "parent_table": "orders"})
    assert references.rows == [] and len(references.columns) == 14
    assert references.columns[9:11] == [("UPDATE_RULE", "smallint"), ("DELETE_RULE", "smallint")]
    assert references.columns[13] == ("DEFERRABILITY", "smallint")


@pytest.mark.parametrize(
    ("code", "says"),
    [
        ("SHOW TABLES", "is not JSON"),
        ("[1, 2]", "must be a JSON object"),
        ("{}", "Unknown catalog call null"),
        ('{"call": "procedures"}', 'Unknown catalog call "procedures"; use one of catalogs'),
        ('{"call": "tables", "schema": 5}', "Field 'schema' of a 'tables' call must be"),
        ('{"call": "tables", "table_types": "VIEW"}', "must be a list of strings or null"),
        ('{"call": "columns", "column": ["a"]}', "Field 'column' of a 'columns' call"),
    ],
)
def test_bad_requests_are_refused(catalog: Catalog, code: str, says: str) -> None:
    with pytest.raises(DescribedError) as raised:
        EXECUTORS[StatementKind.CATALOG](catalog.context(code))
    assert raised.value.recorded.to_json()["code"] == "INVALID_CATALOG_REQUEST"
    assert says in raised.value.recorded.to_json()["message"]


# -- the catalog page's calls (catalog_browse) -----------------------------------------


def test_browse_lists_each_schemas_tables_and_views(spark: Any, catalog: Catalog) -> None:
    spark.sql("CREATE DATABASE cc_empty")
    try:
        one = catalog.call({"call": "browse", "schema": "CC_SALES"})
        everything = catalog.call({"call": "browse"})
    finally:
        spark.sql("DROP DATABASE cc_empty")
    assert one.columns == [("schema", "string"), ("name", "string"), ("kind", "string")]
    assert one.rows == [
        ["cc_sales", "order_items", "table"],
        ["cc_sales", "orders", "table"],
        ["cc_sales", "v_orders", "view"],
    ]
    assert ["cc_hr", "people", "table"] in everything.rows
    assert ["cc_empty", None, None] in everything.rows  # a schema with nothing to see
    assert not [row for row in everything.rows if row[1] in ("cc_tmp", "cc_global")]


def test_describe_gives_the_columns_kind_and_first_rows(spark: Any, catalog: Catalog) -> None:
    spark.sql("INSERT INTO cc_hr.people SELECT id, concat('p', id) FROM range(30)")
    request = {"call": "describe", "schema": "cc_hr", "table": "people"}
    outcome = EXECUTORS[StatementKind.CATALOG](catalog.context(json.dumps(request)))
    table = outcome.output["table"]
    assert (table["schema"], table["table"], table["kind"]) == ("cc_hr", "people", "table")
    assert table["provider"] == "parquet" and table["location"].endswith("people")
    assert [(c["name"], c["type"]) for c in table["columns"]] == [
        ("person_id", "int"),
        ("name", "string"),
    ]
    assert "files" in table and "preview_error" not in table
    assert outcome.result is not None
    assert outcome.result.path is not None
    rows, total = read_page(outcome.result.path, 0, 100)
    assert total == 20 and all(name == f"p{pid}" for pid, name in rows)
    view = EXECUTORS[StatementKind.CATALOG](
        catalog.context(json.dumps({"call": "describe", "schema": "cc_sales", "table": "v_orders"}))
    )
    assert view.output["table"]["kind"] == "view" and "files" not in view.output["table"]
    assert "cc_sales.orders" in view.output["table"]["view_text"]


def test_a_preview_that_cannot_run_in_time_leaves_the_rest(
    spark: Any, catalog: Catalog, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Others' long tasks may hold every executor core: the page does not wait for them."""
    from sparkgate.engine import catalog_browse

    spark.sql(
        "CREATE VIEW cc_hr.slow AS SELECT id, "
        "java_method('java.lang.Thread', 'sleep', CAST(5000 AS BIGINT)) AS z FROM range(2)"
    )
    monkeypatch.setattr(catalog_browse, "PREVIEW_SECONDS", 0.5)
    try:
        started = time.monotonic()
        request = {"call": "describe", "schema": "cc_hr", "table": "slow"}
        outcome = EXECUTORS[StatementKind.CATALOG](catalog.context(json.dumps(request)))
        took = time.monotonic() - started
    finally:
        spark.sql("DROP VIEW cc_hr.slow")
    table = outcome.output["table"]
    assert table["preview_error"]["code"] == "PREVIEW_TIMED_OUT", table
    assert [c["name"] for c in table["columns"]] == ["id", "z"]
    assert outcome.result is None and took < 5, took


@pytest.mark.parametrize(
    ("request_", "code"),
    [
        ({"call": "describe", "schema": "cc_hr", "table": "nobody"}, "TABLE_OR_VIEW_NOT_FOUND"),
        ({"call": "describe", "schema": "cc_hr"}, "INVALID_CATALOG_REQUEST"),
        ({"call": "browse", "schema": "cc_nothing"}, "SCHEMA_NOT_FOUND"),
        # A name is only ever a name: quoted, whatever it holds.
        (
            {"call": "describe", "schema": "x`; DROP TABLE y; --", "table": "t"},
            "TABLE_OR_VIEW_NOT_FOUND",
        ),
    ],
)
def test_what_is_not_there_fails_as_absent(
    catalog: Catalog, request_: dict[str, Any], code: str
) -> None:
    from sparkgate.runtime.failures import recorded_failure

    with pytest.raises(Exception) as raised:
        EXECUTORS[StatementKind.CATALOG](catalog.context(json.dumps(request_)))
    assert recorded_failure(raised.value).to_json()["code"] == code
