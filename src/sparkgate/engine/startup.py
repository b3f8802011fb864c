"""Start: the engine's Spark driver started and made ready before the engine says ``running``
(executors waited for, access control installed, a first query run), or the start's failure
recorded.

Apart from the loop because it runs once, before any of it, and its failure has an outcome of
its own: the engine and its sessions fail, and a ``NO_EXECUTORS`` failure carries the back-off
that placement waits for before launching another engine like this one.
"""

from __future__ import annotations

import logging
import secrets
import tempfile
import time
from pathlib import Path
from typing import TYPE_CHECKING

from sparkgate.engine.authz import decider as authz
from sparkgate.engine.backoff import HISTORY, no_executors_error
from sparkgate.engine.sessions import end_session
from sparkgate.engine.shared import Shared
from sparkgate.recorded import ErrorCode, RecordedError
from sparkgate.runtime import identity
from sparkgate.runtime.failures import recorded_failure
from sparkgate.states import EngineState, SessionState
from sparkgate.store.records import EngineRecord

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

log = logging.getLogger("sparkgate.engine")


def start_spark(shared: Shared, record: EngineRecord) -> SparkSession:
    from sparkgate.engine.spark import build_spark, wait_for_executors

    if shared.settings.connect_port:
        # Only sparkgate's nodes learn it (from the engine's record in the store).
        shared.connect_secret = secrets.token_urlsafe(32)
    spark = build_spark(
        shared.settings,
        f"sparkgate-engine-{record.id}",
        record.conf,
        engine_id=record.id,
        kind=record.kind,
        connect_secret=shared.connect_secret,
    )
    try:
        wait_for_executors(spark, shared.settings.engine_executor_timeout)
    except BaseException:
        spark.stop()  # its application ends at the master
        raise
    return spark


def install_access_control(shared: Shared) -> None:
    """The extension in this driver asks the table rules and grants from here on; with
    no access file every table stays open, as without the extension."""
    assert shared.spark is not None
    from sparkgate.auth.access import Access

    access = Access(shared.settings.access_file, shared.settings.admins)
    shared.decider = authz.Decider(access, shared.store, clock=shared.clock)
    shared.authz = authz.install(shared.spark, shared.decider)
    # The engine's own catalog work (table recovery) in a session of its own: a dedicated
    # engine's root session becomes its user's.
    shared.own_spark = shared.spark.newSession()
    identity.bind(shared.own_spark, identity.SYSTEM_USER)


def warm_up(shared: Shared) -> None:
    """Run a first query (through the catalog, a shuffle and a result file, like a
    statement's) before saying ``running``. A driver's first statement pays for loading
    classes, generating code and connecting the catalog: seconds on two cores, measured
    (bench/floor.py). An engine kept warm exists so that nobody waits for that."""
    from sparkgate.runtime.collect import write_result

    assert shared.spark is not None
    started = time.perf_counter()
    try:
        with tempfile.TemporaryDirectory(prefix="sparkgate-warm-up-") as directory:
            shared.spark.sql("SHOW DATABASES").collect()
            df = shared.spark.sql("SELECT id % 2 AS k, count(*) AS n FROM range(100) GROUP BY 1")
            write_result(df, Path(directory) / "result")
    except Exception:
        log.warning("warm-up query failed; going on cold", exc_info=True)
    log.info("engine %s warmed up in %.1fs", shared.engine_id, time.perf_counter() - started)


def fail_start(shared: Shared, exc: BaseException) -> None:
    now = shared.clock()
    from sparkgate.engine.spark import NoExecutors

    code = NoExecutors.code if isinstance(exc, NoExecutors) else ErrorCode.ENGINE_START_FAILED
    error = recorded_failure(exc).with_code(code)
    if isinstance(exc, NoExecutors) and shared.record is not None:
        error = _with_backoff(shared, error, shared.record, now)
    shared.store.transitions.engine(shared.engine_id, EngineState.FAILED, now=now, error=error)
    for session in shared.store.sessions.of_engine(shared.engine_id):
        end_session(shared, session.id, SessionState.ERROR, error)


def _with_backoff(
    shared: Shared, error: RecordedError, record: EngineRecord, now: float
) -> RecordedError:
    """The NO_EXECUTORS error with its attempt and the next attempt's time (placement
    waits until then before launching another engine like this one)."""
    try:
        earlier = shared.store.engines.recent(
            record.kind, record.share_key, limit=HISTORY, before=record.id
        )
    except Exception:
        log.exception("engine %s: reading earlier engines failed", shared.engine_id)
        return error
    return no_executors_error(
        error,
        record,
        earlier,
        now=now,
        minimum=shared.settings.engine_backoff_min,
        maximum=shared.settings.engine_backoff_max,
    )
