"""The engine's SQL handler for sparkgate's streaming extensions. Engines only.

- ``CREATE [OR REPLACE] STREAM name ... USING provider | FROM TABLE t``: a streaming temporary
  view in the session; the result lists its columns.
- ``SAVE STREAM view TO provider ...``: starts a supervised streaming query; the result is one
  row (name, id, run id, state, checkpoint). The statement ends at once; the query runs on.
- ``STOP STREAM name``: stops the session's query at a micro-batch boundary, and waits.

Anything else passes to the next handler (and in the end to ``spark.sql``) untouched.
"""

from __future__ import annotations

from typing import Any

from sparkgate.errors import SparkgateError
from sparkgate.runtime.contract import ExecResult, ExecutionContext, rows_result
from sparkgate.sql.errors import SqlError
from sparkgate.sql.parser import parse
from sparkgate.sql.statements import CreateStream, PassThrough, SaveStream, StopStream
from sparkgate.states import SessionKind
from sparkgate.store.records import StreamJobRecord, StreamQueryRecord
from sparkgate.streaming.definitions import check_source, query_spec, retry_defaults
from sparkgate.streaming.runner import ConnectorMissing, open_stream, streaming_frame
from sparkgate.streaming.supervisor import StreamSupervisor

_QUERY_COLUMNS = [
    ("name", "string"),
    ("id", "string"),
    ("run_id", "string"),
    ("state", "string"),
    ("checkpoint", "string"),
]


def handle_stream_sql(ctx: ExecutionContext) -> ExecResult | None:
    statement = parse(ctx.statement.code)
    if isinstance(statement, PassThrough):
        return None
    if isinstance(statement, CreateStream):
        return _create_stream(ctx, statement)
    streams = _supervisor(ctx)
    if isinstance(statement, SaveStream):
        return _save_stream(ctx, streams, statement)
    assert isinstance(statement, StopStream)
    record = streams.stop(ctx.session, statement.name)
    return _query_result(ctx, record)


def _supervisor(ctx: ExecutionContext) -> StreamSupervisor:
    """The engine's stream supervisor (the runtime carries it without knowing its type)."""
    if not isinstance(ctx.streams, StreamSupervisor):
        raise SparkgateError("This engine does not run streaming queries.")
    return ctx.streams


def _create_stream(ctx: ExecutionContext, create: CreateStream) -> ExecResult:
    spark = ctx.session.spark
    inference = spark.conf.get("spark.sql.streaming.schemaInference", "false") or "false"
    check_source(create, schema_inference=inference.lower() == "true")
    try:
        df = open_stream(spark, create)
    except ConnectorMissing as exc:
        offset = create.offsets.get("provider", 0)
        raise SqlError.at(create.text, offset, exc.message, code=exc.code) from None
    rows = [[f.name, f.dataType.simpleString()] for f in df.schema.fields]
    return rows_result(ctx, [("column", "string"), ("type", "string")], rows)


def _save_stream(ctx: ExecutionContext, streams: StreamSupervisor, save: SaveStream) -> ExecResult:
    spec = query_spec(save, retry_defaults(ctx.settings))
    df = streaming_frame(ctx.session.spark, save)
    try:
        record = streams.start(ctx.session, ctx.statement.id, spec, df, _job_of(ctx))
    except ConnectorMissing as exc:
        offset = save.offsets.get("provider", 0)
        raise SqlError.at(save.text, offset, exc.message, code=exc.code) from None
    return _query_result(ctx, record)


def _job_of(ctx: ExecutionContext) -> StreamJobRecord | None:
    """The stream job this session runs, if it is a stream job's session."""
    session = ctx.session.record
    if session.kind is not SessionKind.STREAMING:
        return None
    job_id = session.attributes.stream_job_id
    if job_id is None:
        return None
    job = ctx.store.stream_jobs.find_by_id(job_id)
    if job is None:
        raise SparkgateError(f"The stream job of session {session.id} no longer exists.")
    return job


def _query_result(ctx: ExecutionContext, record: StreamQueryRecord) -> ExecResult:
    row: list[Any] = [
        record.name,
        record.spark_id,
        record.run_id,
        record.state.value,
        record.checkpoint,
    ]
    result = rows_result(ctx, _QUERY_COLUMNS, [row])
    result.output["stream_query_id"] = record.id
    return result
