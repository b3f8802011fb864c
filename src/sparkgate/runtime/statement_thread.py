"""The engine's JVM helper for a statement's thread (``StatementThread`` in the engine's
extension jar): its set-up and take-down, and its result served as Arrow, each in one Py4J
call where PySpark makes several (see StatementThread.scala)."""

from __future__ import annotations

import threading
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

_CLASS = "sparkgate.authz.StatementThread$"
_found: dict[int, Any] = {}  # by the JVM gateway's id: one engine has one
_lock = threading.Lock()


def of(spark: SparkSession) -> Any:
    """The JVM's ``StatementThread`` object."""
    gateway = spark.sparkContext._gateway
    with _lock:
        found = _found.get(id(gateway))
    if found is None:
        jvm = spark.sparkContext._jvm
        assert jvm is not None
        found = jvm.java.lang.Class.forName(_CLASS).getField("MODULE$").get(None)
        with _lock:
            _found[id(gateway)] = found
    return found
