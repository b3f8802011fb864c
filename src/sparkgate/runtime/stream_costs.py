"""What a streaming query's micro-batches cost, from the engine's cost listener
(``QueryCosts.scala``): Spark marks each batch's jobs with the query's id, and the listener
sums their tasks' metrics under it until taken. Engines only."""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING

from sparkgate.runtime.statement_thread import scala_object
from sparkgate.statement_cost import StatementCost

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

log = logging.getLogger("sparkgate.streams")

_CLASS = "sparkgate.authz.QueryCosts$"


def take(spark: SparkSession, query_id: str, *, settle: bool = False) -> StatementCost | None:
    """What the query's tasks cost since the last take; None if none ended (or the engine
    runs without its extension jar, which counts nothing). ``settle``: it stopped; the
    listener first receives every task end Spark posted (up to 2 s)."""
    try:
        costs = scala_object(spark, _CLASS)
    except Exception:
        log.debug("no cost listener in this engine", exc_info=True)
        return None
    found = costs.streamCost(spark.sparkContext._jsc.sc(), query_id, settle)
    return None if found is None else StatementCost.from_json(str(found))
