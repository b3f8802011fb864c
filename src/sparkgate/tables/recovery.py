"""Finishing table writes that only an engine can finish, because they need the catalog.

The janitor (``tables.janitor``, on a server node) aborts orphaned writes and removes their
files, but it has no Spark: two things are left to whichever engine looks next.

- An aborted create whose staging table may be in the catalog (Spark registers it at the end
  of its CTAS; a crash right after leaves it there): ``DROP TABLE IF EXISTS``.
- A commit whose engine died during the switch: the catalog says whether the switch happened.
  If it did, the write is ``committed``; if not, ``aborted`` and its staging removed.

Every engine runs ``recover`` every ``table_recovery_interval`` seconds; each step is
idempotent and guarded by compare-and-set, so two engines doing it at once do no harm.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Any

from sparkgate.errors import EngineLost
from sparkgate.settings import Settings
from sparkgate.states import TableOperation, TableTxnState
from sparkgate.store import Store
from sparkgate.store.records import TableTxnRecord
from sparkgate.tables import catalog, locations
from sparkgate.tables.plan import Target
from sparkgate.tables.twophase import _same_location, drop_staging_table

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

log = logging.getLogger("sparkgate.tables.recovery")


def recover(spark: SparkSession, store: Store, settings: Settings, *, now: float) -> list[int]:
    """One pass; the ids of the writes it finished."""
    done = []
    for facts in store.table_txns.needing_catalog():
        txn = facts.txn
        try:
            if txn.state is TableTxnState.ABORTED:
                drop_staging_table(spark, store, txn, now=now)
            elif txn.state is TableTxnState.COMMITTING:
                _resolve(spark, store, settings, txn, now=now)
            done.append(txn.id)
        except Exception:
            log.exception("recovering table write %s failed; will retry", txn.id)
    return done


def _resolve(
    spark: SparkSession, store: Store, settings: Settings, txn: TableTxnRecord, *, now: float
) -> None:
    """A commit whose engine died: did the switch happen? The catalog knows."""
    target = Target(txn.database_name, txn.table_name)
    current = catalog.describe(spark, target)
    switched = current is not None and _same_location(current.location, txn.target_location)
    if txn.operation is TableOperation.CREATE and txn.staging_table is not None:
        # The rename moves the staging table away: if it is still there, it did not happen.
        staging = catalog.describe(spark, Target(txn.database_name, txn.staging_table))
        switched = switched and staging is None
    if switched:
        values: dict[str, Any] = {}
        if txn.operation is TableOperation.REPLACE:
            values["retire_after"] = now + settings.table_version_grace
        moved = store.transitions.table_txn(
            txn.id,
            TableTxnState.COMMITTED,
            now=now,
            expected=[TableTxnState.COMMITTING],
            catalog_clean=True,
            **values,
        )
        log.info("table write %s: its engine died after the switch; committed (%s)", txn.id, moved)
        return
    error = EngineLost(
        f"The engine of table write {txn.id} died before switching {target.quoted}; "
        "the table was left as it was."
    ).recorded()
    moved = store.transitions.table_txn(
        txn.id, TableTxnState.ABORTED, now=now, expected=[TableTxnState.COMMITTING], error=error
    )
    if not moved.applied:
        return
    aborted = store.table_txns.get(txn.id)
    drop_staging_table(spark, store, aborted, now=now)
    if locations.remove(txn.staging_location):
        store.table_txns.set_staging_removed(txn.id, now=now)
    log.info("table write %s: its engine died before the switch; aborted", txn.id)
