"""What each statement read and wrote, by table (``store.statement_tables``): recorded with the
statement's end, read back newest first by table name, only what the reader may see."""

from __future__ import annotations

from typing import Any

import sqlalchemy as sa

from sparkgate.states import SessionKind, StatementState
from sparkgate.store import Store, schema
from sparkgate.store.audit import TableUseEvent
from sparkgate.store.session_attributes import SessionAttributes
from sparkgate.store.statement_tables import READ, WRITE
from tests.conftest import NOW

SALARIES = "spark_catalog.hr.salaries"
ORDERS = "spark_catalog.sales.orders"


def _statement(
    store: Store, owner: str, *, created_by: str | None = None, state: str = "success"
) -> int:
    attributes = SessionAttributes(created_by=created_by) if created_by else None
    session = store.sessions.add(SessionKind.BATCH, now=NOW, owner=owner, attributes=attributes)
    statement = store.statements.add(session.id, "SELECT 1", now=NOW)
    with store.db.begin() as conn:
        conn.execute(
            sa.update(schema.statements)
            .where(schema.statements.c.id == statement.id)
            .values(state=state)
        )
    return statement.id


def test_recent_statements_of_a_table_newest_first_as_each_reader_may_see(store: Store) -> None:
    assert store.statement_tables.available()
    bob_read = _statement(store, "bob")
    dave_wrote = _statement(store, "dave", state="failed")
    made_for_erin = _statement(store, "erin", created_by="impersonator")
    with store.db.begin() as conn:
        store.statement_tables.add(
            bob_read, {"read": [SALARIES, ORDERS], "written": []}, now=NOW + 1, conn=conn
        )
    store.statement_tables.add(
        dave_wrote, {"read": [SALARIES], "written": ["Spark_Catalog.HR.Salaries"]}, now=NOW + 2
    )
    store.statement_tables.add(made_for_erin, {"read": [SALARIES]}, now=NOW + 3)
    store.statement_tables.add(made_for_erin, {"read": [], "written": []}, now=NOW + 4)

    def seen(**scope: Any) -> list[tuple[int, str | None, str, StatementState]]:
        uses = store.statement_tables.recent(SALARIES, **scope)
        return [(u.statement_id, u.owner, u.access, u.state) for u in uses]

    everyone = seen()
    assert everyone[0] == (made_for_erin, "erin", READ, StatementState.SUCCESS)
    # A statement that read and wrote the table is there twice, names kept lower-case.
    assert sorted(everyone[1:3]) == [
        (dave_wrote, "dave", READ, StatementState.FAILED),
        (dave_wrote, "dave", WRITE, StatementState.FAILED),
    ]
    assert everyone[3] == (bob_read, "bob", READ, StatementState.SUCCESS)
    assert seen(owner="bob") == [(bob_read, "bob", READ, StatementState.SUCCESS)]
    assert seen(owner="carol") == []
    # An impersonator sees what it made for others, as in every list.
    assert [u[0] for u in seen(owner="impersonator", creator="impersonator")] == [made_for_erin]
    assert [u[0] for u in seen(limit=2)] == [made_for_erin, dave_wrote]
    assert [u.statement_id for u in store.statement_tables.recent(ORDERS)] == [bob_read]
    assert store.statement_tables.recent("spark_catalog.hr.other") == []


def test_names_no_column_can_hold_are_left_out(store: Store) -> None:
    statement = _statement(store, "bob")
    store.statement_tables.add(statement, {"read": ["", "x" * 800, SALARIES]}, now=NOW)
    assert [u.statement_id for u in store.statement_tables.recent(SALARIES)] == [statement]
    with store.db.read() as conn:
        count = conn.execute(sa.select(sa.func.count()).select_from(schema.statement_tables))
        assert count.scalar_one() == 1


def test_a_store_before_the_table_records_nothing(store: Store) -> None:
    store.migrate("0010_table_access")
    with store.db.engine.begin() as conn:
        conn.exec_driver_sql("DROP TABLE statement_reuse")
        conn.exec_driver_sql("DROP TABLE reusable_results")
        conn.exec_driver_sql("DROP TABLE reuse_contexts")
        conn.exec_driver_sql("DROP TABLE table_versions")
        conn.exec_driver_sql("DROP TABLE statement_progress")
        conn.exec_driver_sql("DROP TABLE saved_queries")
        conn.exec_driver_sql("DROP INDEX ix_audit_events_target_id")
        conn.exec_driver_sql("ALTER TABLE audit_events DROP COLUMN door")
        conn.exec_driver_sql("ALTER TABLE audit_events DROP COLUMN query_id")
        conn.exec_driver_sql("DROP TABLE engine_policies")
        conn.exec_driver_sql("DROP TABLE stream_costs")
        conn.exec_driver_sql("DROP TABLE statement_tags")
        conn.exec_driver_sql("DROP TABLE group_places")
        conn.exec_driver_sql("DROP TABLE group_counts")
        conn.exec_driver_sql("DROP TABLE resource_groups")
        conn.exec_driver_sql("DROP TABLE statement_costs")
        conn.exec_driver_sql("DROP TABLE statement_tables")
        conn.exec_driver_sql("UPDATE alembic_version SET version_num = '0010_table_access'")
    fresh = Store(store.db)
    assert not fresh.statement_tables.available()
    # Nor the access history's columns: its events are not written, the log reads without.
    assert not fresh.audit.history_available()
    fresh.audit.add_uses(
        [TableUseEvent("bob", "rest", 1, "spark_catalog.hr.t", "SELECT", True)], now=1.0
    )
    fresh.audit.add("session.create", "ok", now=2.0, user="bob")
    assert [(e.action, e.door) for e in fresh.audit.list_page().items] == [("session.create", None)]
    assert fresh.audit.list_page(door="rest").items == []
    # Asked again only after a while: an engine does not ask the schema on every statement.
    fresh.migrate()
    assert not fresh.statement_tables.available()
    assert Store(store.db).statement_tables.available()
