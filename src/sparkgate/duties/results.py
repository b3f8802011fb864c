"""Result retention: result files older than ``result_retention`` are removed; so are
Idempotency-Keys older than ``idempotency_key_ttl`` (what a repeat may answer, kept as long),
and audit events (the access history's too) older than ``audit_retention_days``.

The files are the truth: a result directory is read if it exists, and reading one that was
removed answers RESULT_GONE. Partial results (``<id>.tmp``) left by an engine that died while
writing are removed once their statement is no longer running.
"""

from __future__ import annotations

import logging
import os
import shutil

from sparkgate.settings import Settings
from sparkgate.states import ACTIVE_STATEMENT_STATES
from sparkgate.store import Store
from sparkgate.store.audit import PRUNE_BATCH
from sparkgate.tables.uploads import remove_orphans

log = logging.getLogger("sparkgate.results")


def expire_results(store: Store, settings: Settings, *, now: float) -> list[str]:
    """Remove result directories older than the retention; the names removed."""
    if settings.result_retention <= 0:
        return []
    root = settings.resolved_results_dir
    if not root.is_dir():
        return []
    cutoff = now - settings.result_retention
    old = []
    with os.scandir(root) as entries:
        for entry in entries:
            if entry.is_dir(follow_symlinks=False) and entry.stat().st_mtime < cutoff:
                old.append(entry.name)
    partial = [name for name in old if name.endswith(".tmp")]
    if partial:
        ids = [int(name.removesuffix(".tmp")) for name in partial if name[:-4].isdigit()]
        states = store.statements.states(ids)
        still_writing = {f"{i}.tmp" for i, s in states.items() if s in ACTIVE_STATEMENT_STATES}
        old = [name for name in old if name not in still_writing]
    for name in old:
        shutil.rmtree(root / name, ignore_errors=True)
    if old:
        log.info("removed %d result(s) older than %.0fs", len(old), settings.result_retention)
    return sorted(old)


def expire_uploads(settings: Settings, *, now: float) -> list[str]:
    """Remove the files of uploads and loads that a dead node or engine left behind."""
    removed = remove_orphans(settings.resolved_uploads_dir, now=now)
    if removed:
        log.info("removed %d upload(s) left behind", len(removed))
    return removed


def expire_idempotency_keys(store: Store, settings: Settings, *, now: float) -> int:
    """Forget the Idempotency-Keys past their lifetime; how many."""
    forgotten = store.idempotency.delete_expired(before=now - settings.idempotency_key_ttl)
    if forgotten:
        log.info(
            "forgot %d idempotency key(s) older than %.0fs", forgotten, settings.idempotency_key_ttl
        )
    return forgotten


# At most this many audit events are forgotten per pass (in batches of PRUNE_BATCH, one
# short transaction each): a store that kept years of history is pruned over a few passes instead
# of one long delete that holds the table.
_AUDIT_PRUNE_MAX = 100_000


def expire_audit_events(store: Store, settings: Settings, *, now: float) -> int:
    """Forget audit events older than the retention; how many."""
    if settings.audit_retention_days <= 0:
        return 0
    before = now - settings.audit_retention_days * 86400.0
    forgotten = 0
    while forgotten < _AUDIT_PRUNE_MAX:
        pruned = store.audit.prune(before=before, limit=PRUNE_BATCH)
        forgotten += pruned
        if pruned < PRUNE_BATCH:
            break
    if forgotten:
        log.info(
            "forgot %d audit event(s) older than %g days", forgotten, settings.audit_retention_days
        )
    return forgotten
