"""What each of sparkgate's error codes means to its user, and the SQLSTATE it answers with.

Every ``ErrorCode`` has one entry (a test fails otherwise): the SQLSTATE a SQL client (JDBC,
ODBC, PyHive over the HiveServer2 door) is given for a sparkgate error, and one sentence that
the error-code reference shows. An error that Spark raised keeps Spark's own SQLSTATE (the
``sql_state`` parameter of its record); ``sql_state`` below answers that first.

    sql_state(statement.error)  # Spark's "22012" for DIVIDE_BY_ZERO, "57014" for CANCELLED

The SQLSTATE classes, and why each is used (standard SQL classes where one fits; a few
subclasses PostgreSQL and DB2 made common where the standard has none as precise):

- ``08`` connection exception: the engine that runs a session (sparkgate's "connection" to
  Spark) could not be started, reached, or was lost; a session that no longer exists
  (``08003``).
- ``0A`` feature not supported: a request, sink or file kind sparkgate does not do.
- ``22`` data exception: a value (a loaded file's record, an option's value, a header) that
  is not valid; ``22023`` invalid parameter value.
- ``23505`` unique violation: an idempotency key sent again for another request.
- ``24000`` invalid cursor state: a query's result read before there is one.
- ``28000`` invalid authorization specification: who the client is could not be established.
- ``38000`` external routine exception: a batch's own Python code exited with an error.
- ``40000`` transaction rollback: a two-phase table write that was aborted; ``40001``
  serialization failure: a write that lost to a concurrent one and may be retried.
- ``42`` syntax error or access rule violation: ``42601`` syntax, ``42602`` invalid name,
  ``42501`` insufficient privilege (Spark's own for ``INSUFFICIENT_PRIVILEGE``), ``42704``
  undefined object, ``42P01`` undefined table (Spark's ``TABLE_OR_VIEW_NOT_FOUND``), ``42710``
  duplicate object, ``42809`` wrong object type, ``42000`` a request that is otherwise invalid.
- ``53000`` insufficient resources: a queue, quota or the cluster's cores are spent.
- ``54000`` program limit exceeded: a request larger than the server takes.
- ``55000`` object not in prerequisite state; ``55006`` object in use: the request is valid
  but the object's state refuses it.
- ``57000`` operator intervention: an engine, session or deployment stopped from outside;
  ``57014`` query cancelled (by its user, or by a time limit).
- ``58030`` I/O error: files sparkgate needs are missing or unreadable.
- ``F0000`` configuration file error: the server's settings or access file are wrong.
- ``HY000`` general error: a failure whose cause is in the record's message, not its class;
  ``XX000`` internal error: a bug, or a failure sparkgate did not expect.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from sparkgate.recorded import ErrorCode, RecordedError


@dataclass(frozen=True)
class ErrorEntry:
    """One code's SQLSTATE (five characters, ``[0-9A-Z]``) and its meaning for users."""

    sqlstate: str
    meaning: str


E = ErrorEntry
C = ErrorCode

