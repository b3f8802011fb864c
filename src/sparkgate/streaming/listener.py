"""Spark's streaming query events, handed to the supervisor. Engines only.

PySpark's own ``StreamingQueryListener`` turns every event into Python objects field by field,
some thirty py4j round trips per progress event: with 16 queries triggering every second its
listener fell minutes behind (measured with ``scripts/bench streams``). This listener
implements the same Java interface but asks for one thing per event: the progress as JSON, or
the run id and error condition of a terminated run. Spark calls it on its listener thread,
about 0.2 s after each micro-batch; it only records and wakes, never writes to the store, so
a slow store never holds up Spark's listener bus.

Listeners hear the queries of the SparkSession they were added to (one per session here).
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, Protocol

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

log = logging.getLogger("sparkgate.streams")


class ListenerSink(Protocol):
    def on_progress(self, run_id: str, progress_json: str) -> None: ...

    def on_terminated(self, run_id: str, condition: str | None) -> None: ...


class _JavaListener:
    """Implements ``PythonStreamingQueryListener`` through py4j (called from the JVM)."""

    def __init__(self, sink: ListenerSink) -> None:
        self._sink = sink

    def onQueryStarted(self, jevent: Any) -> None:
        pass

    def onQueryProgress(self, jevent: Any) -> None:
        try:
            progress = jevent.progress()
            self._sink.on_progress(progress.runId().toString(), progress.json())
        except Exception:
            log.exception("recording progress failed")

    def onQueryIdle(self, jevent: Any) -> None:
        pass

    def onQueryTerminated(self, jevent: Any) -> None:
        try:
            condition = jevent.errorClassOnException()
            self._sink.on_terminated(
                jevent.runId().toString(), condition.get() if condition.isDefined() else None
            )
        except Exception:
            log.exception("recording termination failed")

    class Java:
        implements = ["org.apache.spark.sql.streaming.PythonStreamingQueryListener"]


def add_listener(spark: SparkSession, sink: ListenerSink) -> Any:
    """Listen to ``spark``'s streaming queries; the handle to remove it with."""
    from py4j.java_gateway import java_import
    from pyspark import SparkContext
    from pyspark.java_gateway import ensure_callback_server_started

    # py4j logs every call back from the JVM at INFO: a line per micro-batch per query.
    logging.getLogger("py4j.clientserver").setLevel(logging.WARNING)
    ensure_callback: Callable[[Any], None] = ensure_callback_server_started  # untyped in PySpark
    gateway = SparkContext._gateway
    assert gateway is not None
    java_import(gateway.jvm, "org.apache.spark.sql.streaming.*")
    ensure_callback(gateway)
    handle = gateway.jvm.PythonStreamingQueryListenerWrapper(_JavaListener(sink))
    spark.streams._jsqm.addListener(handle)
    return handle


def remove_listener(spark: SparkSession, handle: Any) -> None:
    spark.streams._jsqm.removeListener(handle)
