"""The cluster's figures from a real store (SQLite and PostgreSQL): each family from rows put
there directly, histograms from their SQL aggregates."""

from __future__ import annotations

from typing import Any

import sqlalchemy as sa
from prometheus_client.metrics_core import Metric

from sparkgate.metrics.cluster import ClusterCollector
from sparkgate.statement_cost import StatementCost
from sparkgate.states import EngineKind, SessionKind, StatementKind
from sparkgate.store import Store, schema
from tests.conftest import NOW, force_state


def samples(families: list[Metric]) -> dict[tuple[str, frozenset[tuple[str, str]]], float]:
    return {(s.name, frozenset(s.labels.items())): s.value for f in families for s in f.samples}


def get(found: dict[Any, float], name: str, **labels: str) -> float:
    return found[(name, frozenset({"scope": "cluster", **labels}.items()))]


def add_statement(
    store: Store, session_id: int, state: str, started: float | None, finished: float | None
) -> None:
    statement = store.statements.add(session_id, "SELECT 1", now=NOW, kind=StatementKind.SQL)
    values = {"started_at": started, "finished_at": finished}
    force_state(store, "statements", statement.id, state, **values)


def test_queries_engines_and_their_histograms(
    store: Store, make_session: Any, make_engine: Any
) -> None:
    session = make_session()
    add_statement(store, session.id, "success", NOW + 0.02, NOW + 0.3)  # ran 0.28 s
    add_statement(store, session.id, "failed", NOW + 2, NOW + 7)  # waited 2 s, ran 5 s
    add_statement(store, session.id, "waiting", None, None)
    live = make_engine(EngineKind.SHARED, "running", heartbeat_at=NOW - 3)
    make_engine(EngineKind.DEDICATED, "stopped", heartbeat_at=NOW - 500)  # not live: no age

    found = samples(list(ClusterCollector(store, clock=lambda: NOW).collect()))

    sql = {"kind": "sql"}
    assert get(found, "sparkgate_queries", kind="sql", state="waiting") == 1
    assert get(found, "sparkgate_queries_submitted_total", **sql) == 3
    assert get(found, "sparkgate_queries_finished_total", **sql, state="success") == 1
    assert get(found, "sparkgate_queries_finished_total", **sql, state="failed") == 1
    duration = "sparkgate_query_duration_seconds"
    assert get(found, f"{duration}_bucket", **sql, le="0.25") == 0
    assert get(found, f"{duration}_bucket", **sql, le="0.5") == 1
    assert get(found, f"{duration}_bucket", **sql, le="5.0") == 2  # bounds are inclusive
    assert get(found, f"{duration}_bucket", **sql, le="+Inf") == 2
    assert get(found, f"{duration}_count", **sql) == 2
    assert abs(get(found, f"{duration}_sum", **sql) - 5.28) < 1e-6
    wait = "sparkgate_query_queue_wait_seconds"
    assert get(found, f"{wait}_bucket", **sql, le="0.01") == 0
    assert get(found, f"{wait}_bucket", **sql, le="0.05") == 1
    assert get(found, f"{wait}_bucket", **sql, le="2.5") == 2
    assert get(found, f"{wait}_count", **sql) == 2

    assert get(found, "sparkgate_engines", kind="shared", state="running") == 1
    age = "sparkgate_engine_heartbeat_age_seconds"
    assert get(found, age, engine=str(live.id), kind="shared") == 3.0
    assert len([k for k in found if k[0] == age]) == 1
    assert get(found, "sparkgate_sessions", kind="interactive", state="idle") == 1


def test_what_queries_cost_by_user(store: Store) -> None:
    """Counters of executor CPU and run seconds by user: the sums of their queries' costs."""
    for owner, cpu_ns, run_ms in (("alice", 1_500_000_000, 2000), ("alice", 250_000_000, 500)):
        session = store.sessions.add(SessionKind.BATCH, now=NOW, owner=owner)
        statement = store.statements.add(session.id, "SELECT 1", now=NOW)
        figures = dict.fromkeys(StatementCost.__dataclass_fields__, 0)
        figures.update(tasks=1, executor_cpu_time_ns=cpu_ns, executor_run_time_ms=run_ms)
        store.statement_costs.add(statement.id, StatementCost(**figures), now=NOW)

    found = samples(list(ClusterCollector(store, clock=lambda: NOW).collect()))

    assert get(found, "sparkgate_query_executor_cpu_seconds_total", user="alice") == 1.75
    assert get(found, "sparkgate_query_executor_run_seconds_total", user="alice") == 2.5
    assert [k for k in found if "executor_cpu" in k[0]] == [
        (
            "sparkgate_query_executor_cpu_seconds_total",
            frozenset({"scope": "cluster", "user": "alice"}.items()),
        )
    ]


