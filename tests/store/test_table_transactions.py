"""Two-phase table writes in the store, identical on SQLite and PostgreSQL."""

from __future__ import annotations

from typing import Any

from sparkgate.states import (
    TABLE_TXN_TRANSITIONS,
    EngineKind,
    EngineState,
    StatementState,
    TableOperation,
    TableTxnState,
)
from sparkgate.store import Store
from sparkgate.store.records import TableTxnRecord
from tests.conftest import NOW, force_state


def add_txn(
    store: Store,
    statement_id: int,
    *,
    engine_id: int | None = None,
    operation: TableOperation = TableOperation.CREATE,
    previous_location: str | None = None,
) -> TableTxnRecord:
    return store.table_txns.add(
        statement_id=statement_id,
        engine_id=engine_id,
        operation=operation,
        database_name="db",
        table_name="t",
        staging_table="sparkgate_staging_x" if operation is TableOperation.CREATE else None,
        staging_location="file:/w/db.db/sparkgate_staging_x",
        target_location="file:/w/db.db/t",
        previous_location=previous_location,
        now=NOW,
    )


def running_statement(store: Store, make_session: Any) -> int:
    statement = store.statements.add(make_session().id, "CREATE TABLE t AS SELECT 1", now=NOW)
    force_state(store, "statements", statement.id, StatementState.RUNNING.value)
    return statement.id


def test_a_write_is_recorded_pending(store: Store, make_session: Any) -> None:
    statement_id = running_statement(store, make_session)
    txn = add_txn(store, statement_id)
    assert store.table_txns.get(txn.id) == txn
    assert txn.state is TableTxnState.PENDING and txn.version == 1
    assert not txn.catalog_clean  # a staging table may reach the catalog
    replace = add_txn(store, statement_id, operation=TableOperation.REPLACE)
    assert replace.catalog_clean  # nothing of a replace is ever in the catalog
    assert [t.id for t in store.table_txns.of_statement(statement_id)] == [txn.id, replace.id]


def test_every_move_follows_the_table(store: Store, make_session: Any) -> None:
    statement_id = running_statement(store, make_session)
    for source, targets in TABLE_TXN_TRANSITIONS.items():
        for target in TableTxnState:
            txn = add_txn(store, statement_id)
            force_state(store, "table_transactions", txn.id, source.value)
            outcome = store.transitions.table_txn(txn.id, target, now=NOW + 1)
            assert outcome.applied is (target in targets), (source, target)


def test_commit_begins_only_while_the_statement_runs(store: Store, make_session: Any) -> None:
    statement_id = running_statement(store, make_session)
    txn = add_txn(store, statement_id)
    assert store.table_txns.begin_commit(txn.id, statement_id, now=NOW + 1).applied
    assert store.table_txns.get(txn.id).state is TableTxnState.COMMITTING
    again = store.table_txns.begin_commit(txn.id, statement_id, now=NOW + 2)
    assert not again.applied and again.state is TableTxnState.COMMITTING

    for state in (StatementState.CANCELLING, StatementState.FAILED, StatementState.CANCELLED):
        force_state(store, "statements", statement_id, state.value)
        other = add_txn(store, statement_id)
        refused = store.table_txns.begin_commit(other.id, statement_id, now=NOW + 1)
        assert not refused.applied and refused.state is TableTxnState.PENDING, state


def test_what_the_janitor_and_engines_are_shown(
    store: Store, make_session: Any, make_engine: Any
) -> None:
    live = make_engine(kind=EngineKind.DEDICATED)
    lost = make_engine(kind=EngineKind.DEDICATED, state="lost")
    statement_id = running_statement(store, make_session)
    pending = add_txn(store, statement_id, engine_id=live.id)
    aborted = add_txn(store, statement_id, engine_id=live.id)
    store.transitions.table_txn(aborted.id, TableTxnState.ABORTED, now=NOW)
    cleaned = add_txn(store, statement_id, engine_id=live.id)
    store.transitions.table_txn(cleaned.id, TableTxnState.ABORTED, now=NOW)
    store.table_txns.set_staging_removed(cleaned.id, now=NOW)
    store.table_txns.set_catalog_clean(cleaned.id, now=NOW)
    in_doubt = add_txn(store, statement_id, engine_id=lost.id)
    force_state(store, "table_transactions", in_doubt.id, TableTxnState.COMMITTING.value)
    replaced = add_txn(
        store, statement_id, operation=TableOperation.REPLACE, previous_location="file:/w/t0"
    )
    force_state(store, "table_transactions", replaced.id, "committed", retire_after=NOW + 60)

    seen = {f.txn.id: f for f in store.table_txns.needing_janitor(now=NOW)}
    assert set(seen) == {pending.id, aborted.id, in_doubt.id}
    assert seen[pending.id].statement_state is StatementState.RUNNING
    assert seen[in_doubt.id].engine_state is EngineState.LOST
    later = {f.txn.id for f in store.table_txns.needing_janitor(now=NOW + 61)}
    assert replaced.id in later

    catalog = {f.txn.id for f in store.table_txns.needing_catalog()}
    assert catalog == {aborted.id, in_doubt.id}

    assert [t.id for t in store.table_txns.retiring_at("file:/w/t0")] == [replaced.id]
    assert store.table_txns.set_retired(replaced.id, now=NOW + 61)
    assert not store.table_txns.set_retired(replaced.id, now=NOW + 62)  # only once
    assert store.table_txns.retiring_at("file:/w/t0") == []


def test_a_write_outlives_its_engine_row(store: Store, make_session: Any) -> None:
    statement_id = running_statement(store, make_session)
    orphan = add_txn(store, statement_id, engine_id=424242)  # no such engine
    facts = {f.txn.id: f for f in store.table_txns.needing_janitor(now=NOW)}
    assert facts[orphan.id].engine_state is None
