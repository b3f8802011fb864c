"""How a recognised CTAS/RTAS runs: staged, plain, refused or skipped (pure decisions)."""

from __future__ import annotations

from typing import Any

import pytest

from sparkgate.tables.plan import (
    ExistingTable,
    Plain,
    Refuse,
    SessionFacts,
    Skip,
    SparkField,
    StageCreate,
    StageReplace,
    Target,
    column_difference,
    location_conflict,
    plan,
    resolve_target,
)
from sparkgate.tables.statement import CtasStatement, recognise

SESSION = SessionFacts(
    atomic=True,
    current_catalog="spark_catalog",
    current_database="sales",
    default_provider="parquet",
    hive_by_default=False,
)
DB = "file:/warehouse/sales.db"
TABLE = ExistingTable(type="MANAGED", provider="parquet", location=f"{DB}/t")


def ctas(sql: str) -> CtasStatement:
    recognised = recognise(sql)
    assert isinstance(recognised, CtasStatement)
    return recognised


def decide(
    sql: str,
    existing: ExistingTable | None = None,
    session: SessionFacts = SESSION,
    database_location: str | None = DB,
) -> Any:
    statement = ctas(sql)
    target = resolve_target(statement, session)
    assert isinstance(target, Target), target
    return plan(statement, session, target, database_location, existing)


def test_names_resolve_in_the_session_catalog() -> None:
    assert resolve_target(ctas("CREATE TABLE T AS SELECT 1"), SESSION) == Target("sales", "t")
    assert resolve_target(ctas("CREATE TABLE Db.T AS SELECT 1"), SESSION) == Target("db", "t")
    qualified = ctas("CREATE TABLE spark_catalog.db.t AS SELECT 1")
    assert resolve_target(qualified, SESSION) == Target("db", "t")
    assert Target("db", "t").quoted == "`spark_catalog`.`db`.`t`"


@pytest.mark.parametrize(
    ("sql", "session", "why"),
    [
        ("CREATE TABLE other.db.t AS SELECT 1", SESSION, "catalog other"),
        (
            "CREATE TABLE t AS SELECT 1",
            SessionFacts(False, "lake", "db", "parquet", False),
            "catalog lake",
        ),
        ("CREATE TABLE `a b` AS SELECT 1", SESSION, "name the session catalog does not accept"),
    ],
)
def test_targets_outside_the_session_catalog_run_plain(
    sql: str, session: SessionFacts, why: str
) -> None:
    resolved = resolve_target(ctas(sql), session)
    assert isinstance(resolved, Plain) and why in resolved.reason


def test_a_new_table_is_staged() -> None:
    assert decide("CREATE TABLE t USING orc AS SELECT 1") == StageCreate(
        Target("sales", "t"), "orc", DB
    )
    default = decide("CREATE OR REPLACE TABLE t AS SELECT 1")
    assert default == StageCreate(Target("sales", "t"), "parquet", DB)


def test_create_on_an_existing_name_fails_as_spark_does() -> None:
    assert decide("CREATE TABLE t AS SELECT 1", TABLE) == Refuse(
        "TABLE_OR_VIEW_ALREADY_EXISTS", {"relationName": "`spark_catalog`.`sales`.`t`"}
    )
    view = ExistingTable(type="VIEW", provider=None, location=None)
    assert isinstance(decide("CREATE TABLE t AS SELECT 1", view), Refuse)


def test_if_not_exists_on_an_existing_name_does_nothing() -> None:
    assert decide("CREATE TABLE IF NOT EXISTS t AS SELECT 1", TABLE) == Skip(Target("sales", "t"))


def test_replace_of_a_missing_table_fails_as_spark_does_for_v2_tables() -> None:
    refused = decide("REPLACE TABLE t USING parquet AS SELECT 1")
    assert isinstance(refused, Refuse) and refused.condition == "TABLE_OR_VIEW_NOT_FOUND"
    assert refused.parameters["relationName"] == "`spark_catalog`.`sales`.`t`"
    assert "`spark_catalog`.`sales`" in refused.parameters["searchPath"]


def test_replace_of_a_table_of_the_same_shape_is_staged() -> None:
    csv = ExistingTable(
        type="MANAGED",
        provider="csv",
        location=f"{DB}/t",
        storage_properties={"header": "true"},
        properties={"team": "a"},
    )
    decision = decide("REPLACE TABLE t USING csv OPTIONS (HEADER 'true') AS SELECT 1", csv)
    assert decision == StageReplace(Target("sales", "t"), "csv", DB, csv)


