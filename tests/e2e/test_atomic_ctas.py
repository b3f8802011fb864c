"""Atomic CREATE / REPLACE TABLE AS SELECT through real HTTP, real engines and the shared Hive
metastore. Statements run in a writer session on a dedicated engine (or as batches); another
engine process (the shared engine) reads the table while they run.

Slow queries are made with ``reflect('java.lang.Thread', 'sleep', ms)`` (returns the string
'null'), failures midway with ``raise_error`` on a chosen row of one of several partitions.
Session variables make "the same statement" fail or dawdle once, then succeed on retry.
"""

from __future__ import annotations

import os
import shutil
import signal
import threading
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from sparkgate.client import Client
from sparkgate.recorded import RecordedError
from sparkgate.schemas.queries import Query
from sparkgate.states import TableOperation, TableTxnState
from sparkgate.store.records import TableTxnRecord
from sparkgate.tables.janitor import TableJanitor
from sparkgate.tables.locations import local_path
from sparkgate_dev import ServerProcess, eventually
from tests.e2e.conftest import run

pytestmark = pytest.mark.spark


def unique(prefix: str) -> str:
    return f"{prefix}_{uuid.uuid4().hex[:8]}"


@pytest.fixture(scope="module")
def client(server: ServerProcess) -> Iterator[Client]:
    with server.client() as sg:
        yield sg


def _open(sg: Client, conf: dict[str, str] | None = None) -> int:
    session = sg.create_session(conf=conf)
    ready = sg.wait_session(session.id, {"idle", "error", "dead"}, timeout=300)
    assert ready.state == "idle", ready
    session_id: int = ready.id
    return session_id


@pytest.fixture(scope="module")
def writer(client: Client) -> Iterator[int]:
    """A session on a dedicated engine of its own (a non-SQL conf key asks for one)."""
    session_id = _open(client, {"spark.sparkgate.test.role": "ctas-writer"})
    yield session_id
    client.kill_session(session_id)


@pytest.fixture(scope="module")
def reader(client: Client, writer: int) -> Iterator[int]:
    """A session on the shared engine: another Spark process than the writer's."""
    session_id = _open(client)
    assert client.session(session_id).engine_id != client.session(writer).engine_id
    yield session_id
    client.kill_session(session_id)


def ok(sg: Client, sql: str, session_id: int | None) -> Query:
    done = run(sg, sql, session_id)
    assert done.state == "success", done
    return done


def rows(sg: Client, sql: str, session_id: int) -> list[list[Any]]:
    result: list[list[Any]] = sg.result(ok(sg, sql, session_id).id).rows
    return result


def txns(server: ServerProcess, statement_id: int) -> list[TableTxnRecord]:
    with server.store() as store:
        return store.table_txns.of_statement(statement_id)


def path_of(location: str | None) -> Path:
    assert location is not None
    path = local_path(location)
    assert path is not None
    return path


def database_dir(sg: Client, reader: int) -> Path:
    described = dict(rows(sg, "DESCRIBE DATABASE default", reader))
    return path_of(described["Location"])


def absent(sg: Client, table: str, reader: int) -> None:
    """No catalog entry, no files: as if the statement had never run."""
    done = run(sg, f"SELECT count(*) FROM {table}", reader)
    assert done.error is not None
    assert done.state == "failed" and done.error.code == "TABLE_OR_VIEW_NOT_FOUND", done
    directory = database_dir(sg, reader)
    assert not (directory / table).exists()
    assert not [p.name for p in directory.iterdir() if p.name.startswith(f"{table}-sparkgate")]


def assert_cleaned(server: ServerProcess, statement_id: int) -> TableTxnRecord:
    """The statement's table write aborted and fully cleaned up (janitor and engines)."""

    def cleaned() -> TableTxnRecord | None:
        [txn] = txns(server, statement_id)
        done = txn.state is TableTxnState.ABORTED and txn.staging_removed_at is not None
        return txn if done and txn.catalog_clean else None

    txn = eventually(cleaned, timeout=90, interval=0.5, what=f"write of {statement_id} cleaned")
    assert not path_of(txn.staging_location).exists()
    return txn