def test_streams_and_deploy_decisions(store: Store, make_session: Any) -> None:
    session = make_session()
    times = {"created_at": NOW, "updated_at": NOW}
    with store.db.begin() as conn:

        def insert(table: sa.Table, **values: Any) -> int:
            key = conn.execute(table.insert().values(**values)).inserted_primary_key
            assert key is not None
            return int(key[0])

        job_id = insert(schema.stream_jobs, name="clicks", state="running", sql="...", **times)
        query_id = insert(
            schema.stream_queries,
            job_id=job_id,
            session_id=session.id,
            name="per_minute",
            state="running",
            spec={},
            **times,
        )
        stopped_id = insert(
            schema.stream_queries,
            session_id=session.id,
            name="old",
            state="stopped",
            spec={},
            **times,
        )
        for target, batch, rate in [(query_id, 1, 5.0), (query_id, 2, 10.0), (stopped_id, 1, 9.0)]:
            insert(
                schema.stream_progress,
                query_id=target,
                batch_id=batch,
                at=NOW,
                input_rows=100,
                input_rows_per_second=rate,
                processed_rows_per_second=rate * 2,
                batch_duration_ms=1500,
            )
        # Two restarts of the query after failures, one of the whole job (its engine was lost).
        for query, delay in [(query_id, 1.0), (query_id, 2.0), (None, 4.0)]:
            insert(
                schema.stream_restarts,
                job_id=job_id,
                query_id=query,
                attempt=1,
                failed_at=NOW,
                delay=delay,
                restart_at=NOW + delay,
            )
        deployment = insert(schema.deployments, state="succeeded", files={}, **times)
        for seq, action in enumerate(["start-clean", "nothing", "nothing"]):
            insert(
                schema.job_decisions,
                deployment_id=deployment,
                seq=seq,
                job=f"job{seq}",
                action=action,
                reason="...",
                outcome="done",
            )

    found = samples(list(ClusterCollector(store, clock=lambda: NOW).collect()))

    stream = {"stream_id": str(query_id), "job": "clicks", "query": "per_minute"}
    # The newest sample of each active query only: the stopped one reports no rates.
    assert get(found, "sparkgate_stream_input_rows_per_second", **stream) == 10.0
    assert get(found, "sparkgate_stream_processed_rows_per_second", **stream) == 20.0
    assert get(found, "sparkgate_stream_batch_duration_seconds", **stream) == 1.5
    rates = [k for k in found if k[0] == "sparkgate_stream_input_rows_per_second"]
    assert len(rates) == 1
    assert get(found, "sparkgate_stream_queries", state="running") == 1
    assert get(found, "sparkgate_stream_jobs", state="running") == 1
    assert get(found, "sparkgate_stream_restarts_total", **stream) == 2
    whole_job = {"stream_id": "", "job": "clicks", "query": ""}
    assert get(found, "sparkgate_stream_restarts_total", **whole_job) == 1
    backoff = "sparkgate_stream_restart_backoff_seconds"
    assert get(found, f"{backoff}_bucket", le="1.0") == 1
    assert get(found, f"{backoff}_bucket", le="5.0") == 3
    assert (get(found, f"{backoff}_count"), get(found, f"{backoff}_sum")) == (3, 7.0)
    decisions = "sparkgate_deploy_decisions_total"
    assert get(found, decisions, action="nothing", outcome="done") == 2
    assert get(found, decisions, action="start-clean", outcome="done") == 1


def test_an_empty_store_still_names_every_family(store: Store) -> None:
    families = list(ClusterCollector(store).collect())
    names = [f.name for f in families]
    assert len(names) == len(set(names)) and all(n.startswith("sparkgate_") for n in names)
    backoff = samples(families)
    # The ungrouped histogram has its zeros; grouped ones have no series until there are rows.
    assert get(backoff, "sparkgate_stream_restart_backoff_seconds_count") == 0
