"""The two-phase protocol on a real in-process Spark (its in-memory catalog), driven as the
engine drives it: handler, then the hooks on finish, failure or cancel. The end-to-end tests
(tests/e2e/test_atomic_ctas.py) run the same through real engines and the Hive metastore."""

from __future__ import annotations

import threading
import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from sparkgate.engine.sql_handlers import run_sql
from sparkgate.recorded import RecordedError
from sparkgate.runtime import hooks
from sparkgate.runtime.contract import ExecResult, ExecutionContext
from sparkgate.runtime.failures import recorded_failure
from sparkgate.runtime.session import OpenSession
from sparkgate.settings import Settings
from sparkgate.states import (
    EngineKind,
    SessionKind,
    StatementState,
    TableOperation,
    TableTxnState,
)
from sparkgate.store import Store
from sparkgate.store.records import TableTxnRecord
from sparkgate.tables.locations import local_path
from sparkgate.tables.recovery import recover
from tests.conftest import force_state

pytestmark = pytest.mark.spark


@dataclass
class Ran:
    statement_id: int
    outcome: ExecResult | BaseException
    txns: list[TableTxnRecord]

    @property
    def error(self) -> dict[str, Any]:
        assert isinstance(self.outcome, BaseException), self.outcome
        return recorded_failure(self.outcome).to_json()


class Harness:
    def __init__(self, spark: Any, store: Store, settings: Settings, database: str) -> None:
        self.spark = spark
        self.store = store
        self.settings = settings
        self.database = database
        self.session = store.sessions.add(SessionKind.INTERACTIVE, now=time.time())
        self.open_session = OpenSession(self.session, spark)

    def run(
        self, sql: str, *, cancel_before_commit: bool = False, fail_statement: bool = False
    ) -> Ran:
        statement = self.store.statements.add(self.session.id, sql, now=time.time())
        force_state(self.store, "statements", statement.id, StatementState.RUNNING.value)
        ctx = ExecutionContext(
            self.open_session,
            self.store.statements.get(statement.id),
            self.settings,
            self.store,
            0,  # no engine record: these tests drive the protocol in this process
            threading.Event(),
        )
        outcome: ExecResult | BaseException
        try:
            result = run_sql(ctx)
            if cancel_before_commit:
                ctx.cancelled.set()
            if fail_statement:  # e.g. the reaper gave up on it while it ran
                force_state(self.store, "statements", statement.id, StatementState.FAILED.value)
            hooks.finish(ctx, result)
            outcome = result
        except BaseException as exc:
            outcome = exc
            hooks.fail(ctx, exc)
        return Ran(statement.id, outcome, self.store.table_txns.of_statement(statement.id))

    def count(self, table: str) -> int:
        return int(self.spark.sql(f"SELECT count(*) FROM {self.database}.{table}").collect()[0][0])

    def exists(self, table: str) -> bool:
        return bool(self.spark.catalog.tableExists(f"{self.database}.{table}"))

    def database_dir(self) -> Path:
        path = local_path(self.spark.catalog.getDatabase(self.database).locationUri)
        assert path is not None
        return path

    def leftovers(self) -> list[str]:
        return sorted(p.name for p in self.database_dir().iterdir() if "sparkgate" in p.name)


@pytest.fixture
def harness(spark: Any, tmp_path: Path) -> Iterator[Harness]:
    database = f"sgt_{uuid.uuid4().hex[:8]}"
    spark.sql(f"CREATE DATABASE {database} LOCATION 'file:{tmp_path / 'db'}'")
    store = Store.open(f"sqlite:///{tmp_path / 'store.db'}")
    store.migrate()
    settings = Settings(home=tmp_path / "home", table_version_grace=60.0)
    try:
        yield Harness(spark, store, settings, database)
    finally:
        spark.sql(f"DROP DATABASE {database} CASCADE")
        store.close()


def test_create_commits_whole(harness: Harness) -> None:
    db = harness.database
    ran = harness.run(
        f"CREATE TABLE {db}.t USING parquet TBLPROPERTIES ('team'='a') COMMENT 'c' "
        "AS SELECT id, id % 3 AS p FROM range(30)"
    )
    assert isinstance(ran.outcome, ExecResult), ran.outcome
    assert ran.outcome.output["ctas"]["path"] == "atomic"
    assert ran.outcome.output["ctas"]["outcome"] == "created"
    [txn] = ran.txns
    assert txn.state is TableTxnState.COMMITTED and txn.operation is TableOperation.CREATE
    assert harness.count("t") == 30
    assert harness.leftovers() == []
    assert local_path(txn.target_location) == harness.database_dir() / "t"
    described = harness.spark.sql(f"DESCRIBE TABLE EXTENDED {db}.t AS JSON").collect()[0][0]
    assert '"team":"a"' in described and '"comment":"c"' in described