class Poller(threading.Thread):
    """Runs one query in a loop in another engine's session; records every outcome."""

    def __init__(self, server: ServerProcess, session_id: int, sql: str) -> None:
        super().__init__(daemon=True)
        self.server, self.session_id, self.sql = server, session_id, sql
        self.seen: list[tuple[str, Any]] = []
        self.halt = threading.Event()

    def run(self) -> None:
        with self.server.client() as sg:
            while not self.halt.is_set():
                done = run(sg, self.sql, self.session_id, timeout=120)
                if done.state == "success":
                    self.seen.append(("ok", tuple(sg.result(done.id).rows[0])))
                else:
                    self.seen.append((done.state, done.error.code if done.error else None))

    def until(self, condition: Any, what: str, timeout: float = 120) -> None:
        eventually(lambda: condition(self.seen), timeout=timeout, interval=0.1, what=what)

    def stop(self) -> list[tuple[str, Any]]:
        self.halt.set()
        self.join(timeout=120)
        return self.seen


def test_a_created_table_appears_whole_to_another_engine(
    server: ServerProcess, client: Client, writer: int, reader: int
) -> None:
    table = unique("ctas_whole")
    poller = Poller(server, reader, f"SELECT count(*) AS n FROM {table}")
    poller.start()
    poller.until(lambda seen: len(seen) >= 2, "the reader to start polling")
    # Four partitions; each pauses on its last row, after its other rows are written.
    done = ok(
        client,
        f"CREATE TABLE {table} USING parquet PARTITIONED BY (p)\n"
        "  OPTIONS ('compression' = 'zstd') TBLPROPERTIES ('team' = 'data')\n"
        "  COMMENT 'made by a test'\nAS SELECT id, id % 4 AS p,\n"
        "  CASE WHEN id % 50000 = 49999 THEN reflect('java.lang.Thread', 'sleep', "
        "CAST(1500 AS BIGINT)) END AS pause\nFROM range(0, 200000, 1, 4)",
        writer,
    )
    after = len(poller.seen)
    poller.until(lambda seen: len(seen) >= after + 2, "reads after the commit")
    seen = poller.stop()

    assert set(seen) <= {("failed", "TABLE_OR_VIEW_NOT_FOUND"), ("ok", (200000,))}, seen
    first_ok = seen.index(("ok", (200000,)))
    assert first_ok > 0 and all(outcome[0] == "ok" for outcome in seen[first_ok:]), seen

    assert done.output is not None
    assert done.output["ctas"]["path"] == "atomic"
    assert done.output["ctas"]["outcome"] == "created"
    [txn] = txns(server, done.id)
    assert txn.state is TableTxnState.COMMITTED and txn.operation is TableOperation.CREATE
    assert not path_of(txn.staging_location).exists()
    assert path_of(txn.target_location) == database_dir(client, reader) / table
    assert len(rows(client, f"SHOW PARTITIONS {table}", reader)) == 4
    described = rows(client, f"DESCRIBE TABLE EXTENDED {table} AS JSON", reader)[0][0]
    for fact in ('"type":"MANAGED"', '"team":"data"', '"compression":"zstd"', "made by a test"):
        assert fact in described, described


