"""Building the engine's SparkSession from sparkgate's settings."""

from __future__ import annotations

import json
import logging
import os
import time
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from sparkgate.engine.artifacts import isolation_conf, share_root
from sparkgate.engine.authz.build import (
    COSTS_LISTENER_CLASS,
    EXTENSION_CLASS,
    KILLED_TASK_CPU_PLUGIN,
    ensure_jar,
)
from sparkgate.engine.authz.touched import Touched
from sparkgate.engine.pod import pod_address, pod_defaults, pod_spark_conf
from sparkgate.recorded import ErrorCode
from sparkgate.settings import Settings
from sparkgate.statement_cost import StatementCost
from sparkgate.states import EngineKind

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

log = logging.getLogger("sparkgate.engine")

# Spark's web UI binds the address in SPARK_LOCAL_IP, or every interface; it has no setting.
LOOPBACK = "127.0.0.1"


# What an engine asks a standalone cluster for unless SPARKGATE_SPARK_CONF (or the session's
# conf) says otherwise: one executor of one core, so engines share the cluster's cores, and
# only while it has work. With dynamic allocation an engine starts with one executor (its
# warm-up query runs there) and gives it back after 30 s without tasks, so an idle shared or
# warm engine holds no core and a stream's or a batch's engine gets one: with a core each
# held for good, a two-core worker ran the shared and the warm engine and nothing else (a
# stream job's engines failed NO_EXECUTORS one after another). Shuffle tracking stands in
# for the external shuffle service; its timeout lets an executor holding a finished query's
# shuffle files go too (a later query never reads them, and Spark recomputes what is lost).
STANDALONE_DEFAULTS = {
    "spark.cores.max": "1",
    "spark.executor.cores": "1",
    "spark.executor.memory": "1g",
    "spark.dynamicAllocation.enabled": "true",
    "spark.dynamicAllocation.shuffleTracking.enabled": "true",
    "spark.dynamicAllocation.minExecutors": "0",
    "spark.dynamicAllocation.initialExecutors": "1",
    "spark.dynamicAllocation.executorIdleTimeout": "30s",
    "spark.dynamicAllocation.shuffleTracking.timeout": "30s",
}
# The shared engine keeps one executor, though: it is what interactive users wait on, and an
# executor asked of the master again took 4.6 s to come here (bench/first_query.py
# --cluster), where a warm query takes 0.1-0.2 s. It holds one core for as long as it lives;
# the warm, streaming and batch engines still give theirs back.
SHARED_ENGINE_DEFAULTS = {"spark.dynamicAllocation.minExecutors": "1"}


class NoExecutors(RuntimeError):
    """The cluster gave the engine no executor in time: it would wait forever."""

    code = ErrorCode.NO_EXECUTORS


def ui_proxy_base(engine_id: int) -> str:
    """Where sparkgate serves an engine's Spark UI (api/routes/engine_ui.py)."""
    return f"/v1/engines/{engine_id}/ui"


