"""States of sessions, statements and engines, and which moves between them are allowed.

The enum values are exactly what the store holds and what the JSON API shows. This module
imports nothing else of sparkgate's: everything else may depend on it.
"""

from __future__ import annotations

from collections.abc import Mapping
from enum import Enum, StrEnum
from typing import TypeVar

S = TypeVar("S", bound=Enum)


class StatementState(StrEnum):
    QUEUED = "queued"  # its resource group is full: it waits for a turn (store.resource_groups)
    WAITING = "waiting"
    RUNNING = "running"
    SUCCESS = "success"
    FAILED = "failed"
    CANCELLING = "cancelling"
    CANCELLED = "cancelled"


class SessionState(StrEnum):
    NOT_STARTED = "not_started"
    STARTING = "starting"
    IDLE = "idle"
    BUSY = "busy"
    DEAD = "dead"
    KILLED = "killed"
    ERROR = "error"


class SessionKind(StrEnum):
    INTERACTIVE = "interactive"
    BATCH = "batch"
    STREAMING = "streaming"  # runs a stream job's script; its streaming queries outlive it


class StatementKind(StrEnum):
    SQL = "sql"
    PYSPARK = "pyspark"  # Python in the session's namespace, like a REPL (Livy's pyspark)
    FILE = "file"  # a .py or .sql file the engine reads; the code is "path arg..." (a batch)
    # A catalog listing for JDBC/ODBC clients (GetTables, GetColumns, ...): the code is a JSON
    # request ({"call": "tables", ...}); the result has the column layout JDBC expects.
    CATALOG = "catalog"
    # A Spark Connect operation (a DataFrame plan) the Connect door forwards to the engine's
    # Connect service; the code is a readable summary of the plan. (SQL text sent through
    # Connect is recorded as ``sql``.)
    DATAFRAME = "dataframe"
    # A file uploaded into a table (sparkgate load): the code is a JSON LoadRequest
    # (sparkgate.tables.uploads) naming the uploaded file, the table and how.
    LOAD = "load"


class EngineState(StrEnum):
    STARTING = "starting"  # process launched, Spark not up yet
    RUNNING = "running"  # heartbeating, taking work
    STOPPING = "stopping"  # asked to stop; finishes what it runs, takes nothing new
    STOPPED = "stopped"  # exited cleanly
    FAILED = "failed"  # could not start, or crashed and said so
    LOST = "lost"  # stopped heartbeating; declared dead by a reaper


class EngineKind(StrEnum):
    SHARED = "shared"  # hosts many interactive sessions through SparkSession.newSession()
    DEDICATED = "dedicated"  # hosts one session (a batch, or a session with static Spark conf)
    STREAMING = "streaming"  # hosts stream jobs' sessions (newSession() each), apart from queries


class StreamJobState(StrEnum):
    PENDING = "pending"  # to be launched: just created, or started again
    STARTING = "starting"  # its script runs in a streaming session
    RUNNING = "running"  # every statement of its script succeeded; its queries run
    RESTARTING = "restarting"  # its session or engine was lost; relaunched at next_restart_at
    STOPPING = "stopping"  # asked to stop: its queries stop at a batch boundary, then stopped
    FAILING = "failing"  # a query failed for good (or the script did): the others stop, then failed
    STOPPED = "stopped"
    FAILED = "failed"


class StreamQueryState(StrEnum):
    STARTING = "starting"  # being started (first time, or again from its checkpoint)
    RUNNING = "running"
    RESTARTING = "restarting"  # failed; starts again from its checkpoint at next_restart_at
    STOPPING = "stopping"  # asked to stop at the end of its current micro-batch
    STOPPED = "stopped"
    FAILED = "failed"  # failed for good: retries disabled or used up


class TableTxnState(StrEnum):
    """A two-phase table write (atomic CREATE/REPLACE TABLE AS SELECT)."""

    PENDING = "pending"  # begun: data is being written to staging, nothing visible yet
    COMMITTING = "committing"  # the switch (rename, or location change) is under way
    COMMITTED = "committed"  # the new table (version) is what readers see
    ABORTED = "aborted"  # nothing became visible; staging is (being) removed


class DeploymentState(StrEnum):
    """A deploy: jobs declared in manifests, reconciled with what runs (``sparkgate deploy``)."""

    RUNNING = "running"  # its node works through the plan, holding the ``deploy`` lease
    SUCCEEDED = "succeeded"  # every job is as its manifest declares (a plan only: planned)
    FAILED = "failed"  # some job could not be deployed, or its node died (abandoned)


class JobRunState(StrEnum):
    """A run of a batch job (``sparkgate jobs run NAME``)."""

    RUNNING = "running"  # its session runs the sources, then the atomic write of the target
    SUCCEEDED = "succeeded"  # the target table was replaced, whole
    FAILED = "failed"  # a statement failed (nothing was written), or its session ended
    CANCELLED = "cancelled"


