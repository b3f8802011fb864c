"""Status reads and list pages use indexes: the plans of the store's own queries, on a store
with enough rows that a planner would rather scan a table that has no fitting index.

Each check runs a store method, catches the SQL it sends (with its parameters), and asks the
database for that statement's plan: SQLite's ``EXPLAIN QUERY PLAN`` must not ``SCAN`` the
statements or sessions table (``SEARCH`` is an index lookup or range); PostgreSQL's ``EXPLAIN``,
after ``ANALYZE``, must read the statements through an index, never by ``Seq Scan``.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from functools import partial
from typing import Any

import pytest
import sqlalchemy as sa
from sqlalchemy import event

from sparkgate.states import SessionState, StatementState
from sparkgate.store import Store, schema
from sparkgate.store.records import Window
from tests.conftest import NOW

SESSIONS = 2_000
STATEMENTS = 40_000
# Two busy owners, and one with a handful of sessions: the planner may start from the owner's
# sessions or from the statements in id order, but reads neither table whole.
OWNERS = ("alice", "bob")
RARE = "carol"


@pytest.fixture
def full(store: Store) -> Store:
    """``store`` with SESSIONS sessions and STATEMENTS finished statements, written in bulk."""
    sessions: list[dict[str, Any]] = [
        {
            "id": i,
            "kind": "interactive",
            "state": SessionState.IDLE.value if i % 10 else SessionState.DEAD.value,
            "owner": RARE if i % 500 == 0 else OWNERS[i % 2],
            "conf": {},
            "attributes": {},
            "statement_count": STATEMENTS // SESSIONS,
            "version": 1,
            "created_at": NOW,
            "last_activity_at": NOW,
            "updated_at": NOW,
        }
        for i in range(1, SESSIONS + 1)
    ]
    states = [StatementState.SUCCESS] * 45 + [StatementState.FAILED] * 4 + [StatementState.RUNNING]
    statements: list[dict[str, Any]] = [
        {
            "id": n,
            "session_id": 1 + n % SESSIONS,
            "seq": n // SESSIONS,
            "kind": "sql",
            "code": f"SELECT {n}",
            "state": states[n % len(states)].value,
            "progress": 1.0,
            "version": 3,
            "created_at": NOW + n,
            "updated_at": NOW + n,
        }
        for n in range(1, STATEMENTS + 1)
    ]
    with store.db.begin() as conn:
        conn.execute(sa.insert(schema.sessions), sessions)
        for start in range(0, STATEMENTS, 10_000):
            conn.execute(sa.insert(schema.statements), statements[start : start + 10_000])
    if store.db.dialect == "postgresql":
        with store.db.engine.connect().execution_options(isolation_level="AUTOCOMMIT") as conn:
            conn.exec_driver_sql("ANALYZE")
    return store


@contextmanager
def sent(store: Store) -> Iterator[list[tuple[str, Any]]]:
    """The statements (as the driver gets them, with their parameters) sent meanwhile."""
    caught: list[tuple[str, Any]] = []

    def catch(conn: Any, cursor: Any, statement: str, parameters: Any, *_: Any) -> None:
        caught.append((statement, parameters))

    event.listen(store.db.engine, "before_cursor_execute", catch)
    try:
        yield caught
    finally:
        event.remove(store.db.engine, "before_cursor_execute", catch)


def plan(store: Store, read: Callable[[], object]) -> list[str]:
    """The plan of the one SELECT that ``read`` sends, a line per step."""
    with sent(store) as caught:
        read()
    selects = [(sql, params) for sql, params in caught if sql.lstrip().upper().startswith("SELECT")]
    assert len(selects) == 1, selects
    sql, params = selects[0]
    explain = "EXPLAIN QUERY PLAN " if store.db.dialect == "sqlite" else "EXPLAIN "
    with store.db.engine.connect() as conn:
        rows = conn.exec_driver_sql(explain + sql, params).all()
    return [str(row[-1]) for row in rows]


def assert_indexed(store: Store, lines: list[str]) -> None:
    shown = "\n".join(lines)
    if store.db.dialect == "sqlite":
        # "SCAN t" reads the whole table, "SCAN t USING INDEX i" the whole index.
        scans = [line for line in lines if re.match(r"\s*SCAN (statements|sessions)\b", line)]
        assert not scans, f"a full scan in:\n{shown}"
        assert re.search(r"SEARCH statements USING", shown), shown
    else:
        assert not re.search(r"Seq Scan on (statements|sessions)\b", shown), shown
        # "Index Scan using ix on statements", or a bitmap: "Bitmap Index Scan on ix_statements_..."
        indexed = (
            r"Index (Only )?Scan( Backward)? using \w+ on statements|Scan on (ix|pk)_statements"
        )
        assert re.search(indexed, shown), shown


def test_status_read_is_one_lookup_by_key(full: Store) -> None:
    lines = plan(full, lambda: full.statements.find_with_session(STATEMENTS // 2))
    assert_indexed(full, lines)
    if full.db.dialect == "sqlite":
        assert "SEARCH statements USING INTEGER PRIMARY KEY (rowid=?)" in lines, lines
        assert "SEARCH sessions USING INTEGER PRIMARY KEY (rowid=?)" in lines, lines


DEEP = STATEMENTS // 4  # a cursor three quarters down the list, newest first

LISTS: dict[str, dict[str, Any]] = {
    "everyone's": {},
    "one owner's": {"owner": "alice"},
    "a rare owner's": {"owner": RARE},
    "one state": {"states": [StatementState.FAILED]},
    "one owner's, one state": {"owner": "bob", "states": [StatementState.RUNNING]},
    "one session's": {"session_id": 7},
}
# Lists whose filter and order one index serves: (id), (state, id), (session_id, id).
IN_ORDER = {"everyone's", "one state", "one session's"}


def test_keyset_pages_of_statements_use_indexes(full: Store) -> None:
    page = full.statements.list_page(
        newest_first=True, window=Window(limit=50, after=DEEP, count=False)
    )
    assert page.items and page.items[0].id == DEEP - 1
    for name, filters in LISTS.items():
        lines = plan(
            full,
            partial(
                full.statements.list_page,
                **filters,
                newest_first=True,
                window=Window(limit=50, after=DEEP, count=False),
            ),
        )
        assert_indexed(full, [f"-- {name}", *lines])
        if full.db.dialect == "sqlite" and name in IN_ORDER:
            # Read in the index's order: no sort of every matching row before the first one.
            assert not any("TEMP B-TREE" in line for line in lines), (name, lines)


def test_keyset_pages_of_sessions_use_indexes(full: Store) -> None:
    cases: dict[str, dict[str, Any]] = {
        "one owner's": {"owner": "alice"},
        "a rare owner's": {"owner": RARE},
        "one state": {"states": [SessionState.DEAD]},
    }
    for name, filters in cases.items():
        lines = plan(
            full,
            partial(
                full.sessions.list_page, **filters, window=Window(after=SESSIONS // 2, count=False)
            ),
        )
        shown = "\n".join([f"-- {name}", *lines])
        if full.db.dialect == "sqlite":
            assert not re.search(r"^\s*SCAN sessions\b", shown, re.MULTILINE), shown
        else:
            assert not re.search(r"Seq Scan on sessions\b", shown), shown


def test_a_tables_recent_statements_are_found_by_its_name(store: Store) -> None:
    """The catalog's recent queries of one table among many (``statement_tables``): read
    through (table_name, at), newest first, never by scanning what every statement read."""
    count, tables = 8_000, 200
    with store.db.begin() as conn:
        conn.execute(
            sa.insert(schema.sessions),
            [
                {
                    "id": i,
                    "kind": "batch",
                    "state": SessionState.DEAD.value,
                    "owner": RARE if i == 1 else OWNERS[i % 2],
                    "conf": {},
                    "attributes": {},
                    "statement_count": 1,
                    "version": 1,
                    "created_at": NOW,
                    "last_activity_at": NOW,
                    "updated_at": NOW,
                }
                for i in range(1, count + 1)
            ],
        )
        conn.execute(
            sa.insert(schema.statements),
            [
                {
                    "id": n,
                    "session_id": n,
                    "seq": 0,
                    "kind": "sql",
                    "code": f"SELECT * FROM t{n % tables}",
                    "state": StatementState.SUCCESS.value,
                    "progress": 1.0,
                    "version": 3,
                    "created_at": NOW + n,
                    "updated_at": NOW + n,
                }
                for n in range(1, count + 1)
            ],
        )
        conn.execute(
            sa.insert(schema.statement_tables),
            [
                {"statement_id": n, "table_name": f"s.t{n % tables}", "access": "read", "at": n}
                for n in range(1, count + 1)
            ],
        )
    if store.db.dialect == "postgresql":
        with store.db.engine.connect().execution_options(isolation_level="AUTOCOMMIT") as conn:
            conn.exec_driver_sql("ANALYZE")
    # Statement n read t<n % 200>, in session n: t1's are bob's, and the first is carol's.
    for name, owner in (("everyone's", None), ("one owner's", "bob"), ("a rare owner's", RARE)):
        read = partial(store.statement_tables.recent, "s.t1", owner=owner)
        assert read(), name
        shown = "\n".join([f"-- {name}", *plan(store, read)])
        if store.db.dialect == "sqlite":
            assert not re.search(r"^\s*SCAN (statement_tables|statements)\b", shown, re.M), shown
            assert "ix_statement_tables_table_name_at" in shown, shown
        else:
            # The planner may start from a rare owner's sessions, and hash a statements table
            # this small whole: its call. What every statement read is never read whole.
            assert not re.search(r"Seq Scan on statement_tables\b", shown), shown
            if owner is None:
                assert "ix_statement_tables_table_name_at" in shown, shown