def engine_spark_conf(
    settings: Settings,
    extra: dict[str, str] | None = None,
    *,
    engine_id: int | None = None,
    kind: EngineKind | None = None,
    authz_jar: str | None = None,
) -> dict[str, str]:
    """Every Spark property an engine starts with; later entries win.

    The Spark UI is off unless ``settings.spark_ui`` (or the admin's ``spark_conf``) turns it
    on. When on, it listens on loopback only (see :func:`engine_spark_env`), on a port the
    system picks, cannot kill jobs (sparkgate's cancel does, with its access checks), and makes
    its links under ``/v1/engines/{id}/ui`` where sparkgate proxies it for admins."""
    home = settings.resolved_home
    conf: dict[str, str] = {
        "spark.master": settings.spark_master,
        "spark.sql.warehouse.dir": str(settings.resolved_warehouse_dir),
        # Another engine may rewrite a table at any time; a cached file list would then be
        # stale (wrong counts, FILE_NOT_EXIST). See SPARK-NOTES.md.
        "spark.sql.filesourceTableRelationCacheSize": "0",
        "spark.driver.extraJavaOptions": f"-Dderby.system.home={home / 'derby'}",
        "spark.ui.enabled": "true" if settings.spark_ui else "false",
        # Ports 4040+ are probed in turn and shared with every Spark on the machine.
        "spark.ui.port": "0",
        # Sessions sharing an engine run at once, each in a pool of its own (the engine sets
        # spark.scheduler.pool per session): a long query does not starve the others.
        "spark.scheduler.mode": "FAIR",
        # Spark's console progress bar redraws itself with carriage returns on the engine's
        # standard error, which is its log file (where the bars run into the log's lines),
        # and its thread wakes every 200 ms even when nothing runs: 0.12 % of a core of an
        # idle engine (per-thread /proc ticks, 60 s). A query's progress is in its record.
        "spark.ui.showConsoleProgress": "false",
        # As Spark's own Connect server: each session's files, packages, archives and jars
        # are its own. PySpark turns this off for the classic driver it starts, and one
        # session's upload then broke every Python task of the engine (engine.artifacts).
        **isolation_conf(),
    }
    if engine_id is not None:
        conf["spark.ui.proxyBase"] = ui_proxy_base(engine_id)
    if settings.catalog == "hive":
        conf["spark.sql.catalogImplementation"] = "hive"
        if settings.metastore_uri:
            conf["spark.hadoop.hive.metastore.uris"] = settings.metastore_uri
        # Without this every Hive session leaves an empty directory in /tmp.
        conf["spark.hadoop.hive.downloaded.resources.dir"] = str(
            home / "tmp" / "${hive.session.id}_resources"
        )
        conf["spark.hadoop.hive.exec.scratchdir"] = str(home / "tmp" / "hive-scratch")
        conf["spark.hadoop.hive.exec.local.scratchdir"] = str(home / "tmp" / "hive-local")
    else:
        conf["spark.sql.catalogImplementation"] = "in-memory"
    if settings.engine_driver_memory:
        conf["spark.driver.memory"] = settings.engine_driver_memory
    if conf["spark.master"].startswith("spark://"):
        # A standalone application takes every free core unless told otherwise: the first
        # engine would starve the shared, streaming and batch engines that follow it.
        conf.update(STANDALONE_DEFAULTS)
        if kind is EngineKind.SHARED and settings.shared_engine_keep_executor:
            conf.update(SHARED_ENGINE_DEFAULTS)
    # In a pod (SPARKGATE_LAUNCHER=kubernetes): executors as pods, sized as the node chose,
    # unless the admin's properties say otherwise; then what a pod cannot run without.
    conf.update(pod_defaults())
    conf.update(settings.spark_conf)
    conf.update(extra or {})
    conf.update(pod_spark_conf())
    if authz_jar is not None:
        # Data access control (sparkgate.engine.authz): sees every plan of every session.
        conf["spark.sql.extensions"] = _joined(
            conf.get("spark.sql.extensions"), EXTENSION_CLASS, ","
        )
        conf["spark.driver.extraClassPath"] = _joined(
            conf.get("spark.driver.extraClassPath"), authz_jar, os.pathsep
        )
        # Each statement's cost, from its tasks' metrics as they end (QueryCosts.scala).
        conf["spark.extraListeners"] = _joined(
            conf.get("spark.extraListeners"), COSTS_LISTENER_CLASS, ","
        )
        master = conf["spark.master"]
        if master == "local" or master.startswith("local["):
            # A killed task's CPU time, which Spark leaves at 0 (KilledTaskCpu.scala). Only
            # where the executors run in this JVM, on the class path above: an executor in
            # another JVM (local-cluster, standalone, Kubernetes) that cannot load a plugin's
            # class fails to start, and the jar is not shipped to them.
            conf["spark.plugins"] = _joined(conf.get("spark.plugins"), KILLED_TASK_CPU_PLUGIN, ",")
    # Whoever turned the UI on, it is reached through sparkgate only, and cannot kill jobs.
    conf["spark.ui.killEnabled"] = "false"
    if ui_enabled(conf) and not _is_local(conf["spark.master"]):
        # SPARK_LOCAL_IP (loopback, for the UI) is also the driver's default RPC address;
        # executors elsewhere must reach the driver on a routable one.
        conf.setdefault("spark.driver.host", _routable_address())
    return conf


def _joined(existing: str | None, value: str, separator: str) -> str:
    parts = [p for p in (existing or "").split(separator) if p.strip()]
    return separator.join([*parts, value] if value not in parts else parts)


