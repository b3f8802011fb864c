"""What each statement's Spark tasks cost (``store.statement_costs``): recorded with the
statement's end, read back by id; a store before the table records nothing."""

from __future__ import annotations

import pytest
import sqlalchemy as sa

from sparkgate.statement_cost import StatementCost
from sparkgate.states import SessionKind
from sparkgate.store import Store
from sparkgate.store.resource_groups import GroupSpec
from sparkgate.store.usage import RESOURCE_GROUP, Usage
from tests.conftest import NOW

_LARGE = 3 * 2**40  # a terabyte-scale figure: the columns are 64-bit on both stores


def _cost(**figures: int) -> StatementCost:
    base = dict.fromkeys(StatementCost.__dataclass_fields__, 0)
    return StatementCost(**{**base, **figures})


def test_a_cost_is_recorded_and_read_back(store: Store) -> None:
    session = store.sessions.add(SessionKind.INTERACTIVE, now=NOW, owner="bob")
    ran, idle = (store.statements.add(session.id, "SELECT 1", now=NOW) for _ in range(2))
    cost = _cost(tasks=3, executor_cpu_time_ns=_LARGE, input_bytes=_LARGE + 1, input_records=7)
    with store.db.begin() as conn:
        store.statement_costs.add(ran.id, cost, now=NOW, conn=conn)
    assert store.statement_costs.of(ran.id) == cost
    assert store.statement_costs.of(idle.id) is None  # it ran no task
    with pytest.raises(sa.exc.IntegrityError):  # one cost per statement
        store.statement_costs.add(ran.id, cost, now=NOW)


def test_the_engines_figures_are_read_as_written() -> None:
    text = "[2,40,31000000,0,100,0,0,118,118,0,0,262144]"
    cost = StatementCost.from_json(text)
    assert cost == _cost(
        tasks=2,
        executor_run_time_ms=40,
        executor_cpu_time_ns=31_000_000,
        input_records=100,
        shuffle_read_bytes=118,
        shuffle_write_bytes=118,
        peak_execution_memory=262144,
    )
    assert StatementCost.from_json("null") is None
    with pytest.raises(ValueError, match="12 figures expected"):
        StatementCost.from_json("[1, 2]")


def test_a_store_before_the_table_records_nothing(store: Store) -> None:
    store.migrate("0011_statement_tables")
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
        conn.exec_driver_sql("UPDATE alembic_version SET version_num = '0011_statement_tables'")
    fresh = Store(store.db)
    assert not fresh.statement_costs.available()
    assert fresh.statement_costs.of(1) is None  # no table: no cost, and no error
    fresh.migrate()
    assert Store(store.db).statement_costs.available()


