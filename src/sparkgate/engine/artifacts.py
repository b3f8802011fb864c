"""Whose files a Spark job sees: every session's artifacts kept apart, as Spark's own Connect
server keeps them.

An engine hosts many sessions in one SparkContext. Files, Python packages, archives and jars
added to a SparkContext are kept per "job artifact state" (a session's UUID); a job started
with no state fetches every file of every session into one directory, where two files of the
same name and other contents clash and fail every task (issue 39). So:

- Spark Connect sessions are isolated by Spark (``spark.sql.artifact.isolation.enabled``, set
  on every engine as Spark's ``SparkConnectServer`` sets it; see ``engine.spark``).
- A classic session of a shared engine (a ``newSession()``) is isolated too, and the thread
  that runs its statements is bound to its state (:func:`bind`), so that what its code adds
  (``sc.addPyFile``, ``sc.addFile``, ``sc.addArchive``, SQL ``ADD FILE``) is its own and
  every job it starts (SQL, DataFrames, RDDs) sees exactly its own files.
- The engine's root session (a dedicated engine's one session, a batch file's
  ``getOrCreate()``) keeps classic PySpark's shared files (``spark.submit.pyFiles`` and the
  rest): it is not isolated, and its thread is bound to nothing.

When a session ends, its files go with it (:func:`release_classic`, :func:`release_connect`).
"""

from __future__ import annotations

import logging
import os
import threading
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

log = logging.getLogger("sparkgate.engine")

ISOLATION = "spark.sql.artifact.isolation.enabled"
ALWAYS_APPLY_CLASSLOADER = "spark.sql.artifact.isolation.alwaysApplyClassloader"

# The session directory of the artifact state the current Python thread is bound to (the
# driver's own copies of what the session added), read by the driver's SparkFiles.
_bound = threading.local()
_patch_lock = threading.Lock()
_patched = False


def isolation_conf() -> dict[str, str]:
    """What Spark's ``SparkConnectServer`` sets before it starts the service (PySpark, which
    starts an engine's driver, sets the first to false for classic scripts)."""
    return {ISOLATION: "true", ALWAYS_APPLY_CLASSLOADER: "true"}


def share_root(spark: SparkSession) -> None:
    """The root session keeps classic PySpark's shared files: call before it runs anything
    (the setting is read once, at its first job)."""
    spark.conf.set(ISOLATION, "false")


def bind(spark: SparkSession) -> None:
    """Bind the calling thread's JVM thread (PySpark pins one to each Python thread) to the
    artifact state of ``spark``: none for a session that is not isolated (the root). Once
    per thread and session: a session's statements run on one thread of its own."""
    if getattr(_bound, "session", None) is spark:
        return
    jvm = spark.sparkContext._jvm
    assert jvm is not None
    state = spark._jsparkSession.artifactManager().state()  # null when not isolated
    holder = jvm.java.lang.Class.forName("org.apache.spark.JobArtifactSet$")
    field = holder.getDeclaredField("currentClientSessionState")
    field.setAccessible(True)
    field.get(holder.getField("MODULE$").get(None)).set(jvm.scala.Option.apply(state))
    _bound.session = spark
    _bound.uuid = None if state is None else str(state.uuid())
    if state is not None:
        _patch_driver_files()


def bound_uuid() -> str | None:
    """The UUID of the session the calling thread is bound to, if any."""
    return getattr(_bound, "uuid", None)


def _patch_driver_files() -> None:
    """The driver's copy of a file a bound thread adds is in ``<root>/<uuid>``, not in the
    root PySpark's ``SparkFiles`` names: so that ``import`` after ``sc.addPyFile`` and
    ``SparkFiles.get`` work in the session's code, the driver's SparkFiles looks in the bound
    session's directory. (Python workers are told their directory by Spark; not patched.)"""
    global _patched
    with _patch_lock:
        if _patched:
            return
        from pyspark.core.files import SparkFiles

        shared = SparkFiles.getRootDirectory.__func__  # type: ignore[attr-defined]

        def root_directory(cls: Any) -> str:
            root: str = shared(cls)
            uuid = bound_uuid()
            if uuid is None or cls._is_running_on_worker:
                return root
            return os.path.join(root, uuid)

        SparkFiles.getRootDirectory = classmethod(root_directory)  # type: ignore[method-assign,assignment]
        _patched = True


def release_classic(spark: SparkSession) -> None:
    """A classic session ended: drop what it added from the SparkContext and its files."""
    try:
        spark._jsparkSession.artifactManager().close()
    except Exception:
        log.warning("releasing a session's artifacts failed", exc_info=True)


def release_connect(root: SparkSession, user_id: str, session_id: str) -> None:
    """A Spark Connect session ended in sparkgate (killed, timed out, its engine stopping)
    without its client releasing it: close it in Spark's Connect service, which drops its
    artifacts, as a ReleaseSession would."""
    jvm = root.sparkContext._jvm
    assert jvm is not None
    try:
        service = (
            jvm.java.lang.Class.forName("org.apache.spark.sql.connect.service.SparkConnectService$")
            .getField("MODULE$")
            .get(None)
        )
        key = jvm.org.apache.spark.sql.connect.service.SessionKey.apply(user_id, session_id)
        manager = service.sessionManager()
        if manager.getIsolatedSessionIfPresent(key).isDefined():
            manager.closeSession(key, False)
            log.info("Connect session %s of %s closed", session_id, user_id)
    except Exception:
        log.warning("closing Connect session %s failed", session_id, exc_info=True)