def ui_enabled(conf: dict[str, str]) -> bool:
    return conf.get("spark.ui.enabled", "true").strip().lower() != "false"


def engine_spark_env(conf: dict[str, str]) -> dict[str, str]:
    """Environment for the engine's JVM: with the UI on, SPARK_LOCAL_IP makes it listen on
    loopback (Spark's WebUI binds ``SPARK_LOCAL_IP`` or 0.0.0.0; no property sets it)."""
    if ui_enabled(conf) or _is_local(conf.get("spark.master", "")):
        return {"SPARK_LOCAL_IP": LOOPBACK}
    return {}


def _is_local(master: str) -> bool:
    return master == "local" or master.startswith("local[") or master.startswith("local-")


def _routable_address() -> str:
    import socket

    hostname = socket.gethostname()
    try:
        infos = socket.getaddrinfo(hostname, None, socket.AF_INET)
    except OSError:
        infos = []
    for info in infos:
        address = str(info[4][0])
        if not address.startswith("127."):
            return address
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as sock:
        try:
            sock.connect(("192.0.2.1", 9))  # TEST-NET: picks the outgoing interface, sends nothing
            return str(sock.getsockname()[0])
        except OSError:
            return hostname


# Spark's Connect service inside an engine: sparkgate's Connect door forwards to it.
CONNECT_PLUGIN = "org.apache.spark.sql.connect.SparkConnectPlugin"
# Spark reads the service's secret from this variable when spark.connect.authenticate.token
# is not set: the secret is then in no configuration a user can read (Config RPC, SET -v, the
# UI's environment page) and on no command line.
CONNECT_SECRET_ENV = "SPARK_CONNECT_AUTHENTICATE_TOKEN"


def connect_conf(conf: dict[str, str]) -> dict[str, str]:
    """The properties that start Spark's Connect service on loopback (in a pod, on its
    address), on a port the system picks (the engine reads it back with :func:`connect_port`)."""
    plugins = [p for p in conf.get("spark.plugins", "").split(",") if p.strip()]
    if CONNECT_PLUGIN not in plugins:
        plugins.append(CONNECT_PLUGIN)
    return {
        "spark.plugins": ",".join(plugins),
        # In a pod, its address: nodes reach it there (its secret guards it).
        "spark.connect.grpc.binding.address": pod_address() or LOOPBACK,
        "spark.connect.grpc.binding.port": "0",
    }


def _scala_object(spark: SparkSession, name: str) -> Any:
    """A Scala object of Spark's Connect service in this driver: its instance is the static
    MODULE$ field of the class named with a $ (py4j cannot name it otherwise)."""
    jvm = spark.sparkContext._jvm
    assert jvm is not None
    return jvm.java.lang.Class.forName(f"{name}$").getField("MODULE$").get(None)


def _connect_service(spark: SparkSession) -> Any:
    return _scala_object(spark, "org.apache.spark.sql.connect.service.SparkConnectService")


def connect_port(spark: SparkSession, timeout: float = 30.0) -> int:
    """The port Spark's Connect service listens on (it starts with the driver's plugins)."""
    service = _connect_service(spark)
    deadline = time.monotonic() + timeout
    while True:
        port = int(service.localPort())
        if port > 0:
            return port
        if time.monotonic() > deadline:
            raise RuntimeError("Spark's Connect service did not start listening")
        time.sleep(0.05)


def connect_operations(spark: SparkSession) -> set[str]:
    """The ids of the operations Spark's Connect service holds now (running, or finished and
    kept for a client to reattach and read)."""
    holders = _connect_service(spark).executionManager().listExecuteHolders().iterator()
    found = set()
    while holders.hasNext():
        found.add(str(holders.next().operationId()))
    return found


def connect_job_tag(spark: SparkSession, user_id: str, session_id: str, operation_id: str) -> str:
    """The tag Spark's Connect service gives every Spark job of an operation."""
    tags = _scala_object(spark, "org.apache.spark.sql.connect.service.ExecuteJobTag")
    return str(tags.apply(user_id, session_id, operation_id))


