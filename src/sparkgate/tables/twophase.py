"""Two-phase tables: ``begin`` / ``commit`` / ``abort``, bound to a statement's lifecycle.

The seed's TwoPhaseCatalogTable and CtasJobStatusHook, on Spark's session catalog:

- ``begin`` (statement created): record the pending write in the store, before any data is
  written, with every place data may land, so a janitor can clean up after a crash.
- ``write`` (the statement's job): run the query into staging, invisible to readers.
- ``commit`` (statement finished): make it visible in one step, or not at all.
  - create: the data was written by Spark's own CTAS into a hidden staging table in the target
    database; ``ALTER TABLE staging RENAME TO t`` moves its directory into place and renames the
    catalog entry in one metastore call (same database directory: same filesystem). Partitions,
    bucketing, options and properties come along as Spark made them.
  - replace: the data was written to a new version directory beside the table;
    ``ALTER TABLE t SET LOCATION`` switches readers to it in one metastore call. The previous
    version stays for ``table_version_grace`` seconds (queries may still read it), then the
    janitor removes it.
- ``abort`` (statement failed or cancelled): drop the staging table, remove staged data.

A commit happens only while the statement is still ``running`` (checked in the store, in the
same transaction that marks the write ``committing``), so a query that was cancelled or given
up on never publishes its table afterwards.
"""

from __future__ import annotations

import contextlib
import logging
import threading
import time
from abc import ABC, abstractmethod
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from sparkgate.recorded import Cancelled, CommitFailed, QueryFailed, RecordedError
from sparkgate.runtime import identity
from sparkgate.runtime.failures import DescribedError, recorded_failure
from sparkgate.settings import Settings
from sparkgate.states import StatementState, TableOperation, TableTxnState
from sparkgate.store import Store
from sparkgate.store.records import TableTxnRecord
from sparkgate.store.statement_output import CtasFacts
from sparkgate.tables import catalog, locations
from sparkgate.tables.plan import ExistingTable, Target
from sparkgate.tables.relocate import Shift, relocated
from sparkgate.tables.statement import CtasStatement

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

    from sparkgate.runtime.contract import ExecResult

log = logging.getLogger("sparkgate.tables")

# Table properties the catalog or Spark maintain themselves: never carried over or unset.
_MANAGED_PROPERTIES = ("transient_", "spark.sql.", "numFiles", "totalSize", "numRows")


class CommitRefused(Exception):
    """The statement stopped running before its table could be made visible."""


@dataclass
class WriteContext:
    """What a two-phase table needs from the statement it belongs to."""

    spark: SparkSession
    store: Store
    settings: Settings
    statement_id: int
    engine_id: int | None
    user_sql: str
    cancelled: threading.Event  # the statement's: set when it is to stop
    clock: Callable[[], float] = time.time


