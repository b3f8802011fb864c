"""Cancels: a statement the store says is cancelling has its Spark jobs cancelled, by their
tag, again and again until its thread ends.

Apart from the claims because a cancel is repeated (a single one misses a job the statement
starts next) and because the loop, the shut-down and Spark Connect operations all cancel
jobs the same way.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING

from sparkgate.engine.execution import Execution
from sparkgate.engine.shared import Shared
from sparkgate.states import StatementState

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

log = logging.getLogger("sparkgate.engine")

# How long to keep repeating a cancel: a query between two Spark jobs (planning, or a
# broadcast then the main job) is not hit by a single cancel. See SPARK-NOTES.md.
CANCEL_REPEAT = 0.2


def pass_on_cancels(shared: Shared, *, tick: int, read: bool = True) -> bool:
    """Cancel the jobs of statements the store says are being cancelled (read only when
    ``read``: a cancel hints the engine, and the safety poll reads too), and repeat the
    cancels not yet obeyed."""
    executions = shared.running_executions()
    if not executions:
        return False
    # Statements claimed in this tick were just read running; a cancel written since
    # hints us, which wakes the next tick, and that one reads their states.
    earlier = [e.statement.id for e in executions if e.claimed_in < tick] if read else []
    states = shared.store.statements.states(earlier) if earlier else {}
    acted = False
    now = shared.clock()
    for execution in executions:
        state = states.get(execution.statement.id)
        if state in (StatementState.CANCELLING, StatementState.CANCELLED):
            execution.cancelled.set()
        if execution.cancelled.is_set() and not execution.done:
            if now - execution.last_cancel >= CANCEL_REPEAT:
                cancel_jobs(shared.spark, execution)
                execution.last_cancel = now
            acted = True
    return acted


def cancel_jobs(spark: SparkSession | None, execution: Execution) -> None:
    if spark is None:
        return
    try:
        spark.sparkContext.cancelJobsWithTag(execution.tag)
    except Exception:
        log.exception("cancelling %s failed", execution.tag)
