"""The state machine of each table whose state ``transitions`` writes: the table, the moves
its states may make (from ``sparkgate.states``), which states set ``started_at`` and which
``finished_at``, and the values one move writes."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from enum import Enum
from typing import Any, Generic, TypeVar

import sqlalchemy as sa

from sparkgate.recorded import RecordedError
from sparkgate.states import (
    DEPLOYMENT_TRANSITIONS,
    ENGINE_TRANSITIONS,
    INACTIVE_STREAM_JOB_STATES,
    INACTIVE_STREAM_QUERY_STATES,
    JOB_RUN_TRANSITIONS,
    SESSION_TRANSITIONS,
    STATEMENT_TRANSITIONS,
    STREAM_JOB_TRANSITIONS,
    STREAM_QUERY_TRANSITIONS,
    TABLE_TXN_TRANSITIONS,
    TERMINAL_DEPLOYMENT_STATES,
    TERMINAL_ENGINE_STATES,
    TERMINAL_JOB_RUN_STATES,
    TERMINAL_SESSION_STATES,
    TERMINAL_STATEMENT_STATES,
    TERMINAL_TABLE_TXN_STATES,
    DeploymentState,
    EngineState,
    JobRunState,
    SessionState,
    StatementState,
    StreamJobState,
    StreamQueryState,
    TableTxnState,
    sources_of,
)
from sparkgate.store import schema
from sparkgate.store.records import ResultInfo

S = TypeVar("S", bound=Enum)


@dataclass(frozen=True)
class Machine(Generic[S]):
    table: sa.Table
    transitions: Mapping[S, frozenset[S]]
    enum: type[S]
    started: frozenset[S]  # entering these sets started_at (once)
    terminal: frozenset[S]  # entering these sets finished_at

    def allowed_sources(self, to: S, expected: Iterable[S] | None) -> list[str]:
        allowed = sources_of(self.transitions, to)
        if expected is not None:
            wanted = frozenset(expected)
            if not wanted <= allowed:
                bad = ", ".join(sorted(s.value for s in wanted - allowed))
                raise ValueError(f"{self.table.name}: {bad} -> {to.value} is not a legal move")
            allowed = wanted
        return sorted(s.value for s in allowed)

    def values_for(self, to: S, now: Any, extra: Mapping[str, Any]) -> dict[str, Any]:
        table = self.table
        values: dict[str, Any] = {
            "state": to.value,
            "updated_at": now,
            "version": table.c.version + 1,
            **{name: stored(value) for name, value in extra.items()},
        }
        if to in self.started and "started_at" not in extra:
            values["started_at"] = sa.func.coalesce(table.c.started_at, now)
        if to in self.terminal and "finished_at" not in extra:
            values["finished_at"] = now
        return values


def stored(value: Any) -> Any:
    """A column's value as written: an ``error=`` given as a ``RecordedError`` and a
    ``result=`` given as a ``ResultInfo`` are kept as their JSON, so the engine side passes
    them typed and this is the one place they become JSON."""
    return value.to_json() if isinstance(value, (RecordedError, ResultInfo)) else value


STATEMENT = Machine(
    schema.statements,
    STATEMENT_TRANSITIONS,
    StatementState,
    frozenset({StatementState.RUNNING}),
    TERMINAL_STATEMENT_STATES,
)
SESSION = Machine(
    schema.sessions,
    SESSION_TRANSITIONS,
    SessionState,
    frozenset({SessionState.IDLE}),
    TERMINAL_SESSION_STATES,
)
ENGINE = Machine(
    schema.engines,
    ENGINE_TRANSITIONS,
    EngineState,
    frozenset({EngineState.RUNNING}),
    TERMINAL_ENGINE_STATES,
)

TABLE_TXN = Machine(
    schema.table_transactions,
    TABLE_TXN_TRANSITIONS,
    TableTxnState,
    frozenset(),
    TERMINAL_TABLE_TXN_STATES,
)
STREAM_JOB = Machine(
    schema.stream_jobs,
    STREAM_JOB_TRANSITIONS,
    StreamJobState,
    frozenset({StreamJobState.RUNNING}),
    INACTIVE_STREAM_JOB_STATES,
)
STREAM_QUERY = Machine(
    schema.stream_queries,
    STREAM_QUERY_TRANSITIONS,
    StreamQueryState,
    frozenset({StreamQueryState.RUNNING}),
    INACTIVE_STREAM_QUERY_STATES,
)

DEPLOYMENT = Machine(
    schema.deployments,
    DEPLOYMENT_TRANSITIONS,
    DeploymentState,
    frozenset(),
    TERMINAL_DEPLOYMENT_STATES,
)
JOB_RUN = Machine(
    schema.job_runs, JOB_RUN_TRANSITIONS, JobRunState, frozenset(), TERMINAL_JOB_RUN_STATES
)
