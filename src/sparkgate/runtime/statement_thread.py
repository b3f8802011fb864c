"""The engine's JVM helper for a statement's thread (``StatementThread`` in the engine's
extension jar): its set-up and take-down, and its result served as Arrow, each in one Py4J
call where PySpark makes several (see StatementThread.scala)."""

from __future__ import annotations

import threading
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

_CLASS = "sparkgate.authz.StatementThread$"
_REUSE = "sparkgate.authz.Reuse$"
_found: dict[tuple[int, str], Any] = {}  # by the JVM gateway's id and the class: one engine has one
_lock = threading.Lock()


def of(spark: SparkSession) -> Any:
    """The JVM's ``StatementThread`` object."""
    return scala_object(spark, _CLASS)


def engine_context(spark: SparkSession) -> str | None:
    """The context a result of ``spark`` (a session of the engine) is kept under for reuse
    (``Reuse.context``): its catalog and namespace, its ``spark.sql.*`` settings, its
    temporary views' and functions' names, hashed; None when the session turned reuse off
    (``SET use_cached_result = false``)."""
    return str(scala_object(spark, _REUSE).context(spark._jsparkSession)) or None


def scala_object(spark: SparkSession, name: str) -> Any:
    """A Scala object of the engine's extension jar (``Name$``), found once per JVM: its
    instance is the class's static MODULE$ field, which py4j cannot name otherwise."""
    key = (id(spark.sparkContext._gateway), name)
    with _lock:
        found = _found.get(key)
    if found is None:
        jvm = spark.sparkContext._jvm
        assert jvm is not None
        found = jvm.java.lang.Class.forName(name).getField("MODULE$").get(None)
        with _lock:
            _found[key] = found
    return found
