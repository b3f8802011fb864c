"""Result reuse, the engine's part: with a statement's end (in its transaction) the versions of
the tables it wrote are bumped, its session's context is recorded, and a read-only query's
result is kept for reuse when nothing can have changed under it while it ran.

A result is kept only if every one of these holds: reuse is on; it is one read-only SQL query
(``sql.lexed.reuse_text``); its plans read catalog tables and views only, with deterministic
expressions and no function of the user's (the extension's ``reusable``); its session's context
allows reuse; no table it read was written through sparkgate since it started, and no file
under one changed since it started; it read at least one table (a query of none, ``SELECT 1``
or ``range()``, is left to run: the benchmarks' and health checks' probes are such); its files
hold at most ``reuse_max_bytes``.
"""

from __future__ import annotations

import contextlib
import logging
import os
from pathlib import Path
from typing import TYPE_CHECKING

from sparkgate.auth.reuse_policy import decisions
from sparkgate.engine.execution import Execution
from sparkgate.engine.shared import Shared
from sparkgate.runtime.contract import ExecResult
from sparkgate.runtime.identity import ANONYMOUS
from sparkgate.sql.errors import SqlSyntaxError
from sparkgate.sql.lexed import LexedScript, reuse_key, reuse_text
from sparkgate.states import SessionKind, StatementKind
from sparkgate.store.reuse import KeptResult, PolicyUse, TableState
from sparkgate.tables.files_state import files_state

if TYPE_CHECKING:
    from sqlalchemy.engine import Connection

log = logging.getLogger("sparkgate.engine")

SYSTEM_READER = "@system"  # the extension's walk without table rules


def after_statement(
    shared: Shared,
    execution: Execution,
    outcome: ExecResult | BaseException,
    *,
    now: float,
    conn: Connection,
) -> None:
    """Called with the statement's end recorded (``conn``: its transaction)."""
    store = shared.store
    if not store.reuse.available():
        return
    statement = execution.statement
    written = (execution.touched or {}).get("written", [])
    if written:
        store.reuse.bump(written, now=now, conn=conn)
    session = execution.session
    before = session.reuse_context
    session.reuse_context = execution.context_after
    if session.record.kind is not SessionKind.BATCH:  # a one-off query's session ends now
        store.reuse.set_session_context(
            statement.session_id, statement.seq, execution.context_after, now=now, conn=conn
        )
    if isinstance(outcome, ExecResult) and before is not None:
        try:
            kept = _keepable(shared, execution, outcome, before, now=now, conn=conn)
        except Exception:
            log.exception("keeping the result of statement %s for reuse failed", statement.id)
            return
        if kept is not None:
            store.reuse.keep(kept, conn=conn)


def _keepable(
    shared: Shared,
    execution: Execution,
    outcome: ExecResult,
    context: str,
    *,
    now: float,
    conn: Connection,
) -> KeptResult | None:
    settings = shared.settings
    statement = execution.statement
    result = outcome.result
    if (
        not settings.reuse
        or statement.kind is not StatementKind.SQL
        or not execution.reusable
        or result is None
        or result.path is None
    ):
        return None
    try:
        text = reuse_text(LexedScript.of(statement.code))
    except SqlSyntaxError:
        return None
    if text is None:
        return None
    size = _size(Path(result.path))
    if size > settings.reuse_max_bytes:
        return None
    started = statement.started_at if statement.started_at is not None else now
    reads = sorted(set((execution.touched or {}).get("read", [])))
    if not reads:
        return None  # no table: nothing a repeat could be told unchanged by (SELECT 1, range)
    versions = shared.store.reuse.versions(reads, conn=conn)
    if any(changed >= started for _, changed in versions.values()):
        return None  # written through sparkgate while this query ran
    tables = []
    for name in reads:
        location = execution.locations.get(name)
        files = None
        if location is not None:
            state = files_state(location)
            if state is None or state.latest_ns >= int(started * 1e9):
                return None  # files we cannot look at, or changed while it ran
            files = state.digest
        tables.append(TableState(name, versions[name][0], location, files))
    policy = _policy(shared, execution, reads)
    if policy is None:
        return None
    ttl = min(settings.reuse_ttl, settings.result_retention or settings.reuse_ttl)
    return KeptResult(
        statement_id=statement.id,
        reuse_key=reuse_key(text, context),
        owner=execution.session.record.owner,
        tables=tuple(tables),
        policy=tuple(policy),
        result_bytes=size,
        created_at=now,
        expires_at=now + ttl,
    )


def _policy(shared: Shared, execution: Execution, reads: list[str]) -> list[PolicyUse] | None:
    """The decisions the reads took: for the statement's user (reader None), and for the owners
    of views it read (what a view reads is read with its owner's rights)."""
    if not reads:
        return []
    decider = shared.decider
    if decider is None:
        return None  # no policy we could state: not kept
    rules = decider.access.rules()
    facts = shared.store.table_access.facts
    session = execution.session.record
    user = session.owner or ANONYMOUS  # as the extension names a session without one
    by_reader: dict[str | None, set[str]] = {}
    for name in reads:
        readers = execution.readers.get(name) or (SYSTEM_READER,)
        for who in readers:
            mine = who in (SYSTEM_READER, user)
            by_reader.setdefault(None if mine else who, set()).add(name)
    uses: list[PolicyUse] = []
    for reader, names in sorted(by_reader.items(), key=lambda item: item[0] or ""):
        if reader is None:
            groups = frozenset(session.attributes.groups or ())
            found = decisions(rules, facts, user, groups, names)
        else:
            found = decisions(rules, facts, reader, frozenset(), names)
        uses.extend(PolicyUse(name, reader, found[name]) for name in sorted(names))
    return uses


def _size(path: Path) -> int:
    total = 0
    for root, _, files in os.walk(path):
        for name in files:
            with contextlib.suppress(OSError):
                total += os.stat(os.path.join(root, name)).st_size
    return total