class TableOperation(StrEnum):
    CREATE = "create"  # a new table: staged under a hidden name, then renamed into place
    REPLACE = "replace"  # a new version directory, then the table's location is switched


TERMINAL_STATEMENT_STATES = frozenset(
    {StatementState.SUCCESS, StatementState.FAILED, StatementState.CANCELLED}
)
ACTIVE_STATEMENT_STATES = frozenset(StatementState) - TERMINAL_STATEMENT_STATES

TERMINAL_SESSION_STATES = frozenset({SessionState.DEAD, SessionState.KILLED, SessionState.ERROR})
ACTIVE_SESSION_STATES = frozenset(SessionState) - TERMINAL_SESSION_STATES

TERMINAL_ENGINE_STATES = frozenset({EngineState.STOPPED, EngineState.FAILED, EngineState.LOST})
LIVE_ENGINE_STATES = frozenset(EngineState) - TERMINAL_ENGINE_STATES

TERMINAL_TABLE_TXN_STATES = frozenset({TableTxnState.COMMITTED, TableTxnState.ABORTED})
OPEN_TABLE_TXN_STATES = frozenset(TableTxnState) - TERMINAL_TABLE_TXN_STATES


TERMINAL_DEPLOYMENT_STATES = frozenset({DeploymentState.SUCCEEDED, DeploymentState.FAILED})
TERMINAL_JOB_RUN_STATES = frozenset(
    {JobRunState.SUCCEEDED, JobRunState.FAILED, JobRunState.CANCELLED}
)

# A stream job or query that is stopped or failed can be started again (from its checkpoints),
# so these groups are "not running" rather than final.
INACTIVE_STREAM_JOB_STATES = frozenset({StreamJobState.STOPPED, StreamJobState.FAILED})
ACTIVE_STREAM_JOB_STATES = frozenset(StreamJobState) - INACTIVE_STREAM_JOB_STATES
INACTIVE_STREAM_QUERY_STATES = frozenset({StreamQueryState.STOPPED, StreamQueryState.FAILED})
ACTIVE_STREAM_QUERY_STATES = frozenset(StreamQueryState) - INACTIVE_STREAM_QUERY_STATES


STATEMENT_TRANSITIONS: Mapping[StatementState, frozenset[StatementState]] = {
    # waiting: admitted (a query of its group ended); running: a Spark Connect operation
    # admitted, which its door forwards at once; failed: its session ended meanwhile
    StatementState.QUEUED: frozenset(
        {
            StatementState.WAITING,
            StatementState.RUNNING,
            StatementState.CANCELLED,
            StatementState.FAILED,
        }
    ),
    StatementState.WAITING: frozenset(
        # failed: the session ended (engine lost, could not start) before the statement ran
        {StatementState.RUNNING, StatementState.CANCELLED, StatementState.FAILED}
    ),
    StatementState.RUNNING: frozenset(
        {
            StatementState.SUCCESS,
            StatementState.FAILED,
            StatementState.CANCELLING,
            StatementState.CANCELLED,
        }
    ),
    # A statement that completes before the cancel reaches its Spark jobs keeps its real
    # outcome: its side effects (a created table, say) happened, and hiding that would lie.
    StatementState.CANCELLING: frozenset(
        {StatementState.CANCELLED, StatementState.SUCCESS, StatementState.FAILED}
    ),
    StatementState.SUCCESS: frozenset(),
    StatementState.FAILED: frozenset(),
    StatementState.CANCELLED: frozenset(),
}

SESSION_TRANSITIONS: Mapping[SessionState, frozenset[SessionState]] = {
    SessionState.NOT_STARTED: frozenset(
        {SessionState.STARTING, SessionState.DEAD, SessionState.KILLED, SessionState.ERROR}
    ),
    SessionState.STARTING: frozenset(
        {SessionState.IDLE, SessionState.DEAD, SessionState.KILLED, SessionState.ERROR}
    ),
    SessionState.IDLE: frozenset(
        {SessionState.BUSY, SessionState.DEAD, SessionState.KILLED, SessionState.ERROR}
    ),
    SessionState.BUSY: frozenset(
        {SessionState.IDLE, SessionState.DEAD, SessionState.KILLED, SessionState.ERROR}
    ),
    SessionState.DEAD: frozenset(),
    SessionState.KILLED: frozenset(),
    SessionState.ERROR: frozenset(),
}

