"""Result reuse at the node: a read-only query is answered from an earlier result of the same
query, without running Spark, when the same normalised text ran in the same session context,
under the same access decisions for this user, and every table it read is unchanged (its
version in the store, its files). The reused query is still a query of its own: its record
(final at once, ``reused_from``), its audit, its access history (the reads, as this user), its
cost (zero) and what reuse saved.

The engine keeps results (``engine.reuse_keep``); this module finds one (two store reads when
there is none, nothing written) and serves it: the result's files are linked, not copied, under
the new query's id, so each query's result lives as long as its own retention says.
"""

from __future__ import annotations

import dataclasses
import logging
import os
import shutil
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from sqlalchemy.engine import Connection

from sparkgate.auth.principal import Principal
from sparkgate.auth.reuse_policy import decisions
from sparkgate.auth.users import Users
from sparkgate.settings import Settings
from sparkgate.sql.lexed import reuse_key
from sparkgate.statement_cost import COST_COLUMNS, StatementCost
from sparkgate.states import StatementState
from sparkgate.store import Store
from sparkgate.store.audit import TableUseEvent
from sparkgate.store.records import SessionRecord, StatementRecord
from sparkgate.store.reuse import KeptResult, Reused
from sparkgate.tables.files_state import files_state

log = logging.getLogger("sparkgate.service.reuse")

NO_COST = StatementCost.of([0] * len(COST_COLUMNS))


@dataclass(frozen=True)
class Found:
    """A kept result that holds for this user now, and the query that computed it."""

    kept: KeptResult
    source: StatementRecord
    saved: Reused
    uses: Sequence[TableUseEvent]  # the source's reads in its access history


class Moved(Exception):
    """The session moved on between the lookup and the write: run the query instead."""


class ResultReuse:
    def __init__(self, settings: Settings, store: Store, users: Users) -> None:
        self.settings = settings
        self.store = store
        self.users = users

    def on(self, asked: bool) -> bool:
        return asked and self.settings.reuse and self.store.reuse.available()

    # -- the context a query would run in -----------------------------------------------------

    def session_context(self, session: SessionRecord) -> str | None:
        """A session's context, if its engine reported it after the session's last statement
        (else a statement before this one may still change it: no reuse)."""
        found = self.store.reuse.session_context(session.id)
        if found is None or found.after_seq != session.statement_count - 1:
            return None
        return found.context

    def fresh_context(self, conf: dict[str, str] | None) -> str | None:
        """A one-off query's: what a fresh session starts with, when every live engine agrees
        (a query with settings of its own starts elsewhere: no reuse)."""
        if conf:
            return None
        found = self.store.reuse.fresh_contexts()
        return next(iter(found)) if len(found) == 1 else None

    # -- finding --------------------------------------------------------------------------

    def find(self, text: str, context: str, user: Principal, *, now: float) -> Found | None:
        stale: list[int] = []
        try:
            for kept in self.store.reuse.candidates(reuse_key(text, context), now=now):
                holds = self._holds(kept, user)
                if holds is None:
                    stale.append(kept.id or 0)
                    continue
                if not holds:
                    continue  # another user's rules: it may still serve them
                source = self.store.statements.get(kept.statement_id)
                info = source.result
                if source.state is not StatementState.SUCCESS or info is None or not info.path:
                    stale.append(kept.id or 0)
                    continue
                if not os.path.isdir(info.path):
                    stale.append(kept.id or 0)  # its files were removed (retention)
                    continue
                cost = self.store.statement_costs.of(source.id)
                run = (source.finished_at or 0.0) - (source.started_at or 0.0)
                cpu = cost.executor_cpu_time_ns / 1e9 if cost is not None else 0.0
                uses = [u for u in self.store.audit.uses_of(source.id) if u.allowed]
                return Found(kept, source, Reused(source.id, cpu, max(run, 0.0)), uses)
            return None
        finally:
            if stale:
                self.store.reuse.forget(stale)

    def _holds(self, kept: KeptResult, user: Principal) -> bool | None:
        """True: it may serve ``user``; False: not them (other rules); None: not anyone (a
        table under it changed)."""
        versions = self.store.reuse.versions(t.name for t in kept.tables)
        for table in kept.tables:
            if versions[table.name][0] != table.version:
                return None
            if table.location is not None:
                state = files_state(table.location)
                if state is None or state.digest != table.files:
                    return None
        rules = self.users.rules()
        facts = self.store.table_access.facts
        readers: dict[str | None, list[str]] = {}
        for use in kept.policy:
            readers.setdefault(use.reader, []).append(use.name)
        now_decided: dict[tuple[str | None, str], str] = {}
        for reader, names in readers.items():
            if reader is None:
                found = decisions(rules, facts, user.name, user.groups, names)
            else:
                found = decisions(rules, facts, reader, frozenset(), names)
            now_decided.update({(reader, name): digest for name, digest in found.items()})
        return all(now_decided[(use.reader, use.name)] == use.decision for use in kept.policy)

    # -- serving --------------------------------------------------------------------------

    def serve(
        self,
        found: Found,
        statement: StatementRecord,
        user: Principal,
        door: str,
        *,
        now: float,
        conn: Connection,
    ) -> StatementRecord:
        """Make ``statement`` (just added, running) the reused query: final, with its own link
        to the result's files, its reads in its access history, no cost and what it saved.
        In the caller's transaction; its files are removed if that fails (``discard``)."""
        info = found.source.result
        assert info is not None and info.path is not None
        path = self.link(info.path, statement.id)
        reads = sorted({t.name for t in found.kept.tables})
        store = self.store
        store.transitions.statement(
            statement.id,
            StatementState.SUCCESS,
            now=now,
            expected=[StatementState.RUNNING],
            conn=conn,
            result=dataclasses.replace(info, path=path),
            output={"tables": {"read": reads, "written": []}} if reads else None,
            progress=1.0,
        )
        if reads:
            store.statement_tables.add(statement.id, {"read": reads}, now=now, conn=conn)
        # The source's reads, as this query's: the same tables, columns, masks and filter
        # (the decisions are this user's too, or it would not be served).
        uses = [
            dataclasses.replace(use, user=user.name, door=door, query_id=statement.id)
            for use in found.uses
        ]
        store.audit.add_uses(uses, now=now, conn=conn)
        if store.statement_costs.available():
            store.statement_costs.add(statement.id, NO_COST, now=now, conn=conn)
        store.reuse.record_reused(statement.id, found.saved, conn=conn)
        log.info("query %s reused the result of query %s", statement.id, found.source.id)
        return dataclasses.replace(
            statement,
            state=StatementState.SUCCESS,
            result=dataclasses.replace(info, path=path),
            output={"tables": {"read": reads, "written": []}} if reads else None,
            progress=1.0,
            version=statement.version + 1,
            finished_at=now,
            updated_at=now,
        )

    def link(self, source: str, statement_id: int) -> str:
        """The result's files under the new query's id: hard links (no copy), made under a
        temporary name and renamed, as an engine publishes a result."""
        target = Path(self.settings.resolved_results_dir) / str(statement_id)
        tmp = target.with_name(target.name + ".tmp")
        shutil.rmtree(tmp, ignore_errors=True)
        tmp.mkdir(parents=True)
        try:
            for entry in os.scandir(source):
                os.link(entry.path, tmp / entry.name)
            os.replace(tmp, target)
        except BaseException:
            shutil.rmtree(tmp, ignore_errors=True)
            raise
        return str(target)

    def discard(self, statement_id: int) -> None:
        shutil.rmtree(Path(self.settings.resolved_results_dir) / str(statement_id), True)