def test_a_select_failing_midway_leaves_nothing_and_a_retry_succeeds(
    server: ServerProcess, client: Client, writer: int, reader: int
) -> None:
    table = unique("ctas_fails")
    ok(client, "DECLARE OR REPLACE VARIABLE fail_at BIGINT DEFAULT 150000", writer)
    statement = (
        f"CREATE TABLE {table} USING parquet AS\n"
        "SELECT CASE WHEN id = fail_at THEN raise_error(concat('bad row ', id)) ELSE id END AS id\n"
        "FROM range(0, 200000, 1, 4)"
    )
    failed = run(client, statement, writer)
    assert failed.state == "failed", failed
    assert failed.error is not None
    assert failed.error.code == "USER_RAISED_EXCEPTION"
    assert "bad row 150000" in failed.error.message
    assert failed.output is not None
    assert failed.output["ctas"]["path"] == "atomic"  # the record says how it ran
    txn = assert_cleaned(server, failed.id)
    assert txn.error is not None and txn.error.code == "QUERY_FAILED"
    absent(client, table, reader)

    ok(client, "SET VAR fail_at = -1", writer)
    ok(client, statement, writer)  # the same statement, now that its data is good
    assert rows(client, f"SELECT count(*) FROM {table}", reader) == [[200000]]


def test_a_cancelled_ctas_leaves_nothing_and_a_retry_succeeds(
    server: ServerProcess, client: Client, writer: int, reader: int
) -> None:
    table = unique("ctas_cancel")
    ok(client, "DECLARE OR REPLACE VARIABLE pause_ms BIGINT DEFAULT 3000", writer)
    statement = (
        f"CREATE TABLE {table} USING parquet AS SELECT id, CASE WHEN id % 1000 = 999 "
        "THEN reflect('java.lang.Thread', 'sleep', pause_ms) END AS pause "
        "FROM range(0, 8000, 1, 4)"
    )
    submitted = client.submit(statement, session_id=writer)

    def writing() -> bool:
        found = txns(server, submitted.id)
        return bool(found) and (path_of(found[0].staging_location) / "_temporary").exists()

    eventually(writing, timeout=120, what="the CTAS to write staged files")
    client.cancel(submitted.id)
    done = client.wait(submitted.id, timeout=120)
    assert done.state == "cancelled", done
    txn = assert_cleaned(server, submitted.id)
    assert txn.error == RecordedError("CANCELLED", "The query was cancelled.")
    absent(client, table, reader)

    ok(client, "SET VAR pause_ms = 0", writer)
    ok(client, statement, writer)
    assert rows(client, f"SELECT count(*) FROM {table}", reader) == [[8000]]


def test_a_ctas_whose_engine_is_killed_leaves_nothing_and_a_retry_succeeds(
    server: ServerProcess, client: Client, writer: int, reader: int
) -> None:
    table = unique("ctas_killed")
    statement = (
        f"CREATE TABLE {table} USING parquet AS SELECT id, CASE WHEN id % 1000 = 999 "
        "THEN reflect('java.lang.Thread', 'sleep', CAST(1500 AS BIGINT)) END AS pause "
        "FROM range(0, 8000, 1, 4)"
    )
    submitted = client.submit(statement, isolation="engine")  # a driver of its own, to kill

    def writing() -> bool:
        found = txns(server, submitted.id)
        return bool(found) and (path_of(found[0].staging_location) / "_temporary").exists()

    eventually(writing, timeout=240, what="the CTAS to write staged files")
    engine_id = client.session(submitted.session_id).engine_id
    assert engine_id is not None
    with server.store() as store:
        pid = store.engines.get(engine_id).pid
    assert pid is not None
    os.killpg(pid, signal.SIGKILL)  # the driver and its JVM, mid-write, no goodbye

    done = client.wait(submitted.id, timeout=120)
    assert done.error is not None
    assert done.state == "failed" and done.error.code == "ENGINE_LOST", done
    txn = assert_cleaned(server, submitted.id)  # the janitor, then an engine's sweep
    assert txn.error is not None and txn.error.code == "ORPHANED"
    absent(client, table, reader)

    ok(client, statement, writer)
    assert rows(client, f"SELECT count(*) FROM {table}", reader) == [[8000]]


