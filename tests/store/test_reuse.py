"""Result reuse in the store (``store.reuse``), on SQLite and PostgreSQL: table versions bumped
by writers racing, session and engine contexts, kept results found by key until they expire,
what a reused query reused."""

from __future__ import annotations

from typing import Any

from sparkgate.states import EngineKind
from sparkgate.store import Store
from sparkgate.store.reuse import KeptResult, PolicyUse, Reused, TableState
from tests.concurrency import race
from tests.conftest import NOW

ORDERS = "spark_catalog.sales.orders"


def kept(statement_id: int, key: str = "k" * 64, expires_at: float = NOW + 60) -> KeptResult:
    return KeptResult(
        statement_id=statement_id,
        reuse_key=key,
        owner="bob",
        tables=(TableState(ORDERS, 2, "file:/w/sales.db/orders", "3:10:99:1:2"),),
        policy=(PolicyUse(ORDERS, None, "d1"), PolicyUse(ORDERS, "ann", "d2")),
        result_bytes=1234,
        created_at=NOW,
        expires_at=expires_at,
    )


def test_versions_start_at_zero_and_every_write_bumps_them(store: Store) -> None:
    assert store.reuse.available()
    assert store.reuse.versions([ORDERS]) == {ORDERS: (0, 0.0)}
    store.reuse.bump([ORDERS.upper(), ORDERS], now=NOW)  # one bump per table per write
    assert store.reuse.versions([ORDERS]) == {ORDERS: (1, NOW)}
    # Writers racing (engines ending writes at once): no bump is lost, none fails.
    race(*[lambda: store.reuse.bump([ORDERS], now=NOW + 1) for _ in range(6)])
    assert store.reuse.versions([ORDERS]) == {ORDERS: (7, NOW + 1)}


def test_a_session_context_says_after_which_statement_it_holds(
    store: Store, make_session: Any
) -> None:
    session = make_session()
    assert store.reuse.session_context(session.id) is None
    store.reuse.set_session_context(session.id, -1, "c0", now=NOW)
    store.reuse.set_session_context(session.id, 0, "c1", now=NOW)
    found = store.reuse.session_context(session.id)
    assert found is not None and (found.after_seq, found.context) == (0, "c1")
    with store.db.begin() as conn:
        assert store.reuse.advance_session(session.id, 0, 1, conn=conn)
        assert not store.reuse.advance_session(session.id, 0, 1, conn=conn)  # moved already
    found = store.reuse.session_context(session.id)
    assert found is not None and (found.after_seq, found.context) == (1, "c1")
    store.reuse.set_session_context(session.id, 2, None, now=NOW)  # nothing may be reused
    found = store.reuse.session_context(session.id)
    assert found is not None and found.context is None


def test_fresh_contexts_are_those_of_live_engines(store: Store, make_engine: Any) -> None:
    live = make_engine(EngineKind.SHARED)
    gone = make_engine(EngineKind.SHARED, state="lost")
    store.reuse.set_engine_context(live.id, "fresh", now=NOW)
    store.reuse.set_engine_context(gone.id, "old", now=NOW)
    assert store.reuse.fresh_contexts() == {"fresh"}
    other = make_engine(EngineKind.SHARED)
    store.reuse.set_engine_context(other.id, "another", now=NOW)
    assert store.reuse.fresh_contexts() == {"fresh", "another"}  # they disagree: no reuse


def test_kept_results_are_found_newest_first_until_they_expire(
    store: Store, make_session: Any
) -> None:
    session = make_session()
    first, second = (store.statements.add(session.id, "SELECT 1", now=NOW) for _ in "ab")
    store.reuse.keep(kept(first.id))
    store.reuse.keep(kept(second.id))
    store.reuse.keep(kept(second.id, key="x" * 64))
    found = store.reuse.candidates("k" * 64, now=NOW)
    assert [k.statement_id for k in found] == [second.id, first.id]
    assert found[0].tables == kept(0).tables and found[0].policy == kept(0).policy
    assert found[0].result_bytes == 1234
    assert store.reuse.candidates("k" * 64, now=NOW + 61) == []  # past their time to live
    store.reuse.forget([found[0].id or 0])
    assert [k.statement_id for k in store.reuse.candidates("k" * 64, now=NOW)] == [first.id]
    assert store.reuse.expire(now=NOW + 61) == 2
    assert store.reuse.candidates("x" * 64, now=NOW) == []


def test_a_reused_query_says_what_it_reused(store: Store, make_session: Any) -> None:
    session = make_session()
    source, again = (store.statements.add(session.id, "SELECT 1", now=NOW) for _ in "ab")
    with store.db.begin() as conn:
        store.reuse.record_reused(again.id, Reused(source.id, 1.5, 2.5), conn=conn)
    assert store.reuse.reused_of_many([source.id, again.id]) == {
        again.id: Reused(source.id, 1.5, 2.5)
    }
    assert store.reuse.reused_of_many([]) == {}