@dataclass
class TwoPhaseTable(ABC):
    ctx: WriteContext
    statement: CtasStatement
    target: Target
    provider: str
    database_location: str
    txn: TableTxnRecord | None = field(default=None, init=False)

    operation: TableOperation = field(init=False)

    @abstractmethod
    def begin(self) -> None:
        """Record the pending write (nothing is written before this returns)."""

    @abstractmethod
    def write(self) -> None:
        """Run the query into staging."""

    @abstractmethod
    def commit(self) -> CtasFacts:
        """Make the new table (version) visible; facts for the query's record."""

    @abstractmethod
    def abort(self, reason: RecordedError) -> None:
        """Undo: nothing staged stays, the catalog is as before. Safe to call twice."""

    def record(self) -> CtasFacts:
        """How the query's record describes this write."""
        facts: CtasFacts = {
            "path": "atomic",
            "operation": self.operation.value,
            "table": self.target.quoted,
        }
        if self.txn is not None:
            facts["transaction_id"] = self.txn.id
        return facts

    # -- shared steps ---------------------------------------------------------------------

    def _begin_commit(self) -> TableTxnRecord:
        assert self.txn is not None, "commit before begin"
        moved = self.ctx.store.table_txns.begin_commit(
            self.txn.id, self.ctx.statement_id, now=self.ctx.clock()
        )
        if not moved.applied:
            statement = self.ctx.store.statements.find(self.ctx.statement_id)
            state = statement.state if statement is not None else None
            if state in (StatementState.CANCELLING, StatementState.CANCELLED):
                self.ctx.cancelled.set()  # the user's cancel wins: report it as such
            raise CommitRefused(
                f"Query {self.ctx.statement_id} is {state or 'gone'}, no longer running; its "
                f"table write is {moved.state} and {self.target.quoted} was not changed."
            )
        # From here on a cancel must not interrupt the switch half-way: detach this thread's
        # Spark jobs from the statement's cancel tag. The outcome is decided by the switch.
        self.ctx.spark.sparkContext.clearJobTags()
        return self.txn

    def _finish(self, **values: Any) -> None:
        assert self.txn is not None
        done = self.ctx.store.transitions.table_txn(
            self.txn.id,
            TableTxnState.COMMITTED,
            now=self.ctx.clock(),
            expected=[TableTxnState.COMMITTING],
            **values,
        )
        if not done.applied:
            # Only possible if this engine was declared lost while it committed and another
            # engine settled the write meanwhile (see tables.recovery).
            log.error("table write %s switched but is %s in the store", self.txn.id, done.state)

    def _mark_aborted(self, reason: RecordedError) -> bool:
        """Move the write to ``aborted``; True if there is something to undo (it is aborted
        now, by us or by a janitor), False if it committed."""
        if self.txn is None:
            return False
        moved = self.ctx.store.transitions.table_txn(
            self.txn.id,
            TableTxnState.ABORTED,
            now=self.ctx.clock(),
            expected=[TableTxnState.PENDING, TableTxnState.COMMITTING],
            error=reason,
        )
        return moved.applied or moved.state is TableTxnState.ABORTED

    def _remove_staging(self, location: str) -> None:
        assert self.txn is not None
        if locations.remove(location):
            self.ctx.store.table_txns.set_staging_removed(self.txn.id, now=self.ctx.clock())

    @contextlib.contextmanager
    def _user_positions(
        self, ran_sql: str, shift: Shift, names: Mapping[str, str] | None = None
    ) -> Iterator[None]:
        """Report errors of SQL we ran as if Spark had run the user's statement."""
        try:
            yield
        except Exception as exc:
            if not hasattr(exc, "getCondition"):
                raise
            error = recorded_failure(exc, ran_sql)
            raise DescribedError(
                relocated(error, shift, ran_sql, self.ctx.user_sql, names)
            ) from exc