def test_replace_swaps_complete_versions_under_a_reader(
    server: ServerProcess, client: Client, writer: int, reader: int
) -> None:
    table = unique("rtas")
    created = ok(
        client, f"CREATE TABLE {table} USING parquet AS SELECT id FROM range(1000)", writer
    )
    first_location = path_of(txns(server, created.id)[0].target_location)
    versions = {n: (n, n * (n - 1) // 2) for n in (1000, 2000, 3000, 4000)}
    # Each read pauses on some rows, so that switches land while reads are under way.
    poller = Poller(
        server,
        reader,
        f"SELECT count(*) AS n, sum(id) AS s FROM {table} WHERE reflect('java.lang.Thread', "
        "'sleep', CAST(CASE WHEN id % 100 = 0 THEN 10 ELSE 0 END AS BIGINT)) IS NOT NULL",
    )
    poller.start()
    poller.until(lambda seen: len(seen) >= 2, "the reader to start polling")
    replaced = [
        ok(client, f"REPLACE TABLE {table} USING parquet AS SELECT id FROM range(2000)", writer),
        ok(
            client,
            f"CREATE OR REPLACE TABLE {table} USING parquet AS SELECT id FROM range(3000)",
            writer,
        ),
        ok(client, f"REPLACE TABLE {table} AS SELECT id FROM range(4000)", writer),
    ]
    poller.until(lambda seen: ("ok", versions[4000]) in seen, "the last version to be read")
    seen = poller.stop()

    assert all(state == "ok" for state, _ in seen), seen  # never an error
    counts = [value[0] for _, value in seen]
    assert all(value in versions.values() for _, value in seen), seen  # never a partial table
    assert counts == sorted(counts), counts  # never an older version after a newer one

    records = [txns(server, r.id)[0] for r in replaced]
    assert all(r.output and r.output["ctas"]["outcome"] == "replaced" for r in replaced)
    assert all(t.state is TableTxnState.COMMITTED for t in records)
    assert [path_of(t.previous_location) for t in records] == [
        first_location,
        path_of(records[0].target_location),
        path_of(records[1].target_location),
    ]
    current = path_of(records[-1].target_location)
    described = rows(client, f"DESCRIBE TABLE EXTENDED {table} AS JSON", reader)[0][0]
    assert f'"location":"file:{current}"' in described and '"type":"MANAGED"' in described
    old = [path_of(t.previous_location) for t in records]
    assert all(p.exists() for p in old)  # kept for readers during the grace period

    # Past the grace period the janitor (any node; here, this process) removes them.
    with server.store() as store:
        later = time.time() + server.settings.table_version_grace + 1
        TableJanitor(store).run(later)
    assert not any(p.exists() for p in old) and current.exists()
    assert rows(client, f"SELECT count(*) FROM {table}", reader) == [[4000]]


def test_a_failed_replace_leaves_the_old_table_readable(
    server: ServerProcess, client: Client, writer: int, reader: int
) -> None:
    table = unique("rtas_fails")
    ok(client, f"CREATE TABLE {table} USING parquet AS SELECT id FROM range(1000)", writer)
    before = rows(client, f"DESCRIBE TABLE EXTENDED {table} AS JSON", reader)
    failed = run(
        client,
        f"REPLACE TABLE {table} USING parquet AS SELECT CASE WHEN id = 2500 "
        "THEN raise_error('bad row') ELSE id END AS id FROM range(0, 4000, 1, 4)",
        writer,
    )
    assert failed.error is not None
    assert failed.state == "failed" and failed.error.code == "USER_RAISED_EXCEPTION"
    txn = assert_cleaned(server, failed.id)
    assert txn.operation is TableOperation.REPLACE
    assert rows(client, f"SELECT count(*) FROM {table}", reader) == [[1000]]
    assert rows(client, f"DESCRIBE TABLE EXTENDED {table} AS JSON", reader) == before


def _error(done: Query) -> dict[str, Any]:
    """A failed query's error as the API answers it: code, message and further keys."""
    assert done.state == "failed" and done.error is not None, done
    return done.error.model_dump()


def test_conflicts_and_errors_are_exactly_sparks(client: Client, writer: int, reader: int) -> None:
    """The same statements, staged and plain (``spark.sparkgate.ctas.atomic=false``), fail
    with the same error class, message, parameters and position."""
    table = unique("ctas_conflict")
    ok(client, f"CREATE TABLE {table} USING parquet AS SELECT 1 AS a", writer)
    stray = database_dir(client, reader) / unique("ctas_stray")
    (stray / "part-0.parquet").parent.mkdir()
    (stray / "part-0.parquet").write_bytes(b"left behind by someone")
    failing = [
        f"CREATE TABLE {table} USING parquet AS SELECT 2 AS a",  # TABLE_OR_VIEW_ALREADY_EXISTS
        f"CREATE TABLE {stray.name} USING parquet AS SELECT 2 AS a",  # LOCATION_ALREADY_EXISTS
        f"CREATE TABLE {unique('t')} USING parquet AS\n  SELECT nope FROM range(3)",
        f"CREATE TABLE {unique('t')} USING parquet AS\n  SELECT 10 / (id - 1) FROM range(3)",
        f"CREATE TABLE {unique('t')} USING parquet AS SELECT 1,, 2",
    ]
    errors = []
    try:
        for statement in failing:
            staged = _error(run(client, statement, writer))
            ok(client, "SET spark.sparkgate.ctas.atomic=false", writer)
            plain = _error(run(client, statement, writer))
            ok(client, "RESET spark.sparkgate.ctas.atomic", writer)
            assert staged == plain, statement
            errors.append(staged)
    finally:
        ok(client, "RESET spark.sparkgate.ctas.atomic", writer)
        shutil.rmtree(stray, ignore_errors=True)
    codes = [e["code"] for e in errors]
    assert codes == [
        "TABLE_OR_VIEW_ALREADY_EXISTS",
        "LOCATION_ALREADY_EXISTS",
        "UNRESOLVED_COLUMN.WITH_SUGGESTION",
        "DIVIDE_BY_ZERO",
        "PARSE_SYNTAX_ERROR",
    ]
    assert (errors[2]["line"], errors[2]["position"], errors[2]["fragment"]) == (2, 10, "nope")

    # IF NOT EXISTS on an existing table: nothing runs (the failing query never does).
    skipped = ok(
        client, f"CREATE TABLE IF NOT EXISTS {table} AS SELECT raise_error('never runs')", writer
    )
    assert skipped.output is not None
    assert skipped.output["ctas"]["outcome"] == "exists"
    assert rows(client, f"SELECT a FROM {table}", reader) == [[1]]

    # REPLACE of a missing table: what Spark says for tables that support REPLACE.
    missing = _error(run(client, f"REPLACE TABLE {unique('nope')} AS SELECT 1 AS a", writer))
    assert missing["code"] == "TABLE_OR_VIEW_NOT_FOUND"


def test_what_cannot_be_staged_runs_as_spark_runs_it_and_says_so(
    client: Client, writer: int, reader: int
) -> None:
    hive = unique("ctas_hive")
    done = ok(client, f"CREATE TABLE {hive} STORED AS PARQUET AS SELECT 7 AS a", writer)
    assert done.output is not None
    assert done.output["ctas"]["path"] == "plain"
    assert "Hive format" in done.output["ctas"]["reason"]
    assert rows(client, f"SELECT a FROM {hive}", reader) == [[7]]

    table = unique("rtas_reshape")
    ok(client, f"CREATE TABLE {table} USING parquet AS SELECT 1 AS a", writer)
    reshaped = run(client, f"REPLACE TABLE {table} USING parquet AS SELECT 'x' AS b", writer)
    assert _error(reshaped)["code"] == "UNSUPPORTED_FEATURE.TABLE_OPERATION"  # Spark's answer
    assert reshaped.output is not None
    assert reshaped.output["ctas"]["path"] == "plain"
    assert "columns" in reshaped.output["ctas"]["reason"]
    assert rows(client, f"SELECT a FROM {table}", reader) == [[1]]
