"""The tables of streaming: stream jobs, their queries (and those SAVE STREAM starts in a
session), the queries' recent progress, and restarts. Part of ``schema``, which names every
table.
"""

from __future__ import annotations

import sqlalchemy as sa

from sparkgate.store.schema_metadata import Json, Time, metadata

stream_jobs = sa.Table(
    "stream_jobs",
    metadata,
    sa.Column("id", sa.Integer, primary_key=True, autoincrement=True),
    sa.Column("name", sa.String(128), nullable=False),
    sa.Column("state", sa.String(16), nullable=False),
    sa.Column("owner", sa.String(255), nullable=True),
    sa.Column("sql", sa.Text, nullable=False),  # the script: CREATE STREAM, views, SAVE STREAM
    # The script as ordered steps [{"kind": "sql" | "pyspark", "code"}] when it has Python steps
    # (a deployed `code` job's); NULL: the statements of ``sql``, in order. ``sql`` then holds
    # the SQL steps only (what is checked before anything runs).
    sa.Column("steps", Json, nullable=True),
    sa.Column("conf", Json, nullable=False, default=dict),  # Spark conf of the job's session
    # Where its queries keep their checkpoints (<root>/<query name>); NULL: <checkpoints>/<name>
    sa.Column("checkpoint_root", sa.Text, nullable=True),
    sa.Column("revision", sa.Integer, nullable=False, default=1),  # bumped by each redefinition
    sa.Column("session_id", sa.Integer, nullable=True),  # the session running it now (or last)
    sa.Column("failures", sa.Integer, nullable=False, default=0),  # relaunches in a row
    sa.Column("restarts", sa.Integer, nullable=False, default=0),  # relaunches in all
    sa.Column("next_restart_at", Time, nullable=True),
    sa.Column("error", Json, nullable=True),  # the last error (kept after a relaunch)
    sa.Column("version", sa.Integer, nullable=False, default=1),
    sa.Column("created_at", Time, nullable=False),
    sa.Column("started_at", Time, nullable=True),
    sa.Column("running_since", Time, nullable=True),
    sa.Column("finished_at", Time, nullable=True),
    sa.Column("updated_at", Time, nullable=False),
    sa.UniqueConstraint("name"),
    sa.Index(None, "state"),
)

stream_queries = sa.Table(
    "stream_queries",
    metadata,
    sa.Column("id", sa.Integer, primary_key=True, autoincrement=True),
    # A stream job's query (one row per job and name, reused across relaunches), or else a
    # query started by SAVE STREAM in an interactive session (ends with the session).
    sa.Column("job_id", sa.Integer, sa.ForeignKey("stream_jobs.id"), nullable=True),
    sa.Column("session_id", sa.Integer, nullable=False),
    sa.Column("statement_id", sa.Integer, nullable=True),  # the SAVE STREAM that started it
    sa.Column("engine_id", sa.Integer, nullable=True),
    sa.Column("name", sa.String(255), nullable=False),
    sa.Column("state", sa.String(16), nullable=False),
    sa.Column("spec", Json, nullable=False),  # sink, options, trigger, retry policy
    sa.Column("checkpoint", sa.Text, nullable=True),  # NULL: a sink that cannot resume (memory)
    sa.Column("spark_id", sa.String(64), nullable=True),  # stable across restarts
    sa.Column("run_id", sa.String(64), nullable=True),  # new at each start
    sa.Column("failures", sa.Integer, nullable=False, default=0),  # failures in a row
    sa.Column("restarts", sa.Integer, nullable=False, default=0),
    sa.Column("next_restart_at", Time, nullable=True),
    sa.Column("error", Json, nullable=True),  # the last error
    sa.Column("last_progress", Json, nullable=True),
    sa.Column("progress_at", Time, nullable=True),
    sa.Column("version", sa.Integer, nullable=False, default=1),
    sa.Column("created_at", Time, nullable=False),
    sa.Column("started_at", Time, nullable=True),
    sa.Column("run_started_at", Time, nullable=True),
    sa.Column("finished_at", Time, nullable=True),
    sa.Column("updated_at", Time, nullable=False),
    # NULL job ids are distinct on both backends: session queries are not constrained here.
    sa.UniqueConstraint("job_id", "name"),
    sa.Index(None, "session_id"),
    sa.Index(None, "state"),
)

# Recent progress only: each query keeps its last ``stream_progress_history`` rows.
stream_progress = sa.Table(
    "stream_progress",
    metadata,
    sa.Column("id", sa.Integer, primary_key=True, autoincrement=True),
    sa.Column("query_id", sa.Integer, sa.ForeignKey("stream_queries.id"), nullable=False),
    sa.Column("run_id", sa.String(64), nullable=True),
    sa.Column("batch_id", sa.BigInteger, nullable=False),
    sa.Column("at", Time, nullable=False),  # when the batch started (Spark's timestamp)
    sa.Column("input_rows", sa.BigInteger, nullable=False),
    sa.Column("input_rows_per_second", sa.Float, nullable=True),
    sa.Column("processed_rows_per_second", sa.Float, nullable=True),
    sa.Column("batch_duration_ms", sa.BigInteger, nullable=True),
    sa.Column("watermark", sa.String(64), nullable=True),
    sa.Column("state_rows", sa.BigInteger, nullable=True),
    sa.Index(None, "query_id", "id"),
)

# Every restart: of a query after it failed (query_id set), or of a whole job after its
# session or engine was lost (query_id NULL).
stream_restarts = sa.Table(
    "stream_restarts",
    metadata,
    sa.Column("id", sa.Integer, primary_key=True, autoincrement=True),
    sa.Column("job_id", sa.Integer, sa.ForeignKey("stream_jobs.id"), nullable=True),
    sa.Column("query_id", sa.Integer, sa.ForeignKey("stream_queries.id"), nullable=True),
    sa.Column("attempt", sa.Integer, nullable=False),  # failures in a row, this one included
    sa.Column("failed_at", Time, nullable=False),
    sa.Column("delay", sa.Float, nullable=False),  # the backoff, in seconds
    sa.Column("restart_at", Time, nullable=False),
    sa.Column("restarted_at", Time, nullable=True),
    sa.Column("error", Json, nullable=True),
    sa.Index(None, "job_id"),
    sa.Index(None, "query_id"),
)
