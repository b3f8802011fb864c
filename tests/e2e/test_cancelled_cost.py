"""A cancelled query's cost counts the CPU its killed tasks spent (issue 60: it read
"0.000 s CPU, 12.079 s run"): Spark's executor reports no CPU time for a killed task, the
engine's executor plugin does (src/sparkgate/engine/authz/KilledTaskCpu.scala)."""

from __future__ import annotations

import time

from sparkgate.client import Client
from sparkgate.schemas.queries import Query
from sparkgate_dev import eventually
from tests.e2e.conftest import OpenSession

# One stage of tasks that never end by themselves, each a tight CPU loop: every task the
# query runs is killed by the cancel, so none reports CPU time of its own (as a broadcast's
# or a finished stage's tasks would).
ENDLESS = "SELECT sum(hash(id)) FROM range(100000000000)"
# How long the tasks burn CPU before the cancel.
BURN_SECONDS = 3.0


def test_a_cancelled_query_costs_the_cpu_its_killed_tasks_spent(
    sg: Client, interactive: OpenSession
) -> None:
    session = interactive()
    submitted = sg.submit(ENDLESS, session_id=session.id)
    eventually(lambda: sg.query(submitted.id).state == "running", timeout=60)
    began = time.monotonic()
    # While it runs, its answer counts its Spark tasks as its engine's heartbeat last did.
    running = eventually(lambda: _counted(sg, submitted.id), timeout=60)
    assert running.tasks_total is not None and running.tasks_done is not None, running
    assert 0 <= running.tasks_done < running.tasks_total, running
    assert running.progress == running.tasks_done / running.tasks_total, running
    listed = next(q for q in sg.queries(session_id=session.id).queries if q.id == submitted.id)
    assert listed.tasks_total == running.tasks_total, listed
    time.sleep(max(0.0, BURN_SECONDS - (time.monotonic() - began)))
    sg.cancel(submitted.id)
    done = sg.wait(submitted.id, timeout=60)
    assert done.state == "cancelled", done
    assert done.tasks_done is None and done.tasks_total is None, done  # its cost says now
    cost = done.cost
    assert cost is not None and cost.tasks > 0, done
    assert cost.executor_run_time_ms >= 1000, cost
    assert cost.executor_cpu_time_ns > 0, cost
    # One thread's CPU time within its run time; Spark rounds each task's run time down to
    # the millisecond, the CPU time is in nanoseconds.
    assert cost.executor_cpu_time_ns <= (cost.executor_run_time_ms + cost.tasks) * 1_000_000, cost


def _counted(sg: Client, query_id: int) -> Query | None:
    query = sg.query(query_id)
    return query if query.tasks_total else None
