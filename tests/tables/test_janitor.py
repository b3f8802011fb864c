"""The table janitor: which writes it aborts, what it removes and when (decisions are pure;
the shell runs against a real store and real directories)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from sparkgate.states import (
    EngineKind,
    EngineState,
    StatementState,
    TableOperation,
    TableTxnState,
)
from sparkgate.store import Store
from sparkgate.store.records import TableTxnFacts, TableTxnRecord
from sparkgate.tables.janitor import Abort, RemoveStaging, RetireVersion, TableJanitor, decide
from tests.conftest import NOW, force_state


def txn(**overrides: Any) -> TableTxnRecord:
    values: dict[str, Any] = {
        "id": 1,
        "statement_id": 7,
        "engine_id": 3,
        "operation": TableOperation.CREATE,
        "database_name": "db",
        "table_name": "t",
        "staging_table": "sparkgate_staging_x",
        "staging_location": "file:/w/db.db/sparkgate_staging_x",
        "target_location": "file:/w/db.db/t",
        "previous_location": None,
        "state": TableTxnState.PENDING,
        "error": None,
        "catalog_clean": False,
        "staging_removed_at": None,
        "retire_after": None,
        "retired_at": None,
        "version": 1,
        "created_at": NOW,
        "finished_at": None,
        "updated_at": NOW,
    }
    return TableTxnRecord(**{**values, **overrides})


RUNNING, LIVE = StatementState.RUNNING, EngineState.RUNNING


@pytest.mark.parametrize(
    ("statement", "engine"),
    [
        (StatementState.FAILED, LIVE),
        (StatementState.CANCELLED, LIVE),
        (StatementState.SUCCESS, LIVE),  # finished without committing: a crash in between
        (None, LIVE),
        (RUNNING, EngineState.LOST),
        (RUNNING, EngineState.STOPPED),
        (RUNNING, EngineState.FAILED),
        (RUNNING, None),
    ],
)
def test_a_pending_write_nobody_will_commit_is_aborted(
    statement: StatementState | None, engine: EngineState | None
) -> None:
    pending = txn()
    actions = decide([TableTxnFacts(pending, statement, engine)], NOW)
    assert [type(a) for a in actions] == [Abort, RemoveStaging]
    assert isinstance(actions[0], Abort) and actions[0].reason.to_json()["code"] == "ORPHANED"
    assert actions[1] == RemoveStaging(pending.id, pending.staging_location)


@pytest.mark.parametrize(
    ("statement", "engine"),
    [
        (RUNNING, LIVE),
        (StatementState.CANCELLING, LIVE),  # its engine is aborting it right now
        (RUNNING, EngineState.STARTING),
        (RUNNING, EngineState.STOPPING),  # finishing its statements before it exits
    ],
)
def test_a_pending_write_of_a_running_query_is_left_alone(
    statement: StatementState, engine: EngineState
) -> None:
    assert decide([TableTxnFacts(txn(), statement, engine)], NOW) == []


def test_a_commit_in_progress_is_never_touched() -> None:
    committing = txn(state=TableTxnState.COMMITTING)
    lost = TableTxnFacts(committing, StatementState.FAILED, EngineState.LOST)
    assert decide([lost], NOW) == []  # only the catalog can tell; engines resolve it


def test_staging_left_by_an_abort_is_removed_once() -> None:
    aborted = txn(state=TableTxnState.ABORTED)
    assert decide([TableTxnFacts(aborted, StatementState.FAILED, LIVE)], NOW) == [
        RemoveStaging(aborted.id, aborted.staging_location)
    ]
    removed = txn(state=TableTxnState.ABORTED, staging_removed_at=NOW)
    assert decide([TableTxnFacts(removed, StatementState.FAILED, LIVE)], NOW) == []


def test_a_replaced_version_is_removed_after_its_grace_period() -> None:
    replaced = txn(
        operation=TableOperation.REPLACE,
        state=TableTxnState.COMMITTED,
        previous_location="file:/w/db.db/t",
        retire_after=NOW + 60,
    )
    facts = [TableTxnFacts(replaced, StatementState.SUCCESS, LIVE)]
    assert decide(facts, NOW + 59) == []
    assert decide(facts, NOW + 60) == [RetireVersion(replaced.id, "file:/w/db.db/t")]
    done = txn(
        state=TableTxnState.COMMITTED, previous_location="file:/x", retire_after=NOW, retired_at=NOW
    )
    assert decide([TableTxnFacts(done, StatementState.SUCCESS, LIVE)], NOW + 1) == []
    created = txn(state=TableTxnState.COMMITTED)
    assert decide([TableTxnFacts(created, StatementState.SUCCESS, LIVE)], NOW + 1) == []


# -- the shell, on a real store and real directories ------------------------------------


def make_dir(path: Path) -> str:
    (path / "_temporary" / "0").mkdir(parents=True)
    (path / "_temporary" / "0" / "part-00000.parquet").write_bytes(b"partial")
    return f"file:{path}"


def test_janitor_aborts_orphans_and_removes_their_data(
    store: Store, make_session: Any, make_engine: Any, tmp_path: Path
) -> None:
    engine = make_engine(kind=EngineKind.DEDICATED)
    session = make_session()
    statement = store.statements.add(session.id, "CREATE TABLE t AS SELECT 1", now=NOW)
    force_state(store, "statements", statement.id, StatementState.RUNNING.value)
    staging = make_dir(tmp_path / "db.db" / "sparkgate_staging_a")
    pending = store.table_txns.add(
        statement_id=statement.id,
        engine_id=engine.id,
        operation=TableOperation.CREATE,
        database_name="db",
        table_name="t",
        staging_table="sparkgate_staging_a",
        staging_location=staging,
        target_location=f"file:{tmp_path / 'db.db' / 't'}",
        now=NOW,
    )
    janitor = TableJanitor(store, clock=lambda: NOW + 5)
    assert janitor.run(NOW + 5) == []  # its query still runs on a live engine
    assert (tmp_path / "db.db" / "sparkgate_staging_a").exists()

    force_state(store, "engines", engine.id, "lost")  # SIGKILL, then the reaper
    done = janitor.run(NOW + 10)
    assert [type(a) for a in done] == [Abort, RemoveStaging]
    aborted = store.table_txns.get(pending.id)
    assert aborted.state is TableTxnState.ABORTED and aborted.error is not None
    assert aborted.error.code == "ORPHANED" and f"Engine {engine.id}" in aborted.error.message
    assert aborted.staging_removed_at == NOW + 5
    assert not aborted.catalog_clean  # left for an engine: the staging table may be registered
    assert not (tmp_path / "db.db" / "sparkgate_staging_a").exists()
    assert janitor.run(NOW + 11) == []  # nothing twice


def test_janitor_retires_replaced_versions_after_grace(
    store: Store, make_session: Any, tmp_path: Path
) -> None:
    session = make_session()
    statement = store.statements.add(session.id, "REPLACE TABLE t AS SELECT 1", now=NOW)
    old = make_dir(tmp_path / "db.db" / "t")
    new = make_dir(tmp_path / "db.db" / "t-sparkgate-v2")
    replaced = store.table_txns.add(
        statement_id=statement.id,
        engine_id=None,
        operation=TableOperation.REPLACE,
        database_name="db",
        table_name="t",
        staging_location=new,
        target_location=new,
        previous_location=old,
        now=NOW,
    )
    store.transitions.table_txn(replaced.id, TableTxnState.COMMITTING, now=NOW)
    store.transitions.table_txn(
        replaced.id, TableTxnState.COMMITTED, now=NOW, retire_after=NOW + 3600
    )
    janitor = TableJanitor(store, clock=lambda: NOW + 3600)
    assert janitor.run(NOW + 3599) == []
    assert janitor.run(NOW + 3600) == [RetireVersion(replaced.id, old)]
    assert not (tmp_path / "db.db" / "t").exists()
    assert (tmp_path / "db.db" / "t-sparkgate-v2" / "_temporary").exists()  # the live version
    assert store.table_txns.get(replaced.id).retired_at == NOW + 3600


def test_janitor_never_aborts_what_began_to_commit(
    store: Store, make_session: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    session = make_session()
    statement = store.statements.add(session.id, "CREATE TABLE t AS SELECT 1", now=NOW)
    force_state(store, "statements", statement.id, StatementState.FAILED.value)
    staging = make_dir(tmp_path / "sparkgate_staging_b")
    txn_ = store.table_txns.add(
        statement_id=statement.id,
        engine_id=None,
        operation=TableOperation.CREATE,
        database_name="db",
        table_name="t",
        staging_table="sparkgate_staging_b",
        staging_location=staging,
        target_location=f"file:{tmp_path / 't'}",
        now=NOW,
    )
    # Its engine began the commit between the janitor's read and its write.
    stale = store.table_txns.needing_janitor(now=NOW)
    store.transitions.table_txn(txn_.id, TableTxnState.COMMITTING, now=NOW)
    monkeypatch.setattr(store.table_txns, "needing_janitor", lambda now: stale)
    assert TableJanitor(store).run(NOW) == []
    assert store.table_txns.get(txn_.id).state is TableTxnState.COMMITTING
    assert (tmp_path / "sparkgate_staging_b").exists()


def test_removal_refuses_short_paths() -> None:
    from sparkgate.tables.locations import local_path, remove

    with pytest.raises(ValueError, match="refusing"):
        remove("file:/")
    assert local_path("hdfs://nn/warehouse/t") is None
    assert local_path("file:///w/t") == Path("/w/t")
    assert local_path("/w/t") == Path("/w/t")
    assert local_path("relative/t") is None
