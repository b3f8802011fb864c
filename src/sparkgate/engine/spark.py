"""Building the engine's SparkSession from sparkgate's settings."""

from __future__ import annotations

from typing import TYPE_CHECKING

from sparkgate.settings import Settings

if TYPE_CHECKING:
    from pyspark.sql import SparkSession


def engine_spark_conf(settings: Settings, extra: dict[str, str] | None = None) -> dict[str, str]:
    """Every Spark property an engine starts with; later entries win."""
    home = settings.resolved_home
    conf: dict[str, str] = {
        "spark.master": settings.spark_master,
        "spark.sql.warehouse.dir": str(settings.resolved_warehouse_dir),
        # Another engine may rewrite a table at any time; a cached file list would then be
        # stale (wrong counts, FILE_NOT_EXIST). See SPARK-NOTES.md.
        "spark.sql.filesourceTableRelationCacheSize": "0",
        "spark.driver.extraJavaOptions": f"-Dderby.system.home={home / 'derby'}",
    }
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
    conf.update(settings.spark_conf)
    conf.update(extra or {})
    return conf


def build_spark(
    settings: Settings, app_name: str, extra: dict[str, str] | None = None
) -> SparkSession:
    from pyspark.sql import SparkSession

    builder = SparkSession.builder.appName(app_name)
    for key, value in engine_spark_conf(settings, extra).items():
        builder = builder.config(key, value)
    spark = builder.getOrCreate()
    # The engine log is for sparkgate's own lines and real problems, not Spark's chatter.
    spark.sparkContext.setLogLevel("ERROR")
    quiet_query_error_logs()
    return spark


def quiet_query_error_logs() -> None:
    """PySpark logs every SQL error it raises with the whole JVM stack, as JSON. A gateway
    reports those errors to the user (statement.error); the log copy is only noise."""
    from pyspark.logger import PySparkLogger

    for name in ("SQLQueryContextLogger", "DataFrameQueryContextLogger"):
        PySparkLogger.getLogger(name).disabled = True