ENGINE_TRANSITIONS: Mapping[EngineState, frozenset[EngineState]] = {
    EngineState.STARTING: frozenset(
        {
            EngineState.RUNNING,
            EngineState.STOPPING,
            EngineState.STOPPED,
            EngineState.FAILED,
            EngineState.LOST,
        }
    ),
    EngineState.RUNNING: frozenset(
        {EngineState.STOPPING, EngineState.STOPPED, EngineState.FAILED, EngineState.LOST}
    ),
    EngineState.STOPPING: frozenset({EngineState.STOPPED, EngineState.FAILED, EngineState.LOST}),
    EngineState.STOPPED: frozenset(),
    EngineState.FAILED: frozenset(),
    EngineState.LOST: frozenset(),
}


TABLE_TXN_TRANSITIONS: Mapping[TableTxnState, frozenset[TableTxnState]] = {
    TableTxnState.PENDING: frozenset({TableTxnState.COMMITTING, TableTxnState.ABORTED}),
    # aborted from committing: the switch failed, or its engine died before it (recovery)
    TableTxnState.COMMITTING: frozenset({TableTxnState.COMMITTED, TableTxnState.ABORTED}),
    TableTxnState.COMMITTED: frozenset(),
    TableTxnState.ABORTED: frozenset(),
}


_J = StreamJobState
STREAM_JOB_TRANSITIONS: Mapping[StreamJobState, frozenset[StreamJobState]] = {
    # stopped: stop asked before it was launched; failed: it could not be launched
    _J.PENDING: frozenset({_J.STARTING, _J.STOPPED, _J.FAILED}),
    _J.STARTING: frozenset({_J.RUNNING, _J.RESTARTING, _J.STOPPING, _J.FAILING, _J.FAILED}),
    _J.RUNNING: frozenset({_J.RESTARTING, _J.STOPPING, _J.FAILING, _J.FAILED}),
    # Nothing runs while it waits to be relaunched: a stop needs no engine.
    _J.RESTARTING: frozenset({_J.STARTING, _J.STOPPED, _J.FAILED}),
    _J.STOPPING: frozenset({_J.STOPPED, _J.FAILED}),
    _J.FAILING: frozenset({_J.FAILED}),
    _J.STOPPED: frozenset({_J.PENDING}),
    _J.FAILED: frozenset({_J.PENDING}),
}

_Q = StreamQueryState
STREAM_QUERY_TRANSITIONS: Mapping[StreamQueryState, frozenset[StreamQueryState]] = {
    _Q.STARTING: frozenset({_Q.RUNNING, _Q.RESTARTING, _Q.STOPPING, _Q.STOPPED, _Q.FAILED}),
    _Q.RUNNING: frozenset({_Q.RESTARTING, _Q.STOPPING, _Q.STOPPED, _Q.FAILED}),
    _Q.RESTARTING: frozenset({_Q.STARTING, _Q.STOPPING, _Q.STOPPED, _Q.FAILED}),
    _Q.STOPPING: frozenset({_Q.STOPPED, _Q.FAILED}),
    # A stream job's queries are started again (from their checkpoints) with the job.
    _Q.STOPPED: frozenset({_Q.STARTING}),
    _Q.FAILED: frozenset({_Q.STARTING}),
}


DEPLOYMENT_TRANSITIONS: Mapping[DeploymentState, frozenset[DeploymentState]] = {
    DeploymentState.RUNNING: frozenset({DeploymentState.SUCCEEDED, DeploymentState.FAILED}),
    DeploymentState.SUCCEEDED: frozenset(),
    DeploymentState.FAILED: frozenset(),
}

JOB_RUN_TRANSITIONS: Mapping[JobRunState, frozenset[JobRunState]] = {
    JobRunState.RUNNING: frozenset(
        {JobRunState.SUCCEEDED, JobRunState.FAILED, JobRunState.CANCELLED}
    ),
    JobRunState.SUCCEEDED: frozenset(),
    JobRunState.FAILED: frozenset(),
    JobRunState.CANCELLED: frozenset(),
}


def sources_of(table: Mapping[S, frozenset[S]], target: S) -> frozenset[S]:
    """The states from which `target` may be entered."""
    return frozenset(source for source, targets in table.items() if target in targets)


# What deploying a manifest does to one job (jobs/plan.py decides it).
class ActionKind(StrEnum):
    START_CLEAN = "start-clean"  # new version (or first), empty checkpoint directory
    RESUME = "resume"  # start from the latest checkpoint of the current version
    RESTART_CLEAN = "restart-clean"  # stop gracefully, then start a new version clean
    RESTART_RESUME = "restart-resume"  # stop gracefully, then resume from the saved state
    UPDATE = "update"  # record the manifest; what runs is not touched
    REGISTER = "register"  # batch job: store the definition (runs on `jobs run`)
    NOTHING = "nothing"
    ERROR = "error"  # cannot deploy as asked; nothing is changed for this job
    REMOVE = "remove"  # manifest gone and pruning asked: stop and forget the job
    ORPHANED = "orphaned"  # manifest gone, not pruned: left as it is