@dataclass
class StagedCreate(TwoPhaseTable):
    """CREATE [OR REPLACE] TABLE of a table that does not exist: stage, then rename."""

    operation: TableOperation = field(default=TableOperation.CREATE, init=False)
    staging: Target | None = field(default=None, init=False)

    @property
    def target_location(self) -> str:
        return locations.child(self.database_location, self.target.name)

    @property
    def staging_location(self) -> str:
        assert self.staging is not None
        return locations.child(self.database_location, self.staging.name)

    def begin(self) -> None:
        now = self.ctx.clock()
        self.staging = self.target.sibling(locations.staging_table_name(locations.new_token(now)))
        self.txn = self.ctx.store.table_txns.add(
            statement_id=self.ctx.statement_id,
            engine_id=self.ctx.engine_id,
            operation=TableOperation.CREATE,
            database_name=self.target.database,
            table_name=self.target.name,
            staging_table=self.staging.name,
            staging_location=self.staging_location,
            target_location=self.target_location,
            now=now,
        )

    def write(self) -> None:
        assert self.staging is not None
        statement, user_sql = self.statement, self.ctx.user_sql
        # Spark's own CTAS, with the user's clauses and query as written, into the staging
        # table: Spark registers it only once all its data is written.
        prefix = f"CREATE TABLE {self.staging.sql}"
        ran = (
            prefix
            + user_sql[statement.clauses_offset : statement.query_offset + len(statement.query)]
        )
        names = {
            self.staging.quoted: self.target.quoted,
            f"`{self.staging.name}`": f"`{self.target.name}`",
        }
        with self._user_positions(ran, Shift(len(prefix), statement.clauses_offset), names):
            self.ctx.spark.sql(ran)

    def commit(self) -> CtasFacts:
        from pyspark.errors import AnalysisException

        assert self.staging is not None
        self._begin_commit()
        new_name = f"`{self.target.database}`.`{self.target.name}`"  # RENAME TO takes no catalog
        rename = f"ALTER TABLE {self.staging.sql} RENAME TO {new_name}"
        try:
            self.ctx.spark.sql(rename)
        except Exception as exc:
            if not self._renamed():
                self.abort(CommitFailed(f"Renaming into place failed: {exc}").recorded())
                condition = exc.getCondition() if isinstance(exc, AnalysisException) else None
                if condition == "TABLE_OR_VIEW_ALREADY_EXISTS":
                    # Created by someone else while we wrote: what Spark's CTAS would have said.
                    if self.statement.if_not_exists:
                        return {**self.record(), "outcome": "exists"}
                    raise catalog.spark_error(
                        self.ctx.spark,
                        "TABLE_OR_VIEW_ALREADY_EXISTS",
                        {"relationName": self.target.quoted},
                    ) from exc
                raise
            log.warning("rename of %s reported %s but took effect", self.target.quoted, exc)
        self._finish(catalog_clean=True)
        return {**self.record(), "outcome": "created", "location": self.target_location}

    def _renamed(self) -> bool:
        assert self.staging is not None
        existing = catalog.describe(self.ctx.spark, self.target)
        moved = existing is not None and _same_location(existing.location, self.target_location)
        return moved and catalog.describe(self.ctx.spark, self.staging) is None

    def abort(self, reason: RecordedError) -> None:
        if self.staging is None or not self._mark_aborted(reason):
            return
        assert self.txn is not None
        try:
            drop_staging_table(self.ctx.spark, self.ctx.store, self.txn, now=self.ctx.clock())
        except Exception:  # an engine's recovery sweep drops it later
            log.exception("dropping staging table %s failed", self.staging.quoted)
        self._remove_staging(self.staging_location)


