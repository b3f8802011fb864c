"""Livy's states and kinds, from sparkgate's: the one place they are mapped.

Session states (Livy's ``SessionState``): ``not_started, starting, recovering, idle, running,
busy, shutting_down, error, dead, killed, success``; sparkgate never reports ``recovering`` or
``shutting_down`` (a restarted server has nothing to recover: the store has it all, and the
engines kept running).

    interactive_state(SessionState.BUSY)                          # "busy"
    batch_state(SessionState.DEAD, StatementState.SUCCESS)        # "success"
    statement_state(StatementState.FAILED)                        # "available" (output: error)
"""

from __future__ import annotations

from typing import Literal

from sparkgate.errors import InvalidRequest
from sparkgate.states import SessionState, StatementKind, StatementState

# What Livy's JSON shows (and the OpenAPI schema lists: ``livy/bodies.py``).
LivySessionState = Literal["not_started", "starting", "idle", "busy", "dead", "killed", "error"]
LivyBatchState = Literal["starting", "running", "success", "dead", "killed"]
LivyStatementState = Literal["waiting", "running", "available", "cancelling", "cancelled"]
LivySessionKind = Literal["pyspark", "sql", "shared"]

_INTERACTIVE: dict[SessionState, LivySessionState] = {
    SessionState.NOT_STARTED: "not_started",
    SessionState.STARTING: "starting",
    SessionState.IDLE: "idle",
    SessionState.BUSY: "busy",
    SessionState.DEAD: "dead",
    SessionState.KILLED: "killed",
    SessionState.ERROR: "error",
}

_STATEMENT: dict[StatementState, LivyStatementState] = {
    StatementState.QUEUED: "waiting",  # Livy has no queue: waiting for its turn is waiting
    StatementState.WAITING: "waiting",
    StatementState.RUNNING: "running",
    # Livy's "available" means "has its output": success or failure, told by output.status.
    StatementState.SUCCESS: "available",
    StatementState.FAILED: "available",
    StatementState.CANCELLING: "cancelling",
    StatementState.CANCELLED: "cancelled",
}

FINAL_STATEMENT_STATES = frozenset(
    {StatementState.SUCCESS, StatementState.FAILED, StatementState.CANCELLED}
)


def interactive_state(state: SessionState) -> LivySessionState:
    return _INTERACTIVE[state]


def batch_state(session: SessionState, statement: StatementState | None) -> LivyBatchState:
    """A batch is ``starting`` until its engine runs it, ``running``, then ``success``, ``dead``
    (failed, or its engine was lost or could not start) or ``killed`` (killed or cancelled)."""
    if session in (SessionState.NOT_STARTED, SessionState.STARTING):
        return "starting"
    if session in (SessionState.IDLE, SessionState.BUSY):
        return "running"
    if session is SessionState.KILLED or statement is StatementState.CANCELLED:
        return "killed"
    if session is SessionState.DEAD and statement is StatementState.SUCCESS:
        return "success"
    return "dead"


def statement_state(state: StatementState) -> LivyStatementState:
    return _STATEMENT[state]


# -- kinds ----------------------------------------------------------------------------------

SESSION_KINDS: dict[str, LivySessionKind] = {
    "pyspark": "pyspark",
    "python": "pyspark",
    "sql": "sql",
    "shared": "shared",
}
STATEMENT_KINDS = {
    "pyspark": StatementKind.PYSPARK,
    "python": StatementKind.PYSPARK,
    "sql": StatementKind.SQL,
}
_NOT_HERE = {"spark": "Scala", "scala": "Scala", "sparkr": "R", "r": "R", "pyspark3": None}
# Livy's default since 0.5: the kind is given per statement.
DEFAULT_SESSION_KIND: LivySessionKind = "shared"


def _refusal(what: str, kind: str) -> str:
    language = _NOT_HERE.get(kind.lower())
    if kind.lower() == "pyspark3":
        return f"{what} kind 'pyspark3' was removed in Livy 0.5; use 'pyspark'."
    why = f"sparkgate runs no {language} code" if language else "it is not a Livy kind"
    return f"{what} kind {kind!r} is not supported: {why}. Use 'pyspark' (Python) or 'sql'."


def session_kind(kind: str | None) -> LivySessionKind:
    """The canonical Livy session kind of a create request; refuses Scala, R and unknowns."""
    if kind is None:
        return DEFAULT_SESSION_KIND
    canonical = SESSION_KINDS.get(kind.lower())
    if canonical is None:
        raise InvalidRequest(_refusal("Session", kind), field="kind")
    return canonical


def statement_kind(kind: str | None, session_kind: str, session_id: int) -> StatementKind:
    """What a statement runs as: its own kind, else its session's; shared sessions need one."""
    if kind is None:
        if session_kind == "shared":
            raise InvalidRequest(
                f"Session {session_id} is of kind 'shared': give the statement's kind "
                '("kind": "pyspark" or "sql").',
                field="kind",
            )
        kind = session_kind
    found = STATEMENT_KINDS.get(kind.lower())
    if found is None:
        raise InvalidRequest(_refusal("Statement", kind), field="kind")
    return found