@pytest.mark.parametrize(
    ("sql", "existing", "why"),
    [
        ("REPLACE TABLE t USING orc AS SELECT 1", TABLE, "the replacement would be orc"),
        (
            "REPLACE TABLE t USING parquet PARTITIONED BY (p) AS SELECT 1 AS p",
            TABLE,
            "partitioned",
        ),
        (
            "REPLACE TABLE t USING parquet AS SELECT 1 AS p",
            ExistingTable("MANAGED", "parquet", f"{DB}/t", partition_columns=("p",)),
            "partitioned",
        ),
        (
            "REPLACE TABLE t USING parquet AS SELECT 1 AS p",
            ExistingTable("MANAGED", "parquet", f"{DB}/t", bucketed=True),
            "bucketed",
        ),
        (
            "CREATE OR REPLACE TABLE t USING parquet AS SELECT 1",
            ExistingTable("EXTERNAL", "parquet", "file:/data/t"),
            "external",
        ),
        ("REPLACE TABLE t AS SELECT 1", ExistingTable("VIEW", None, None), "is a view"),
        (
            "REPLACE TABLE t USING parquet OPTIONS (compression 'zstd') AS SELECT 1",
            TABLE,
            "OPTIONS differ",
        ),
        (
            "REPLACE TABLE t USING parquet AS SELECT 1",
            ExistingTable("MANAGED", "parquet", "hdfs://nn/warehouse/t"),
            "not a local filesystem",
        ),
        ("CREATE OR REPLACE TABLE IF NOT EXISTS t AS SELECT 1", TABLE, "IF NOT EXISTS"),
    ],
)
def test_what_one_location_switch_cannot_replace_runs_plain(
    sql: str, existing: ExistingTable, why: str
) -> None:
    decision = decide(sql, existing)
    assert isinstance(decision, Plain) and why in decision.reason, decision


@pytest.mark.parametrize(
    ("sql", "why"),
    [
        ("CREATE TABLE t STORED AS PARQUET AS SELECT 1", "Hive format"),
        ("CREATE TABLE t USING jdbc AS SELECT 1", "provider jdbc"),
        ("CREATE TABLE t USING parquet LOCATION '/x' AS SELECT 1", "LOCATION"),
    ],
)
def test_what_cannot_be_staged_runs_plain(sql: str, why: str) -> None:
    decision = decide(sql)
    assert isinstance(decision, Plain) and why in decision.reason


def test_hive_by_default_runs_plain_unless_using_is_given() -> None:
    hive = SessionFacts(True, "spark_catalog", "sales", "parquet", hive_by_default=True)
    assert isinstance(decide("CREATE TABLE t AS SELECT 1", session=hive), Plain)
    assert isinstance(decide("CREATE TABLE t USING json AS SELECT 1", session=hive), StageCreate)


def test_turned_off_missing_database_and_remote_storage_run_plain() -> None:
    off = SessionFacts(False, "spark_catalog", "sales", "parquet", False, disabled_by="X=false")
    assert decide("CREATE TABLE t AS SELECT 1", session=off) == Plain(
        "atomic CTAS is turned off (X=false)"
    )
    missing = decide("CREATE TABLE t AS SELECT 1", database_location=None)
    assert isinstance(missing, Plain) and "not found" in missing.reason
    remote = decide("CREATE TABLE t AS SELECT 1", database_location="s3a://bucket/sales.db")
    assert isinstance(remote, Plain) and "not a local filesystem" in remote.reason


def test_location_conflict_is_sparks() -> None:
    assert location_conflict(Target("sales", "t"), f"{DB}/t") == Refuse(
        "LOCATION_ALREADY_EXISTS",
        {"identifier": "`spark_catalog`.`sales`.`t`", "location": f"'{DB}/t'"},
    )


def field(name: str, data_type: Any, nullable: bool = True) -> SparkField:
    return {"name": name, "type": data_type, "nullable": nullable, "metadata": {}}


def test_columns_must_match_up_to_nullability() -> None:
    array = {"type": "array", "elementType": "long", "containsNull": False}
    table = [field("id", "long"), field("tags", {**array, "containsNull": True})]
    same = [field("id", "long", nullable=False), field("tags", array)]
    assert column_difference(table, same) is None
    assert "differ" in (column_difference(table, [field("id", "long")]) or "")
    assert column_difference(table, [field("ID", "long"), field("tags", array)]) is not None
    assert column_difference(table, [field("id", "int"), field("tags", array)]) is not None


def test_existing_tables_are_read_from_describe_as_json() -> None:
    described = {
        "table_name": "o1",
        "columns": [{"name": "id", "type": {"name": "bigint"}, "nullable": True}],
        "num_buckets": 2,
        "bucket_columns": ["id"],
        "location": "file:/w/o1",
        "storage_properties": {"header": "true", "sep": ";"},
        "type": "MANAGED",
        "provider": "CSV",
        "comment": "cm",
        "table_properties": {"k": "v"},
    }
    assert ExistingTable.from_describe(described) == ExistingTable(
        type="MANAGED",
        provider="csv",
        location="file:/w/o1",
        bucketed=True,
        storage_properties={"header": "true", "sep": ";"},
        properties={"k": "v"},
        comment="cm",
    )
    view = ExistingTable.from_describe({"type": "VIEW", "view_text": "SELECT 1"})
    assert (view.type, view.provider, view.location) == ("VIEW", None, None)