def test_partitioned_tables_in_the_in_memory_catalog_run_plain(harness: Harness) -> None:
    db = harness.database
    ran = harness.run(
        f"CREATE TABLE {db}.p USING parquet PARTITIONED BY (p) AS SELECT id, id % 3 AS p "
        "FROM range(30)"
    )
    assert isinstance(ran.outcome, ExecResult), ran.outcome
    assert ran.outcome.output["ctas"]["path"] == "plain"
    assert "in-memory catalog" in ran.outcome.output["ctas"]["reason"]
    assert ran.txns == [] and harness.count("p") == 30


def test_a_failing_query_leaves_nothing(harness: Harness) -> None:
    db = harness.database
    sql = (
        f"CREATE TABLE {db}.t USING parquet AS SELECT CASE WHEN id = 2500 "
        "THEN raise_error('boom') ELSE id END AS id FROM range(0, 4000, 1, 4)"
    )
    ran = harness.run(sql)
    assert ran.error["code"] == "USER_RAISED_EXCEPTION"
    [txn] = ran.txns
    assert txn.state is TableTxnState.ABORTED and txn.error is not None
    assert txn.error.code == "QUERY_FAILED"
    assert txn.catalog_clean and txn.staging_removed_at is not None
    assert not harness.exists("t") and harness.leftovers() == []
    assert not (harness.database_dir() / "t").exists()
    retry = harness.run(sql.replace("2500", "-1"))
    assert isinstance(retry.outcome, ExecResult) and harness.count("t") == 4000


def test_a_cancel_before_the_commit_wins(harness: Harness) -> None:
    ran = harness.run(
        f"CREATE TABLE {harness.database}.t USING parquet AS SELECT 1 AS a",
        cancel_before_commit=True,
    )
    assert isinstance(ran.outcome, hooks.StatementCancelled)
    assert ran.txns[0].state is TableTxnState.ABORTED
    assert ran.txns[0].error == RecordedError("CANCELLED", "The query was cancelled.")
    assert not harness.exists("t") and harness.leftovers() == []


def test_a_query_given_up_on_never_publishes(harness: Harness) -> None:
    ran = harness.run(
        f"CREATE TABLE {harness.database}.t USING parquet AS SELECT 1 AS a", fail_statement=True
    )
    assert "no longer running" in str(ran.outcome)
    assert ran.txns[0].state is TableTxnState.ABORTED
    assert not harness.exists("t") and harness.leftovers() == []


def test_replace_switches_versions_and_failures_keep_the_old_one(harness: Harness) -> None:
    db = harness.database
    harness.run(f"CREATE TABLE {db}.t USING parquet AS SELECT id FROM range(10)")
    first = harness.database_dir() / "t"
    ran = harness.run(
        f"REPLACE TABLE {db}.t USING parquet COMMENT 'v2' AS SELECT id FROM range(20)"
    )
    assert isinstance(ran.outcome, ExecResult), ran.outcome
    ctas = ran.outcome.output["ctas"]
    assert (ctas["operation"], ctas["outcome"]) == ("replace", "replaced")
    assert harness.count("t") == 20
    [txn] = ran.txns
    assert txn.state is TableTxnState.COMMITTED and local_path(txn.previous_location or "") == first
    assert txn.retire_after is not None and txn.retire_after > time.time() + 50
    assert first.exists()  # kept for readers until the grace period ends

    failed = harness.run(
        f"CREATE OR REPLACE TABLE {db}.t USING parquet AS SELECT CASE WHEN id = 25 "
        "THEN raise_error('boom') ELSE id END AS id FROM range(0, 30, 1, 3)"
    )
    assert failed.error["code"] == "USER_RAISED_EXCEPTION"
    assert failed.txns[0].state is TableTxnState.ABORTED
    assert harness.count("t") == 20
    assert not Path(str(local_path(failed.txns[0].staging_location))).exists()

    changed = harness.run(f"REPLACE TABLE {db}.t USING parquet AS SELECT 'x' AS id")
    assert changed.error["code"] == "UNSUPPORTED_FEATURE.TABLE_OPERATION"  # as Spark says
    note = harness.store.statements.get(changed.statement_id).output or {}
    assert note["ctas"]["path"] == "plain" and "columns" in note["ctas"]["reason"]


