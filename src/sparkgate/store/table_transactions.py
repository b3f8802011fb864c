"""Two-phase table writes (atomic CREATE/REPLACE TABLE AS SELECT), as the store keeps them.

A row is added before any data is written (``begin``), so that whatever a crash leaves
behind (staging directories, a staging table in the catalog) can be found and removed. State
changes go through ``transitions.table_txn``; this module adds rows, reads them, and records
cleanup facts that are not states (staging removed, catalog clean, old version retired).
"""

from __future__ import annotations

from typing import Any

import sqlalchemy as sa

from sparkgate.errors import NotFound
from sparkgate.recorded import ErrorCode
from sparkgate.states import (
    LIVE_ENGINE_STATES,
    EngineState,
    StatementState,
    TableOperation,
    TableTxnState,
)
from sparkgate.store.database import Database
from sparkgate.store.records import TableTxnFacts, TableTxnRecord
from sparkgate.store.schema import engines, statements, table_transactions
from sparkgate.store.transitions import Outcome, Transitions

_txn = table_transactions


def _facts_query(where: sa.ColumnElement[bool]) -> sa.Select[Any]:
    """Writes matching ``where``, each with its statement's and its engine's state."""
    return (
        sa.select(
            _txn,
            statements.c.state.label("statement_state_"),
            engines.c.state.label("engine_state_"),
        )
        .select_from(
            _txn.outerjoin(statements, statements.c.id == _txn.c.statement_id).outerjoin(
                engines, engines.c.id == _txn.c.engine_id
            )
        )
        .where(where)
        .order_by(_txn.c.id)
    )


# Read every round of the table janitor duty, and by every engine's recovery: built once.
_NEEDING_JANITOR = _facts_query(
    sa.or_(
        _txn.c.state.in_([TableTxnState.PENDING.value, TableTxnState.COMMITTING.value]),
        sa.and_(
            _txn.c.state == TableTxnState.ABORTED.value,
            _txn.c.staging_removed_at.is_(None),
        ),
        sa.and_(  # a replaced version past its grace
            _txn.c.state == TableTxnState.COMMITTED.value,
            _txn.c.previous_location.is_not(None),
            _txn.c.retired_at.is_(None),
            _txn.c.retire_after <= sa.bindparam("now", type_=_txn.c.retire_after.type),
        ),
    )
)
_NEEDING_CATALOG = _facts_query(
    sa.or_(
        sa.and_(
            _txn.c.state == TableTxnState.ABORTED.value,
            _txn.c.catalog_clean.is_(False),
        ),
        sa.and_(  # a commit whose engine died in the middle
            _txn.c.state == TableTxnState.COMMITTING.value,
            sa.or_(
                engines.c.state.is_(None),
                engines.c.state.not_in([s.value for s in LIVE_ENGINE_STATES]),
            ),
        ),
    )
)


class TableTxnNotFound(NotFound):
    code = ErrorCode.TABLE_TRANSACTION_NOT_FOUND

    def __init__(self, txn_id: int) -> None:
        super().__init__(f"Table transaction {txn_id} does not exist.", txn_id=txn_id)