@dataclass(frozen=True)
class ConnectCost:
    """A Spark Connect operation that ended, named as Spark's Connect service names it, and
    what its Spark tasks cost."""

    user: str
    session: str
    operation: str
    cost: StatementCost | None  # None: none of its Spark tasks ran
    touched: Touched | None  # what its plans read and wrote; None: nothing was checked


def connect_costs(spark: SparkSession) -> list[ConnectCost]:
    """The Connect operations that ended since the last call, with their costs and what their
    plans touched (the engine's listener, QueryCosts.scala, keeps them until asked)."""
    lines = str(_scala_object(spark, COSTS_LISTENER_CLASS).connectCosts())
    found = []
    for line in lines.splitlines():
        ended = json.loads(line)
        cost = None if ended.get("cost") is None else StatementCost.of(ended["cost"])
        touched = ended.get("touched")
        found.append(
            ConnectCost(
                ended["user"],
                ended["session"],
                ended["operation"],
                cost,
                None if touched is None else Touched.parse(json.dumps(touched)),
            )
        )
    return found


def build_spark(
    settings: Settings,
    app_name: str,
    extra: dict[str, str] | None = None,
    *,
    engine_id: int | None = None,
    kind: EngineKind | None = None,
    connect_secret: str | None = None,
) -> SparkSession:
    """The engine's SparkSession; with ``connect_secret``, running Spark's Connect service
    (on loopback, taking that secret)."""
    from pyspark.sql import SparkSession

    conf = engine_spark_conf(
        settings, extra, engine_id=engine_id, kind=kind, authz_jar=str(ensure_jar())
    )
    if connect_secret is not None:
        conf.update(connect_conf(conf))
    # The JVM is started below, by this process: it inherits this environment.
    os.environ.update(engine_spark_env(conf))
    if connect_secret is not None:
        os.environ[CONNECT_SECRET_ENV] = connect_secret
    builder = SparkSession.builder.appName(app_name)
    for key, value in conf.items():
        builder = builder.config(key, value)
    try:
        spark = builder.getOrCreate()
    finally:
        # The JVM has it; Python code run in this engine (code sessions) need not.
        os.environ.pop(CONNECT_SECRET_ENV, None)
    share_root(spark)  # before its first job: the root keeps classic PySpark's files
    # The engine log is for sparkgate's own lines and real problems, not Spark's chatter.
    spark.sparkContext.setLogLevel("ERROR")
    quiet_query_error_logs()
    return spark


def wait_for_executors(spark: SparkSession, timeout: float) -> None:
    """On a cluster, wait until an executor has registered with this driver; raise
    :class:`NoExecutors`, naming what the application asks, when none comes in ``timeout``.
    (Without executors the first query would block forever, unseen.)"""
    sc = spark.sparkContext
    conf = sc.getConf()
    master = conf.get("spark.master", "") or ""
    if _is_local(master):
        return
    asked = {
        key: conf.get(key, "(Spark's default)")
        for key in ("spark.cores.max", "spark.executor.cores", "spark.executor.memory")
    }
    described = ", ".join(f"{k}={v}" for k, v in asked.items())
    started = time.monotonic()
    said = started
    status = sc._jsc.sc().statusStore()
    while True:
        # The driver counts itself among the executors: more than one, an executor. Removed
        # ones count too: with dynamic allocation an executor that registered while the
        # driver was still starting (slowly, on a busy machine) may already have gone idle and
        # been given back; the cluster gave one, and gives again for the first query.
        if status.executorList(False).size() > 1:
            return
        now = time.monotonic()
        if now - started > timeout:
            raise NoExecutors(
                f"No executor registered within {timeout:.0f}s: the cluster at {master} did "
                f"not give application {sc.appName} what it asks ({described}). Free cores or "
                "memory at the cluster, or ask less with SPARKGATE_SPARK_CONF (or the "
                "session's conf)."
            )
        if now - said >= 10:
            log.info("waiting for executors from %s (%s asks %s)", master, sc.appName, described)
            said = now
        time.sleep(0.2)


def quiet_query_error_logs() -> None:
    """PySpark logs every SQL error it raises with the whole JVM stack, as JSON. A gateway
    reports those errors to the user (statement.error); the log copy is only noise."""
    from pyspark.logger import PySparkLogger

    for name in ("SQLQueryContextLogger", "DataFrameQueryContextLogger"):
        PySparkLogger.getLogger(name).disabled = True