@dataclass
class VersionedReplace(TwoPhaseTable):
    """REPLACE / CREATE OR REPLACE of an existing table: a new version, then switch."""

    existing: ExistingTable
    operation: TableOperation = field(default=TableOperation.REPLACE, init=False)
    version_location: str = field(default="", init=False)
    warnings: list[str] = field(default_factory=list, init=False)

    def begin(self) -> None:
        now = self.ctx.clock()
        name = locations.version_dir_name(self.target.name, locations.new_token(now))
        self.version_location = locations.child(self.database_location, name)
        self.txn = self.ctx.store.table_txns.add(
            statement_id=self.ctx.statement_id,
            engine_id=self.ctx.engine_id,
            operation=TableOperation.REPLACE,
            database_name=self.target.database,
            table_name=self.target.name,
            staging_location=self.version_location,
            target_location=self.version_location,
            previous_location=self.existing.location,
            now=now,
        )

    def write(self) -> None:
        statement = self.statement
        with self._user_positions(statement.query, Shift(0, statement.query_offset)):
            # The query is analyzed (checked, masked) as the user; writing it to the version's
            # directory is sparkgate's step, which a user's path write could not be.
            writer = self.ctx.spark.sql(statement.query).write.format(self.provider)
            for key, value in self.existing.storage_properties.items():
                if key.lower() not in ("path", "serialization.format"):
                    writer = writer.option(key, value)
            with identity.as_engine(self.ctx.spark):
                writer.mode("errorifexists").save(self.version_location)

    def commit(self) -> CtasFacts:
        txn = self._begin_commit()
        # The version readers see now: another replace may have committed since we began.
        current = catalog.describe(self.ctx.spark, self.target)
        if current is not None and current.location != txn.previous_location:
            self.existing = current
            self.ctx.store.table_txns.set_previous_location(txn.id, current.location)
        location = _sql_string(self.version_location)
        try:
            self.ctx.spark.sql(f"ALTER TABLE {self.target.sql} SET LOCATION {location}")
        except Exception as exc:
            if not self._switched():
                self.abort(CommitFailed(f"Switching failed: {exc}").recorded())
                raise
            log.warning("location switch of %s reported %s but took effect", self.target, exc)
        now = self.ctx.clock()
        self._finish(retire_after=now + self.ctx.settings.table_version_grace)
        self._align_metadata()
        facts: CtasFacts = {
            **self.record(),
            "outcome": "replaced",
            "location": self.version_location,
            "previous_location": self.existing.location,
            "previous_kept_until": now + self.ctx.settings.table_version_grace,
        }
        if self.warnings:
            facts["warnings"] = self.warnings
        return facts

    def _switched(self) -> bool:
        existing = catalog.describe(self.ctx.spark, self.target)
        return existing is not None and _same_location(existing.location, self.version_location)

    def _align_metadata(self) -> None:
        """TBLPROPERTIES and COMMENT as the replacing statement says. Readers do not depend
        on them, so they follow the switch; a failure here is reported, not fatal."""
        spark, table = self.ctx.spark, self.target.sql
        wanted = dict(self.statement.properties)
        current = {
            k: v
            for k, v in self.existing.properties.items()
            if not k.startswith(_MANAGED_PROPERTIES)
        }
        try:
            stale = [k for k in current if k not in wanted]
            if stale:
                keys = ", ".join(_sql_string(k) for k in stale)
                spark.sql(f"ALTER TABLE {table} UNSET TBLPROPERTIES IF EXISTS ({keys})")
            changed = {k: v for k, v in wanted.items() if current.get(k) != v}
            if changed:
                pairs = ", ".join(
                    f"{_sql_string(k)} = {_sql_string(v)}" for k, v in changed.items()
                )
                spark.sql(f"ALTER TABLE {table} SET TBLPROPERTIES ({pairs})")
            if (self.statement.comment or None) != (self.existing.comment or None):
                comment = (
                    "NULL"
                    if self.statement.comment is None
                    else _sql_string(self.statement.comment)
                )
                spark.sql(f"COMMENT ON TABLE {table} IS {comment}")
        except Exception as exc:
            self.warnings.append(f"table properties or comment not updated: {exc}")

    def abort(self, reason: RecordedError) -> None:
        if not self.version_location or not self._mark_aborted(reason):
            return
        self._remove_staging(self.version_location)


class CtasStatusHook:
    """Binds a two-phase table to its statement: created -> begin, finished -> commit,
    failed / cancelled -> abort (the seed's CtasJobStatusHook)."""

    def __init__(self, table: TwoPhaseTable) -> None:
        self.table = table

    def on_created(self) -> None:
        self.table.begin()

    def on_finished(self, result: ExecResult) -> None:
        started = time.perf_counter()
        facts = self.table.commit()
        elapsed_ms = round((time.perf_counter() - started) * 1000, 1)
        result.output["ctas"] = {**facts, "commit_ms": elapsed_ms}

    def on_failed(self, error: BaseException) -> None:
        message = error.recorded.message if isinstance(error, DescribedError) else str(error)
        self.table.abort(QueryFailed(message[:2000]).recorded())

    def on_cancelled(self) -> None:
        self.table.abort(Cancelled("The query was cancelled.").recorded())

    def __repr__(self) -> str:
        return f"CtasStatusHook({self.table.target.quoted})"


def drop_staging_table(
    spark: SparkSession, store: Store, txn: TableTxnRecord, *, now: float
) -> None:
    """Make sure an aborted create's staging table is not in the catalog (any engine may)."""
    if txn.staging_table is None:
        return
    staging = Target(txn.database_name, txn.staging_table)
    spark.sql(f"DROP TABLE IF EXISTS {staging.sql}")
    store.table_txns.set_catalog_clean(txn.id, now=now)


def _same_location(a: str | None, b: str | None) -> bool:
    if a is None or b is None:
        return False
    pa, pb = locations.local_path(a), locations.local_path(b)
    if pa is not None and pb is not None:
        return pa == pb
    return a.rstrip("/") == b.rstrip("/")


def _sql_string(value: str) -> str:
    return "'" + value.replace("\\", "\\\\").replace("'", "\\'") + "'"