class TableTransactions:
    def __init__(self, db: Database) -> None:
        self._db = db
        self._transitions = Transitions(db)

    def add(
        self,
        *,
        statement_id: int,
        engine_id: int | None,
        operation: TableOperation,
        database_name: str,
        table_name: str,
        staging_location: str,
        target_location: str,
        staging_table: str | None = None,
        previous_location: str | None = None,
        now: float,
    ) -> TableTxnRecord:
        """Record a pending write; call it before writing anything."""
        stmt = (
            _txn.insert()
            .values(
                statement_id=statement_id,
                engine_id=engine_id,
                operation=operation.value,
                database_name=database_name,
                table_name=table_name,
                staging_table=staging_table,
                staging_location=staging_location,
                target_location=target_location,
                previous_location=previous_location,
                state=TableTxnState.PENDING.value,
                # A staging table may reach the catalog (create); until an engine has made
                # sure it is gone, the catalog is not known to be clean.
                catalog_clean=staging_table is None,
                version=1,
                created_at=now,
                updated_at=now,
            )
            .returning(*_txn.c)
        )
        with self._db.begin() as conn:
            row = conn.execute(stmt).mappings().one()
        return TableTxnRecord.from_row(row)

    def find(self, txn_id: int) -> TableTxnRecord | None:
        with self._db.read() as conn:
            row = conn.execute(sa.select(_txn).where(_txn.c.id == txn_id)).mappings().first()
        return None if row is None else TableTxnRecord.from_row(row)

    def get(self, txn_id: int) -> TableTxnRecord:
        record = self.find(txn_id)
        if record is None:
            raise TableTxnNotFound(txn_id)
        return record

    def of_statement(self, statement_id: int) -> list[TableTxnRecord]:
        query = sa.select(_txn).where(_txn.c.statement_id == statement_id).order_by(_txn.c.id)
        with self._db.read() as conn:
            return [TableTxnRecord.from_row(r) for r in conn.execute(query).mappings()]

    def begin_commit(self, txn_id: int, statement_id: int, *, now: float) -> Outcome[TableTxnState]:
        """``pending -> committing``, only while the statement is still ``running``.

        A query that was cancelled, failed, or given up on (its engine declared lost) must
        never make its table visible afterwards; a janitor may be aborting it right now. On
        PostgreSQL the statement row is locked so that its state cannot move while we decide.
        """
        with self._db.begin() as conn:
            query = sa.select(statements.c.state).where(statements.c.id == statement_id)
            if self._db.dialect == "postgresql":
                query = query.with_for_update()
            state = conn.execute(query).scalar()
            if state != StatementState.RUNNING.value:
                current = conn.execute(sa.select(_txn.c.state).where(_txn.c.id == txn_id)).scalar()
                return Outcome(False, None if current is None else TableTxnState(current))
            return self._transitions.table_txn(
                txn_id,
                TableTxnState.COMMITTING,
                now=now,
                expected=[TableTxnState.PENDING],
                conn=conn,
            )

    def set_staging_removed(self, txn_id: int, *, now: float) -> None:
        self._set(txn_id, staging_removed_at=now, updated_at=now)

    def set_catalog_clean(self, txn_id: int, *, now: float) -> None:
        self._set(txn_id, catalog_clean=True, updated_at=now)

    def set_previous_location(self, txn_id: int, location: str | None) -> None:
        self._set(txn_id, previous_location=location)

    def set_retired(self, txn_id: int, *, now: float) -> bool:
        """Record that a replaced version was removed; False if someone already did."""
        stmt = (
            _txn.update()
            .where(_txn.c.id == txn_id, _txn.c.retired_at.is_(None))
            .values(retired_at=now, updated_at=now)
        )
        with self._db.begin() as conn:
            return conn.execute(stmt).rowcount == 1

    def _set(self, txn_id: int, **values: object) -> None:
        with self._db.begin() as conn:
            conn.execute(_txn.update().where(_txn.c.id == txn_id).values(**values))

    def needing_janitor(self, *, now: float) -> list[TableTxnFacts]:
        """Writes a janitor may have to act on: open ones (is their query or engine gone?),
        aborted ones whose staging data is still there, replaced versions past their grace."""
        return self._facts(_NEEDING_JANITOR, {"now": now})

    def needing_catalog(self) -> list[TableTxnFacts]:
        """Writes only an engine (it has the catalog) can finish: aborted ones whose staging
        table may still be registered, and commits whose engine died in the middle."""
        return self._facts(_NEEDING_CATALOG, {})

    def retiring_at(self, location: str) -> list[TableTxnRecord]:
        """Committed replaces whose previous version at ``location`` is still kept."""
        query = sa.select(_txn).where(
            _txn.c.state == TableTxnState.COMMITTED.value,
            _txn.c.previous_location == location,
            _txn.c.retired_at.is_(None),
        )
        with self._db.read() as conn:
            return [TableTxnRecord.from_row(r) for r in conn.execute(query).mappings()]

    def list_recent(self, *, limit: int = 100) -> list[TableTxnRecord]:
        query = sa.select(_txn).order_by(_txn.c.id.desc()).limit(limit)
        with self._db.read() as conn:
            return [TableTxnRecord.from_row(r) for r in conn.execute(query).mappings()]

    def _facts(self, query: sa.Select[Any], params: dict[str, float]) -> list[TableTxnFacts]:
        with self._db.read() as conn:
            rows = conn.execute(query, params).mappings().all()
        facts = []
        for row in rows:
            values = dict(row)
            statement_state = values.pop("statement_state_")
            engine_state = values.pop("engine_state_")
            facts.append(
                TableTxnFacts(
                    TableTxnRecord.from_row(values),
                    None if statement_state is None else StatementState(statement_state),
                    None if engine_state is None else EngineState(engine_state),
                )
            )
        return facts
