"""The table janitor: a background duty (under a lease, on any server node) that cleans up
after two-phase table writes. No Spark here: it works from the store and the filesystem.

- A pending write whose query ended (failed, cancelled, its session killed) or whose engine is
  gone (lost, stopped) will never be committed: abort it and remove its staged data.
- An aborted write whose staged data is still there (its engine died while aborting): remove it.
- A replaced table version past its grace period: remove it.

What needs the catalog (a staging table a crash left registered, a commit interrupted by its
engine's death) is finished by engines: see ``tables.recovery``.

The decisions are a pure function of the store's facts and the time:

    decide([TableTxnFacts(txn, StatementState.FAILED, EngineState.RUNNING)], now)
    -> [Abort(txn.id, {...}), RemoveStaging(txn.id, txn.staging_location)]
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass

from sparkgate.recorded import Orphaned, RecordedError
from sparkgate.states import (
    TERMINAL_ENGINE_STATES,
    TERMINAL_STATEMENT_STATES,
    TableTxnState,
)
from sparkgate.store import Store
from sparkgate.store.records import TableTxnFacts
from sparkgate.tables import locations

log = logging.getLogger("sparkgate.tables.janitor")


@dataclass(frozen=True)
class Abort:
    txn_id: int
    reason: RecordedError


@dataclass(frozen=True)
class RemoveStaging:
    txn_id: int
    location: str


@dataclass(frozen=True)
class RetireVersion:
    txn_id: int
    location: str


Action = Abort | RemoveStaging | RetireVersion


def decide(facts: Iterable[TableTxnFacts], now: float) -> list[Action]:
    actions: list[Action] = []
    for fact in facts:
        txn = fact.txn
        if txn.state is TableTxnState.PENDING:
            reason = _orphaned(fact)
            if reason is not None:
                actions += [Abort(txn.id, reason), RemoveStaging(txn.id, txn.staging_location)]
        elif txn.state is TableTxnState.ABORTED and txn.staging_removed_at is None:
            actions.append(RemoveStaging(txn.id, txn.staging_location))
        elif (
            txn.state is TableTxnState.COMMITTED
            and txn.previous_location is not None
            and txn.retired_at is None
            and txn.retire_after is not None
            and txn.retire_after <= now
        ):
            actions.append(RetireVersion(txn.id, txn.previous_location))
    return actions


def _orphaned(fact: TableTxnFacts) -> RecordedError | None:
    """Why nobody will ever commit this pending write (None: its query may still)."""
    txn = fact.txn
    if fact.statement_state is None or fact.statement_state in TERMINAL_STATEMENT_STATES:
        state = fact.statement_state.value if fact.statement_state else "gone"
        return Orphaned(
            f"Query {txn.statement_id} ended ({state}) before its table "
            f"`{txn.database_name}`.`{txn.table_name}` was committed."
        ).recorded()
    if fact.engine_state is None or fact.engine_state in TERMINAL_ENGINE_STATES:
        state = fact.engine_state.value if fact.engine_state else "gone"
        return Orphaned(
            f"Engine {txn.engine_id} of query {txn.statement_id} is {state}."
        ).recorded()
    return None


class TableJanitor:
    """``Duty("table-janitor", TableJanitor(store).run)``"""

    def __init__(self, store: Store, *, clock: Callable[[], float] = time.time) -> None:
        self.store = store
        self.clock = clock

    def run(self, now: float) -> list[Action]:
        """One round; the actions carried out."""
        done: list[Action] = []
        aborted: set[int] = set()
        refused: set[int] = set()
        for action in decide(self.store.table_txns.needing_janitor(now=now), now):
            try:
                if isinstance(action, Abort):
                    if not self._abort(action):
                        refused.add(action.txn_id)  # it moved on (committing): leave it be
                        continue
                    aborted.add(action.txn_id)
                elif isinstance(action, RemoveStaging):
                    if action.txn_id in refused or not locations.remove(action.location):
                        continue
                    self.store.table_txns.set_staging_removed(action.txn_id, now=self.clock())
                else:
                    if not locations.remove(action.location):
                        continue
                    self.store.table_txns.set_retired(action.txn_id, now=self.clock())
                done.append(action)
            except Exception:
                log.exception("table janitor: %s failed", action)
        if done:
            log.info("table janitor: %s", ", ".join(_describe(a) for a in done))
        return done

    def _abort(self, action: Abort) -> bool:
        moved = self.store.transitions.table_txn(
            action.txn_id,
            TableTxnState.ABORTED,
            now=self.clock(),
            expected=[TableTxnState.PENDING],
            error=action.reason,
        )
        return moved.applied


def _describe(action: Action) -> str:
    if isinstance(action, Abort):
        return f"aborted write {action.txn_id} ({action.reason.message})"
    if isinstance(action, RemoveStaging):
        return f"removed staging {action.location}"
    return f"removed replaced version {action.location}"