def test_usage_sums_exactly_the_queries_it_covers_by_user_and_day(store: Store) -> None:
    """Totals equal the sum over the queries of each user and day; ``since`` and ``until``
    bound by end time, ``owner`` keeps one user's."""
    day = 86400.0
    start = (NOW // day) * day  # a day's first second
    ended: list[tuple[str, float, StatementCost]] = []
    for number, (owner, at) in enumerate(
        [
            ("alice", start + 10),
            ("alice", start + 20.5),
            ("bob", start + 30),
            ("alice", start + day + 1),
            ("bob", start + 2 * day - 0.25),
        ]
    ):
        session = store.sessions.add(SessionKind.BATCH, now=NOW, owner=owner)
        statement = store.statements.add(session.id, "SELECT 1", now=NOW)
        cost = _cost(
            tasks=number + 1,
            executor_cpu_time_ns=_LARGE + number,
            executor_run_time_ms=1000 * number,
            input_bytes=7 * number,
        )
        store.statement_costs.add(statement.id, cost, now=at)
        ended.append((owner, at, cost))

    def expected(owner: str, since: float, until: float) -> tuple[int, int, int, int]:
        mine = [c for o, at, c in ended if o == owner and since <= at < until]
        return (
            len(mine),
            sum(c.tasks for c in mine),
            sum(c.executor_cpu_time_ns for c in mine),
            sum(c.input_bytes for c in mine),
        )

    def figures(usage: Usage) -> tuple[int, int, int, int]:
        cost = usage.cost
        return (usage.queries, cost.tasks, cost.executor_cpu_time_ns, cost.input_bytes)

    whole = store.usage.report()
    assert [(u.key, u.bucket) for u in whole] == [("alice", None), ("bob", None)]
    assert [figures(u) for u in whole] == [
        expected("alice", 0, 1e12),
        expected("bob", 0, 1e12),
    ]
    daily = store.usage.report(bucket=day)
    assert [(u.key, u.bucket) for u in daily] == [
        ("alice", start),
        ("alice", start + day),
        ("bob", start),
        ("bob", start + day),
    ]
    for usage in daily:
        assert usage.key is not None and usage.bucket is not None
        assert figures(usage) == expected(usage.key, usage.bucket, usage.bucket + day)
    # What a quota counts: CPU and run seconds since a time, over some users.
    spent = store.usage.spent(["bob", "nobody"], start + 30)
    bob_since = [c for o, at, c in ended if o == "bob" and at >= start + 30]
    assert spent == (
        sum(c.executor_cpu_time_ns for c in bob_since) / 1e9,
        sum(c.executor_run_time_ms for c in bob_since) / 1e3,
    )
    assert store.usage.spent([], start) == (0.0, 0.0)
    bobs = store.usage.report(owner="bob", since=start + 30, until=start + 2 * day - 0.25)
    assert [figures(u) for u in bobs] == [expected("bob", start + 30, start + 2 * day - 0.25)]
    with store.db.read() as conn:
        by_user = store.usage.by_user(conn)
    assert sorted(by_user) == [
        ("alice", *(sum(getattr(c, f) for o, _, c in ended if o == "alice") for f in _TIMES)),
        ("bob", *(sum(getattr(c, f) for o, _, c in ended if o == "bob") for f in _TIMES)),
    ]


_TIMES = ("executor_cpu_time_ns", "executor_run_time_ms")


def test_usage_sums_by_a_tags_value_and_by_resource_group(store: Store) -> None:
    """Untagged queries and queries placed in no group count under no key (None)."""
    with store.db.begin() as conn:
        store.resource_groups.sync(conn, [GroupSpec("adhoc", 10, 10), GroupSpec("etl", 10, 10)])
    placed = [
        ({"team": "finance", "project": "churn"}, "adhoc", 3),
        ({"team": "finance"}, "etl", 5),
        ({"team": "growth"}, "adhoc", 7),
        ({"project": "churn"}, None, 11),
        ({}, None, 13),
    ]
    for tags, group, tasks in placed:
        session = store.sessions.add(SessionKind.BATCH, now=NOW, owner="bob")
        statement = store.statements.add(
            session.id, "SELECT 1", now=NOW, tags=tags, resource_group=group
        )
        assert store.statements.tags_of(statement.id) == tags
        store.statement_costs.add(statement.id, _cost(tasks=tasks), now=NOW)

    def totals(rows: list[Usage]) -> dict[str | None, tuple[int, int]]:
        return {u.key: (u.queries, u.cost.tasks) for u in rows}

    assert totals(store.usage.report(by=("tag", "team"))) == {
        None: (2, 24),
        "finance": (2, 8),
        "growth": (1, 7),
    }
    assert totals(store.usage.report(by=("tag", "project"))) == {None: (3, 25), "churn": (2, 14)}
    assert totals(store.usage.report(by=RESOURCE_GROUP)) == {
        None: (2, 24),
        "adhoc": (2, 10),
        "etl": (1, 5),
    }


def test_a_streams_batches_add_to_its_statements_cost_and_usage(store: Store) -> None:
    """A streaming query's batches cost is recorded as it runs, a row per take, for the
    statement that started it: its query's cost grows, usage counts it once (a query) in
    each day it cost something, and a quota's figure includes it."""
    day = 86400.0
    start = (NOW // day) * day
    session = store.sessions.add(SessionKind.INTERACTIVE, now=NOW, owner="erin")
    saved = store.statements.add(session.id, "SAVE STREAM s TO noop", now=NOW)
    store.statement_costs.add(saved.id, _cost(tasks=1, executor_cpu_time_ns=5), now=start + 1)
    batches = [
        (start + 2, _cost(tasks=2, executor_cpu_time_ns=10, peak_execution_memory=64)),
        (start + 3, _cost(tasks=4, executor_cpu_time_ns=20, peak_execution_memory=16)),
        (start + day + 5, _cost(tasks=8, executor_cpu_time_ns=40, peak_execution_memory=32)),
    ]
    for at, cost in batches:
        store.statement_costs.add_stream(saved.id, 7, cost, now=at)
    assert store.statement_costs.of(saved.id) == _cost(
        tasks=15, executor_cpu_time_ns=75, peak_execution_memory=64
    )
    by_day = store.usage.report(owner="erin", bucket=day)
    assert [(u.bucket, u.queries, u.cost.tasks) for u in by_day] == [
        (start, 1, 7),
        (start + day, 1, 8),
    ]
    [whole] = store.usage.report(owner="erin")
    assert (whole.queries, whole.cost.tasks, whole.cost.executor_cpu_time_ns) == (1, 15, 75)
    assert store.usage.spent(["erin"], start + day) == (40 / 1e9, 0.0)
