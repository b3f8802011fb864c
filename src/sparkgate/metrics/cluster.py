"""The cluster's figures, computed from the store at each scrape.

Every node serves the same values (they come from the one store), labelled ``scope="cluster"``
so that a dashboard takes ``max by (...)`` across nodes instead of adding them up. Nothing is
kept in memory: a node that restarts, or a new one, reports the same figures at once.

Counters (``_total``) are counts of store rows; they fall only when rows are deleted (a stream
job deleted with its restarts), which Prometheus reads as a counter reset. Histograms are one
SQL aggregate each, a ``sum(case when value <= bound ...)`` per bucket: one pass over the rows.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator, Sequence
from typing import Any

import sqlalchemy as sa
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, HistogramMetricFamily
from prometheus_client.metrics_core import Metric
from prometheus_client.registry import Collector
from sqlalchemy.engine import Connection

from sparkgate.states import (
    ACTIVE_STREAM_QUERY_STATES,
    LIVE_ENGINE_STATES,
    TERMINAL_STATEMENT_STATES,
)
from sparkgate.store import Store, schema

SCOPE = "cluster"

# Bucket bounds, in seconds. Queries: an interactive lookup to an hour-long batch. Queue wait:
# a warm engine claims in tens of milliseconds; a cold JVM takes tens of seconds. Backoff: the
# retry policy's doubling from a second up to its default cap of an hour.
QUERY_SECONDS = (0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0, 300.0, 900.0, 3600.0)
QUEUE_SECONDS = (0.01, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0, 300.0)
BACKOFF_SECONDS = (1.0, 2.0, 5.0, 10.0, 30.0, 60.0, 300.0, 900.0, 3600.0)

_STREAM_LABELS = ["scope", "stream_id", "job", "query"]


class ClusterCollector(Collector):
    def __init__(self, store: Store, *, clock: Callable[[], float] = time.time) -> None:
        self.store = store
        self.clock = clock

    def _costs(self, conn: Connection) -> Iterator[Metric]:
        if self.store.statement_costs.available():  # a node on a schema before the costs
            yield from _costs_by_user(self.store.usage.by_user(conn))

    def collect(self) -> Iterator[Metric]:
        # One read transaction for the scrape, ended before the exposition text is written.
        with self.store.db.read() as conn:
            now = self.clock()
            families = [
                *_by_state(conn),
                *_queries(conn),
                _heartbeat_ages(conn, now),
                *_streams(conn),
                _deploy_decisions(conn),
                *self._costs(conn),
            ]
        return iter(families)


def _by_state(conn: Connection) -> Iterator[Metric]:
    for name, documentation, table in [
        ("sparkgate_sessions", "Sessions by kind and state", schema.sessions),
        ("sparkgate_engines", "Engines by kind and state", schema.engines),
    ]:
        family = GaugeMetricFamily(name, documentation, labels=["scope", "kind", "state"])
        for kind, state, count in conn.execute(_count_by_kind_and_state(table)):
            family.add_metric([SCOPE, str(kind), str(state)], _number(count))
        yield family


def _count_by_kind_and_state(table: sa.Table) -> sa.Select[Any]:
    return sa.select(table.c.kind, table.c.state, sa.func.count()).group_by(
        table.c.kind, table.c.state
    )


def _costs_by_user(totals: list[tuple[str | None, int, int]]) -> Iterator[Metric]:
    """What users' queries cost, as their engines recorded it: executor CPU and run seconds
    by user (no tags: their values are unbounded, each a series of its own)."""
    cpu = CounterMetricFamily(
        "sparkgate_query_executor_cpu_seconds",
        "Executor CPU time of ended queries' Spark tasks, by user",
        labels=["scope", "user"],
    )
    run = CounterMetricFamily(
        "sparkgate_query_executor_run_seconds",
        "Executor run time of ended queries' Spark tasks, by user",
        labels=["scope", "user"],
    )
    for user, cpu_ns, run_ms in totals:
        cpu.add_metric([SCOPE, user or ""], cpu_ns / 1e9)
        run.add_metric([SCOPE, user or ""], run_ms / 1e3)
    yield from (cpu, run)


def _queries(conn: Connection) -> Iterator[Metric]:
    st = schema.statements
    current = GaugeMetricFamily(
        "sparkgate_queries",
        "Queries (statements) by kind and state",
        labels=["scope", "kind", "state"],
    )
    submitted = CounterMetricFamily(
        "sparkgate_queries_submitted", "Queries submitted, by kind", labels=["scope", "kind"]
    )
    finished = CounterMetricFamily(
        "sparkgate_queries_finished",
        "Queries finished, by kind and final state (success, failed, cancelled)",
        labels=["scope", "kind", "state"],
    )
    # The three from one pass over the statements: every query is in exactly one state.
    terminal = {s.value for s in TERMINAL_STATEMENT_STATES}
    per_kind: dict[str, float] = {}
    for kind, state, count in conn.execute(_count_by_kind_and_state(st)):
        current.add_metric([SCOPE, str(kind), str(state)], _number(count))
        per_kind[str(kind)] = per_kind.get(str(kind), 0.0) + _number(count)
        if state in terminal:
            finished.add_metric([SCOPE, str(kind), str(state)], _number(count))
    for kind, count in per_kind.items():
        submitted.add_metric([SCOPE, kind], count)
    yield from (current, submitted, finished)

    yield _histogram(
        conn,
        "sparkgate_query_duration_seconds",
        "Run time of finished queries (finished_at - started_at), by kind",
        value=st.c.finished_at - st.c.started_at,
        buckets=QUERY_SECONDS,
        labels=[("kind", st.c.kind)],
        where=[st.c.finished_at.is_not(None), st.c.started_at.is_not(None)],
    )
    yield _histogram(
        conn,
        "sparkgate_query_queue_wait_seconds",
        "Time queries waited for an engine to take them (started_at - created_at), by kind",
        value=st.c.started_at - st.c.created_at,
        buckets=QUEUE_SECONDS,
        labels=[("kind", st.c.kind)],
        where=[st.c.started_at.is_not(None)],
    )


def _heartbeat_ages(conn: Connection, now: float) -> Metric:
    en = schema.engines
    family = GaugeMetricFamily(
        "sparkgate_engine_heartbeat_age_seconds",
        "Seconds since each live engine last heartbeat (as this node's clock sees it)",
        labels=["scope", "engine", "kind"],
    )
    query = sa.select(en.c.id, en.c.kind, en.c.heartbeat_at).where(
        en.c.state.in_([s.value for s in LIVE_ENGINE_STATES]), en.c.heartbeat_at.is_not(None)
    )
    for engine_id, kind, heartbeat_at in conn.execute(query):
        family.add_metric([SCOPE, str(engine_id), str(kind)], max(0.0, now - _number(heartbeat_at)))
    return family


def _streams(conn: Connection) -> Iterator[Metric]:
    sq, sj = schema.stream_queries, schema.stream_jobs
    sp, sr = schema.stream_progress, schema.stream_restarts
    for family_name, documentation, table in [
        ("sparkgate_stream_jobs", "Stream jobs by state", sj),
        ("sparkgate_stream_queries", "Streaming queries by state", sq),
    ]:
        family = GaugeMetricFamily(family_name, documentation, labels=["scope", "state"])
        query = sa.select(table.c.state, sa.func.count()).group_by(table.c.state)
        for state, count in conn.execute(query):
            family.add_metric([SCOPE, str(state)], _number(count))
        yield family

    # The newest progress sample of each active query: its current rates and batch time.
    active = sa.select(sq.c.id).where(sq.c.state.in_([s.value for s in ACTIVE_STREAM_QUERY_STATES]))
    latest = (
        sa.select(sp.c.query_id, sa.func.max(sp.c.id).label("id"))
        .where(sp.c.query_id.in_(active))
        .group_by(sp.c.query_id)
        .subquery()
    )
    query = sa.select(
        sq.c.id,
        sj.c.name,
        sq.c.name,
        sp.c.input_rows_per_second,
        sp.c.processed_rows_per_second,
        sp.c.batch_duration_ms,
    ).select_from(
        latest.join(sp, sp.c.id == latest.c.id)
        .join(sq, sq.c.id == latest.c.query_id)
        .outerjoin(sj, sj.c.id == sq.c.job_id)
    )
    input_rate = GaugeMetricFamily(
        "sparkgate_stream_input_rows_per_second",
        "Rows per second arriving at each active streaming query (its last batch)",
        labels=_STREAM_LABELS,
    )
    processed_rate = GaugeMetricFamily(
        "sparkgate_stream_processed_rows_per_second",
        "Rows per second each active streaming query processed (its last batch)",
        labels=_STREAM_LABELS,
    )
    batch = GaugeMetricFamily(
        "sparkgate_stream_batch_duration_seconds",
        "How long the last micro-batch of each active streaming query took",
        labels=_STREAM_LABELS,
    )
    for stream_id, job, query_name, rows_in, rows_processed, batch_ms in conn.execute(query):
        labels = [SCOPE, _text(stream_id), _text(job), _text(query_name)]
        if rows_in is not None:
            input_rate.add_metric(labels, _number(rows_in))
        if rows_processed is not None:
            processed_rate.add_metric(labels, _number(rows_processed))
        if batch_ms is not None:
            batch.add_metric(labels, _number(batch_ms) / 1000.0)
    yield from (input_rate, processed_rate, batch)

    restarts = CounterMetricFamily(
        "sparkgate_stream_restarts",
        "Restarts of streaming queries after a failure, and of stream jobs whose session or "
        'engine was lost (query="", stream_id="")',
        labels=_STREAM_LABELS,
    )
    job_id = sa.func.coalesce(sr.c.job_id, sq.c.job_id)
    query = (
        sa.select(sr.c.query_id, sj.c.name, sq.c.name, sa.func.count())
        .select_from(sr.outerjoin(sq, sq.c.id == sr.c.query_id).outerjoin(sj, sj.c.id == job_id))
        .group_by(sr.c.query_id, sj.c.name, sq.c.name)
    )
    for stream_id, job, query_name, count in conn.execute(query):
        labels = [SCOPE, _text(stream_id), _text(job), _text(query_name)]
        restarts.add_metric(labels, _number(count))
    yield restarts

    yield _histogram(
        conn,
        "sparkgate_stream_restart_backoff_seconds",
        "Backoff waited before each restart of a stream (query or job)",
        value=sr.c.delay,
        buckets=BACKOFF_SECONDS,
        labels=[],
        where=[],
    )


def _deploy_decisions(conn: Connection) -> Metric:
    jd = schema.job_decisions
    family = CounterMetricFamily(
        "sparkgate_deploy_decisions",
        "Decisions of deploys (plans included), by action (start-clean, resume, ...) and outcome",
        labels=["scope", "action", "outcome"],
    )
    query = sa.select(jd.c.action, jd.c.outcome, sa.func.count()).group_by(
        jd.c.action, jd.c.outcome
    )
    for action, outcome, count in conn.execute(query):
        family.add_metric([SCOPE, str(action), str(outcome)], _number(count))
    return family


def _histogram(
    conn: Connection,
    name: str,
    documentation: str,
    *,
    value: sa.ColumnElement[Any],
    buckets: Sequence[float],
    labels: Sequence[tuple[str, sa.ColumnElement[Any]]],
    where: Sequence[sa.ColumnElement[bool]],
) -> Metric:
    """A histogram of ``value`` over the rows matching ``where``, one series per label
    combination, computed by the database in one aggregate."""
    keys = [column for _, column in labels]
    counts = [sa.func.sum(sa.case((value <= bound, 1), else_=0)) for bound in buckets]
    query = sa.select(*keys, *counts, sa.func.count(), sa.func.sum(value)).where(*where)
    if keys:
        query = query.group_by(*keys)
    family = HistogramMetricFamily(name, documentation, labels=["scope", *(n for n, _ in labels)])
    for row in conn.execute(query):
        label_values = [_text(v) for v in row[: len(keys)]]
        cumulative = row[len(keys) : len(keys) + len(buckets)]
        bucket_counts = [(str(b), _number(c)) for b, c in zip(buckets, cumulative, strict=True)]
        family.add_metric(
            [SCOPE, *label_values],
            buckets=[*bucket_counts, ("+Inf", _number(row[-2]))],
            sum_value=_number(row[-1]),
        )
    return family


def _number(value: Any) -> float:
    """A count or sum as the database returns it (NULL: an aggregate over no rows)."""
    return float(value or 0)


def _text(value: Any) -> str:
    return "" if value is None else str(value)
