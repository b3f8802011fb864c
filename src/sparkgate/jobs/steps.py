"""What a job's generated ``pyspark`` steps call, in the engine (``spark`` is the job's session).

- ``register_output``: after a ``code`` job's code, check that it set ``output`` to a
  DataFrame of the right kind, and register it as the view the job writes from.
- ``new_lineage``: before a streaming job's first batch into its target table. Spark's file
  sink keeps its own commit log in the table's directory (``_spark_metadata``), numbered by
  batch: a query with a new checkpoint (a new version) starts again at batch 0, and every batch
  up to the last one the log holds would be skipped as "already committed": silently, nothing
  would be written. And once a stream writes into a directory, readers see only the files its
  log lists. So when this version's checkpoint has no batch yet and the target table already
  holds data, that table is renamed ``<table>__v<previous version>`` (kept, readable), and the
  new version writes the table afresh, with its own schema and log.

Duck-typed on the SparkSession (no PySpark import), so the module loads anywhere.
"""

from __future__ import annotations

import logging
from collections.abc import MutableMapping
from typing import Any

log = logging.getLogger("sparkgate.jobs")


def register_output(namespace: MutableMapping[str, Any], view: str, *, streaming: bool) -> None:
    """``output`` (set by the job's code) becomes the temporary view ``view``."""
    if "output" not in namespace:
        raise NameError(
            "The job's code did not set 'output': it must assign the DataFrame to write to a "
            "variable named output."
        )
    output = namespace["output"]
    if not hasattr(output, "createOrReplaceTempView") or not hasattr(output, "isStreaming"):
        raise TypeError(f"'output' is a {type(output).__name__}, not a DataFrame.")
    if bool(output.isStreaming) is not streaming:
        kind, other = ("streaming", "batch") if streaming else ("batch", "streaming")
        how = (
            "read a stream: spark.readStream..., or spark.table() of a CREATE STREAM source"
            if streaming
            else "read tables or views, not streams"
        )
        raise TypeError(f"'output' is a {other} DataFrame; a {kind} job writes {kind} data: {how}.")
    output.createOrReplaceTempView(view)


def new_lineage(spark: Any, table: str, checkpoint: str, previous_version: int) -> str | None:
    """Before a query with checkpoint ``checkpoint`` writes ``table``: if the checkpoint holds
    no batch yet and the table holds data, rename the table out of the way; the new name, or
    None when nothing had to move."""
    if _has_entries(spark, f"{checkpoint.rstrip('/')}/offsets"):
        return None  # this query's own lineage: it resumes
    if not spark.catalog.tableExists(table):
        return None
    location = _location(spark, table)
    if location is None or not _holds_data(spark, location):
        return None
    archive = _free_name(spark, f"{table}__v{previous_version}")
    spark.sql(f"ALTER TABLE {table} RENAME TO {archive}")
    # The moved sink log lists the files at their old paths: readers of the archive would
    # look for them there. Without it they read the directory's files.
    moved = _location(spark, archive)
    if moved is not None:
        _rename(spark, f"{moved}/_spark_metadata", f"{moved}/_spark_metadata-before-{archive}")
    log.info("job target %s held an earlier version's output: kept as %s", table, archive)
    print(f"{table} held the output of an earlier query; it is kept as {archive}")
    return archive


def _free_name(spark: Any, name: str) -> str:
    candidate, suffix = name, 2
    while spark.catalog.tableExists(candidate):
        candidate, suffix = f"{name}_{suffix}", suffix + 1
    return candidate


def _location(spark: Any, table: str) -> str | None:
    for row in spark.sql(f"DESCRIBE TABLE EXTENDED {table}").collect():
        if str(row[0]).strip() == "Location":
            return str(row[1]).strip()
    return None


def _fs(spark: Any, path: str) -> tuple[Any, Any]:
    jvm = spark.sparkContext._jvm
    hadoop_path = jvm.org.apache.hadoop.fs.Path(path)
    return hadoop_path.getFileSystem(spark.sparkContext._jsc.hadoopConfiguration()), hadoop_path


def _has_entries(spark: Any, path: str) -> bool:
    fs, hadoop_path = _fs(spark, path)
    return bool(fs.exists(hadoop_path)) and len(fs.listStatus(hadoop_path)) > 0


def _holds_data(spark: Any, location: str) -> bool:
    """Data files (not hidden ones), or a sink log with batches."""
    fs, hadoop_path = _fs(spark, location)
    if not fs.exists(hadoop_path):
        return False
    for status in fs.listStatus(hadoop_path):
        name = status.getPath().getName()
        if not name.startswith(("_", ".")):
            return True
    return _has_entries(spark, f"{location.rstrip('/')}/_spark_metadata")


def _rename(spark: Any, source: str, target: str) -> None:
    fs, hadoop_source = _fs(spark, source)
    if fs.exists(hadoop_source):
        fs.rename(hadoop_source, spark.sparkContext._jvm.org.apache.hadoop.fs.Path(target))
