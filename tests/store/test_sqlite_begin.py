"""How SQLite transactions begin: a write holds the write lock from its BEGIN (IMMEDIATE), a
read never takes it, and a BEGIN that meets a lock held too long is an outage, not a crash."""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator
from pathlib import Path

import pytest
import sqlalchemy as sa

from sparkgate.errors import StoreUnavailable
from sparkgate.store import Store
from sparkgate.store.database import writing


@pytest.fixture
def opened(tmp_path: Path) -> Iterator[tuple[Store, Path]]:
    path = tmp_path / "store.db"
    store = Store.open(f"sqlite:///{path}", hints=False)
    store.migrate()
    try:
        yield store, path
    finally:
        store.close()


def other_writer_can_begin(path: Path) -> bool:
    """Whether another process's writer could take SQLite's write lock right now."""
    other = sqlite3.connect(path, timeout=0, isolation_level=None)
    try:
        other.execute("BEGIN IMMEDIATE")
        other.execute("ROLLBACK")
        return True
    except sqlite3.OperationalError as exc:
        assert "locked" in str(exc)
        return False
    finally:
        other.close()


def test_a_write_holds_the_lock_from_its_begin_and_a_read_never_takes_it(
    opened: tuple[Store, Path],
) -> None:
    store, path = opened
    with store.db.begin() as conn:
        assert conn.in_transaction()
        assert not other_writer_can_begin(path)  # nothing written yet: IMMEDIATE
    assert other_writer_can_begin(path)
    with store.db.read() as conn:
        conn.execute(sa.text("SELECT count(*) FROM statements")).scalar_one()
        assert other_writer_can_begin(path)
    with writing(store.db.engine) as conn:  # as migrations check out theirs
        conn.execute(sa.text("SELECT 1"))  # begins on its own, IMMEDIATE too
        assert not other_writer_can_begin(path)
        conn.rollback()
    # The connection goes back to the pool as any other: its next transaction reads.
    with store.db.read() as conn:
        conn.execute(sa.text("SELECT 1"))
        assert other_writer_can_begin(path)


def test_a_begin_that_meets_a_lock_held_too_long_is_an_outage(
    opened: tuple[Store, Path],
) -> None:
    store, path = opened
    with store.db.read() as conn:  # the pool's connection, waiting 50 ms on a lock from now
        driver = conn.connection.driver_connection
        assert driver is not None
        driver.execute("PRAGMA busy_timeout=50")
    holder = sqlite3.connect(path, isolation_level=None)
    holder.execute("BEGIN IMMEDIATE")
    try:
        with pytest.raises(StoreUnavailable), store.db.begin():
            pytest.fail("the write began while another held the lock")
    finally:
        holder.execute("ROLLBACK")
        holder.close()
    with store.db.begin() as conn:  # the lock released: writes go on
        conn.execute(sa.text("SELECT 1"))