ERRORS: Mapping[ErrorCode, ErrorEntry] = {
    C.INTERNAL_ERROR: E(
        "XX000", "An unexpected failure; the server's log has the details. Worth reporting."
    ),
    C.STORE_UNAVAILABLE: E(
        "08006",
        "The store (sparkgate's database) could not be reached: nothing was done; send the "
        "same request again.",
    ),
    C.CONCURRENT_UPDATE: E(
        "40001", "Another writer changed the same object first; read it again and retry."
    ),
    C.INVALID_CONFIGURATION: E(
        "F0000", "The server's settings or access file are wrong for what was asked."
    ),
    C.LAUNCH_REFUSED: E(
        "08001", "Kubernetes refused to create an engine's pod (its quota, RBAC or the pod spec)."
    ),
    C.SERVER_RUNNING: E(
        "55006",
        "A server node still runs for this home: stop it first, or pass --force to the command.",
    ),
    # not found
    C.NOT_FOUND: E("42704", "The object or route named in the request does not exist."),
    C.SESSION_NOT_FOUND: E("08003", "The session does not exist (or is not yours)."),
    C.QUERY_NOT_FOUND: E("42704", "The query does not exist (or is not yours)."),
    C.ENGINE_NOT_FOUND: E("42704", "The engine does not exist."),
    C.TABLE_NOT_FOUND: E(
        "42P01", "The table or view does not exist, or the access rules hide it from you."
    ),
    C.SCHEMA_NOT_FOUND: E("42704", "The schema (database) does not exist."),
    C.STREAM_JOB_NOT_FOUND: E("42704", "The stream job does not exist."),
    C.STREAM_QUERY_NOT_FOUND: E(
        "42704", "The streaming query does not exist, or none of that name runs in the session."
    ),
    C.JOB_NOT_FOUND: E("42704", "The job does not exist; jobs come from deployed manifests."),
    C.DEPLOYMENT_NOT_FOUND: E("42704", "The deployment does not exist."),
    C.JOB_RUN_NOT_FOUND: E("42704", "The job run does not exist."),
    C.TOKEN_NOT_FOUND: E("42704", "The API token does not exist (or is not yours)."),
    C.TABLE_TRANSACTION_NOT_FOUND: E("42704", "The table write (transaction) does not exist."),
    C.SAVED_QUERY_NOT_FOUND: E("42704", "The saved query does not exist (or is not yours)."),
    # the request and the state it meets
    C.INVALID_REQUEST: E(
        "42000", "The request is not valid; the message (and its fields) say which part."
    ),
    C.INVALID_STATE: E("55000", "The request is valid but the object's current state refuses it."),
    C.NOT_SUPPORTED: E("0A000", "sparkgate does not do what was asked."),
    C.METHOD_NOT_ALLOWED: E("0A000", "The path does not take this HTTP method."),
    C.HTTP_ERROR: E("HY000", "An HTTP-level error with no more precise code."),
    C.IDEMPOTENCY_KEY_INVALID: E(
        "22023", "The Idempotency-Key header is not 1 to 255 printable ASCII characters."
    ),
    C.IDEMPOTENCY_KEY_REUSED: E(
        "23505", "The Idempotency-Key was first used for another request; send a new key."
    ),
    C.PAYLOAD_TOO_LARGE: E("54000", "The request body is larger than the server takes."),
    C.LIMIT_EXCEEDED: E(
        "53000",
        "A limit of the access rules is reached: a per-user limit, a resource group's queue, "
        "or a quota.",
    ),
    C.FILE_EMPTY: E("22000", "The uploaded file is empty: there is nothing to load."),
    C.CSRF_HEADER_MISSING: E(
        "42000", "A Livy request that changes something lacks the X-Requested-By header."
    ),
    C.SESSION_NOT_ACTIVE: E(
        "08003", "The session has ended and takes no more statements; start a new one."
    ),
    C.BATCH_SESSION_USED: E("55000", "A batch session runs one statement and already has it."),
    C.QUERY_FINISHED: E("55000", "The query has already ended: there is nothing to cancel."),
    C.RESULT_NOT_AVAILABLE: E(
        "24000", "The query has no result to read (yet, or at all); the message says why."
    ),
    C.RESULT_GONE: E(
        "58030",
        "The query succeeded but its result files are gone (result retention, or a results "
        "path this node does not share).",
    ),
    C.INVALID_HANDLE: E(
        "42704", "A HiveServer2 session or operation handle this server did not issue."
    ),
    C.OPERATION_FAILED: E(
        "HY000",
        "A HiveServer2 operation failed or was cancelled; its own error (and Spark's SQLSTATE "
        "when it has one) is in the message.",
    ),
    # who may
    C.UNAUTHENTICATED: E("28000", "No credentials, or credentials no authenticator accepts."),
    C.FORBIDDEN: E(
        "42501",
        "You are known but the access rules refuse what was asked (no resource group takes "
        "the query, an action reserved to others).",
    ),
    C.ACCESS_DENIED: E("42501", "A right the action needs is missing from your access rules."),
    C.SETTING_DENIED: E("42501", "The access rules deny users this Spark setting."),
    C.INSUFFICIENT_PRIVILEGE: E(
        "42501",
        "Spark refused a table, column or function the access rules do not let you use "
        "(the engine's check, with Spark's own SQLSTATE).",
    ),
    # engines and sessions
    C.ENGINE_BACKOFF: E(
        "53000",
        "Recent engines got no executor from the cluster: the next starts only after a "
        "pause; free cores or try again then.",
    ),
    C.ENGINE_UNAVAILABLE: E(
        "08001",
        "The session's engine cannot take the call now (starting, or without the service "
        "the call needs); send it again.",
    ),
    C.ENGINE_UI_UNAVAILABLE: E("08001", "The engine's Spark UI cannot be reached now."),
    C.ENGINE_LAUNCH_FAILED: E("08001", "No engine could be launched for the session."),
    C.ENGINE_START_FAILED: E(
        "08001", "The engine's process started but Spark did not; the message says why."
    ),
    C.NO_EXECUTORS: E(
        "53000", "The cluster gave the engine no executor in time: it has no cores to run on."
    ),
    C.ENGINE_LOST: E(
        "08006",
        "The engine died: its sessions, with their temporary views, settings and cached data, "
        "and its running work are gone. Start a new session.",
    ),
    C.ENGINE_STOPPED: E(
        "57000", "The engine stopped (idle, shut down, or asked to) while work was on it."
    ),
    C.ENGINE_TERMINATED: E(
        "57000", "The engine was killed at shutdown because it did not stop when asked."
    ),
    C.SESSION_START_FAILED: E(
        "08001", "The session could not be opened in its engine; the message says why."
    ),
    C.SESSION_TIMED_OUT: E("08003", "The session was idle longer than its timeout and ended."),
    C.SESSION_KILLED: E("57000", "The session was deleted (by its user or an admin)."),
    C.SESSION_ENDED: E(
        "08003", "The session ended; the queries and streaming queries it still ran end with it."
    ),
    # queries
    C.FAILED: E("HY000", "A statement failed; its record says no more."),
    C.CANCELLED: E("57014", "The query was cancelled, by its user or by the end of its session."),
    C.OUTCOME_NOT_RECORDED: E(
        "XX000",
        "The statement finished but the store refused its outcome; the engine's log has it.",
    ),
    C.CONNECT_OPERATION_GONE: E(
        "08006",
        "A Spark Connect operation ended with no client to receive it; its result is gone. "
        "Run it again.",
    ),
    C.BATCH_FILE_MISSING: E("58030", "The batch's file does not exist where it was named."),
    C.BATCH_FILE_UNREADABLE: E("58030", "The batch's file cannot be read."),
    C.BATCH_FILE_UNSUPPORTED: E(
        "0A000",
        "The batch's file is of a kind sparkgate does not run: only .py and .sql files run.",
    ),
    C.BATCH_EXITED: E("38000", "The batch's Python file called sys.exit with a non-zero status."),
    C.SQL_SCRIPT_INVALID: E("42601", "A SQL script (a batch's .sql file) does not parse."),
    C.SQL_SCRIPT_EMPTY: E("42601", "A SQL script holds no statement."),
    # tables and the catalog
    C.QUERY_FAILED: E(
        "40000", "The query of an atomic table write failed: the write is rolled back."
    ),
    C.COMMIT_FAILED: E("40000", "An atomic table write could not be committed: it is rolled back."),
    C.ORPHANED: E(
        "40000",
        "A pending table write whose query or engine ended before its commit: rolled back.",
    ),
    C.BAD_FILE: E("22000", "Spark cannot read the loaded file in the format given."),
    C.BAD_RECORD: E(
        "22000", "A row of the loaded file does not fit the table (its line and column named)."
    ),
    C.CATALOG_UNAVAILABLE: E(
        "08006", "Reading the catalog failed (the engine or its metastore); try again."
    ),
    C.INVALID_CATALOG_REQUEST: E("42000", "A catalog read that names no valid object."),
    C.PREVIEW_TIMED_OUT: E(
        "57014", "A table preview got no rows in time: the executors were busy. Try again."
    ),
    # sparkgate's SQL extensions
    C.PARSE_SYNTAX_ERROR: E(
        "42601", "The statement does not follow the grammar (Spark's code and SQLSTATE)."
    ),
    C.INVALID_STREAM_DEFINITION: E("42000", "A CREATE STREAM or SAVE STREAM that is not valid."),
    C.INVALID_STREAM_QUERY_NAME: E(
        "42602", "A streaming query's name (IDENTIFIED BY) is not a valid name."
    ),
    C.INVALID_STREAM_OPTION: E("22023", "A stream's option has a value that is not valid."),
    C.INVALID_STREAM_SCRIPT: E("42601", "A stream job's SQL script is not valid."),
    C.NOT_A_STREAMING_VIEW: E(
        "42809", "SAVE STREAM was given a batch view; it writes views over a stream."
    ),
    C.STREAM_SINK_OUTPUT_MODE_UNSUPPORTED: E("0A000", "The sink does not take this OUTPUT MODE."),
    C.STREAM_SINK_PARTITIONING_UNSUPPORTED: E("0A000", "The sink does not take PARTITIONED BY."),
    C.STREAM_SINK_PATH_REQUIRED: E("42000", "The sink needs a 'path' option."),
    C.STREAM_SINK_NOT_RESUMABLE: E(
        "0A000",
        "Spark's memory sink resumes from a checkpoint only in OUTPUT MODE COMPLETE.",
    ),
    C.STREAM_SOURCE_PATH_REQUIRED: E("42000", "The stream's file source needs a 'path' option."),
    C.STREAM_SOURCE_SCHEMA_REQUIRED: E(
        "42000", "The stream's file source needs a schema (its columns, or schema inference)."
    ),
    C.STREAM_SCRIPT_EMPTY: E("42601", "A stream job's script holds no statement."),
    C.STREAM_SCRIPT_WITHOUT_QUERY: E(
        "42000", "A stream job's script starts no streaming query (no SAVE STREAM)."
    ),
    C.STREAM_CHECKPOINT_SHARED: E(
        "42710", "Two streaming queries give the same checkpointLocation; each needs its own."
    ),
    C.STREAM_QUERY_NAME_CLASH: E(
        "42710", "Two streaming queries would share a name; tell them apart with IDENTIFIED BY."
    ),
    # stream jobs
    C.STREAM_FAILED: E("HY000", "A streaming query failed and Spark named no error class for it."),
    C.STREAM_JOB_EXISTS: E("42710", "A stream job of that name already exists."),
    C.STREAM_JOB_ACTIVE: E(
        "55006", "The stream job runs; stop it (and wait until it is stopped) first."
    ),
    C.STREAM_JOB_BUSY: E("55006", "The stream job is on its way to or from running; wait."),
    C.STREAM_JOB_SUPERSEDED: E(
        "55000", "Another session (or none) runs this stream job now; this one no longer does."
    ),
    # jobs and deploys
    C.MANIFESTS_INVALID: E(
        "42000", "The manifests have problems (each with file, field and line): nothing deployed."
    ),
    C.DEPLOY_IN_PROGRESS: E("55006", "Another deploy is running; deploys run one at a time."),
    C.DEPLOY_INCOMPLETE: E("HY000", "A deploy ended with some jobs not deployed (named)."),
    C.DEPLOYMENT_ABANDONED: E(
        "57000", "The node running the deploy stopped or died; deploy again."
    ),
    C.DEPLOYMENT_INTERRUPTED: E("57000", "The deploy stopped before its end; deploy again."),
    C.JOB_NOT_DEPLOYED: E("HY000", "One job could not be deployed as planned (the others go on)."),
    C.JOB_NOT_BATCH: E(
        "42809", "Only batch jobs run on request; a streaming job runs as its stream job."
    ),
    C.JOB_REMOVED: E("55000", "The job was removed by a deploy with --prune."),
    C.JOB_RUN_LOST: E(
        "08006", "A job run's session was never opened, or was lost before the run could end."
    ),
    # saved queries
    C.SAVED_QUERY_EXISTS: E("42710", "You already have a saved query of that name."),
}


def entry(code: str) -> ErrorEntry | None:
    """The entry of one of sparkgate's codes; None for a code that is not sparkgate's (a
    Spark condition, a Python exception's name)."""
    return ERRORS.get(ErrorCode(code)) if code in ErrorCode.__members__ else None


def sql_state(error: RecordedError | None) -> str | None:
    """The SQLSTATE a SQL client is told for ``error``: Spark's own when it gave one, else
    sparkgate's for its own codes, else None (an error that is neither says nothing)."""
    if error is None:
        return None
    spark_state = error.param("sql_state")
    if spark_state:
        return str(spark_state)
    found = entry(error.code)
    return found.sqlstate if found else None
