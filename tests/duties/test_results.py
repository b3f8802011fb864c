"""Result retention removes old result files, never one still being written."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from sparkgate.duties.results import expire_audit_events, expire_results
from sparkgate.settings import Settings
from sparkgate.store import Store
from sparkgate.store.audit import TableUseEvent
from tests.conftest import NOW, force_state


def _result_dir(root: Path, name: str, mtime: float) -> Path:
    directory = root / name
    directory.mkdir(parents=True)
    (directory / "data.arrow").write_bytes(b"x")
    os.utime(directory, (mtime, mtime))
    return directory


def test_old_results_go_and_partial_ones_wait_for_their_writer(
    store: Store, make_session: Any, tmp_path: Path
) -> None:
    settings = Settings(home=tmp_path, result_retention=3600)
    root = settings.resolved_results_dir
    session = make_session()
    writing = store.statements.add(session.id, "SELECT 1", now=NOW)
    force_state(store, "statements", writing.id, "running")
    crashed = store.statements.add(session.id, "SELECT 2", now=NOW)
    force_state(store, "statements", crashed.id, "failed")
    old = _result_dir(root, "1", NOW - 7200)
    recent = _result_dir(root, "2", NOW - 60)
    still_writing = _result_dir(root, f"{writing.id}.tmp", NOW - 7200)
    abandoned = _result_dir(root, f"{crashed.id}.tmp", NOW - 7200)

    removed = expire_results(store, settings, now=NOW)

    assert removed == sorted(["1", f"{crashed.id}.tmp"])
    assert not old.exists() and not abandoned.exists()
    assert recent.exists() and still_writing.exists()
    forever = settings.model_copy(update={"result_retention": 0})
    assert expire_results(store, forever, now=NOW + 10**9) == []


def test_audit_events_past_the_retention_go_in_batches(
    store: Store, tmp_path: Path, monkeypatch: Any
) -> None:
    """The access history's events and the rest of the log alike; the newer ones stay."""
    import sparkgate.duties.results as duty

    day = 86400.0
    uses = [
        TableUseEvent("bob", "rest", n, "spark_catalog.hr.t", "SELECT", True) for n in range(25)
    ]
    store.audit.add_uses(uses, now=NOW - 40 * day)
    store.audit.add("session.create", "ok", now=NOW - 40 * day, user="bob")
    store.audit.add_uses(uses[:3], now=NOW - day)
    monkeypatch.setattr(duty, "PRUNE_BATCH", 10)  # three batches and a last short one

    assert expire_audit_events(store, Settings(home=tmp_path, audit_retention_days=0), now=NOW) == 0
    assert (
        expire_audit_events(store, Settings(home=tmp_path, audit_retention_days=30), now=NOW) == 26
    )
    kept = store.audit.list_page().items
    assert [(e.at, e.query_id) for e in kept] == [(NOW - day, n) for n in (2, 1, 0)]
