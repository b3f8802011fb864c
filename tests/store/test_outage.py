"""A store out of reach is told from a store that refused a write."""

from __future__ import annotations

import sqlite3

import pytest
import sqlalchemy as sa

from sparkgate.errors import StoreUnavailable
from sparkgate.store import Store
from sparkgate.store.outage import is_unreachable


def test_connection_failures_are_outages_and_refusals_are_not() -> None:
    refused_connection = sa.exc.OperationalError("SELECT 1", {}, ConnectionRefusedError())
    assert is_unreachable(refused_connection)
    assert is_unreachable(sa.exc.TimeoutError("QueuePool limit reached"))
    locked = sa.exc.OperationalError("x", {}, sqlite3.OperationalError("database is locked"))
    assert is_unreachable(locked)
    missing = sa.exc.OperationalError("x", {}, sqlite3.OperationalError("no such table: t"))
    assert not is_unreachable(missing)
    assert not is_unreachable(sa.exc.IntegrityError("x", {}, ValueError("duplicate key")))
    assert not is_unreachable(ValueError("not a store error"))
    wrapped = RuntimeError("recording failed")
    wrapped.__cause__ = refused_connection
    assert is_unreachable(wrapped)


def test_a_store_nobody_answers_for_says_store_unavailable() -> None:
    from sparkgate_dev import free_port

    store = Store.open(f"postgresql+psycopg://postgres@127.0.0.1:{free_port()}/test", hints=False)
    try:
        with pytest.raises(StoreUnavailable) as caught, store.db.read() as conn:
            conn.execute(sa.text("SELECT 1"))
        assert caught.value.code == "STORE_UNAVAILABLE"
        assert "cannot be reached" in caught.value.message
    finally:
        store.close()
