"""A cancelled query's cost counts the CPU its killed tasks spent (issue 60: it read
"0.000 s CPU, 12.079 s run"): Spark's executor reports no CPU time for a killed task, the
engine's executor plugin does (src/sparkgate/engine/authz/KilledTaskCpu.scala)."""

from __future__ import annotations

import time

from sparkgate.client import Client
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
    time.sleep(BURN_SECONDS)
    sg.cancel(submitted.id)
    done = sg.wait(submitted.id, timeout=60)
    assert done.state == "cancelled", done
    cost = done.cost
    assert cost is not None and cost.tasks > 0, done
    assert cost.executor_run_time_ms >= 1000, cost
    assert cost.executor_cpu_time_ns > 0, cost
    # One thread's CPU time within its run time; Spark rounds each task's run time down to
    # the millisecond, the CPU time is in nanoseconds.
    assert cost.executor_cpu_time_ns <= (cost.executor_run_time_ms + cost.tasks) * 1_000_000, cost