def test_recovery_finishes_what_a_dead_engine_left(harness: Harness) -> None:
    db, store, spark = harness.database, harness.store, harness.spark
    engine = store.engines.add(EngineKind.DEDICATED, now=time.time())
    force_state(store, "engines", engine.id, "lost")
    statement = store.statements.add(harness.session.id, "CREATE TABLE ...", now=time.time())
    base = harness.database_dir()

    def staged(name: str) -> TableTxnRecord:
        spark.sql(f"CREATE TABLE {db}.{name} USING parquet AS SELECT 1 AS a")
        return store.table_txns.add(
            statement_id=statement.id,
            engine_id=engine.id,
            operation=TableOperation.CREATE,
            database_name=db,
            table_name=name.replace("sparkgate_staging_", "t_"),
            staging_table=name,
            staging_location=f"file:{base / name}",
            target_location=f"file:{base / name.replace('sparkgate_staging_', 't_')}",
            now=time.time(),
        )

    aborted = staged("sparkgate_staging_a")  # aborted by the janitor, still in the catalog
    store.transitions.table_txn(aborted.id, TableTxnState.ABORTED, now=time.time())
    not_switched = staged("sparkgate_staging_b")  # died in the commit, before the rename
    force_state(store, "table_transactions", not_switched.id, "committing")
    switched = staged("sparkgate_staging_c")  # died in the commit, after the rename
    force_state(store, "table_transactions", switched.id, "committing")
    spark.sql(f"ALTER TABLE {db}.sparkgate_staging_c RENAME TO {db}.t_c")

    done = recover(spark, store, harness.settings, now=time.time())
    assert sorted(done) == sorted([aborted.id, not_switched.id, switched.id])
    assert store.table_txns.get(aborted.id).catalog_clean
    assert store.table_txns.get(not_switched.id).state is TableTxnState.ABORTED
    assert store.table_txns.get(switched.id).state is TableTxnState.COMMITTED
    assert not harness.exists("sparkgate_staging_a") and not harness.exists("sparkgate_staging_b")
    assert not harness.exists("t_b") and harness.count("t_c") == 1
    assert harness.leftovers() == []
    assert recover(spark, store, harness.settings, now=time.time()) == []


def test_a_dropped_tables_retired_version_does_not_block_its_name(harness: Harness) -> None:
    db = harness.database
    harness.run(f"CREATE TABLE {db}.t USING parquet AS SELECT id FROM range(10)")
    replaced = harness.run(f"REPLACE TABLE {db}.t USING parquet AS SELECT id FROM range(20)")
    assert (harness.database_dir() / "t").exists()  # the first version, kept for readers
    harness.spark.sql(f"DROP TABLE {db}.t")  # drops the current version only
    again = harness.run(f"CREATE TABLE {db}.t USING parquet AS SELECT id FROM range(30)")
    assert isinstance(again.outcome, ExecResult), again.outcome  # no LOCATION_ALREADY_EXISTS
    assert harness.count("t") == 30
    assert harness.store.table_txns.get(replaced.txns[0].id).retired_at is not None


def test_a_taken_location_is_refused_and_the_legacy_setting_is_left_to_spark(
    harness: Harness,
) -> None:
    db, spark = harness.database, harness.spark
    stray = harness.database_dir() / "t"
    stray.mkdir(parents=True)
    (stray / "left-behind.txt").write_text("x")
    refused = harness.run(f"CREATE TABLE {db}.t USING parquet AS SELECT 1 AS a")
    assert refused.error["code"] == "LOCATION_ALREADY_EXISTS" and refused.txns == []
    spark.conf.set("spark.sql.legacy.allowNonEmptyLocationInCTAS", "true")
    try:
        ran = harness.run(f"CREATE TABLE {db}.t USING parquet AS SELECT 1 AS a")
    finally:
        spark.conf.unset("spark.sql.legacy.allowNonEmptyLocationInCTAS")
    # Left to Spark, which (4.3, for data source tables) refuses all the same.
    assert ran.error["code"] == "LOCATION_ALREADY_EXISTS"
    note = harness.store.statements.get(ran.statement_id).output or {}
    assert note["ctas"]["path"] == "plain" and ran.txns == []
    assert "allowNonEmptyLocationInCTAS" in note["ctas"]["reason"]
