"""The one writer of state columns.

Every change of the state of a session, statement, engine, two-phase table write, stream job,
stream query, deployment or batch job run goes through here, as compare-and-set:
``UPDATE ... SET state = :to WHERE id = :id AND state IN (:allowed)``, where ``allowed`` comes
from the transition tables in ``sparkgate.states`` (optionally narrowed by the caller). Two
writers racing for the same row cannot both win: the loser's WHERE no longer matches, and it
gets an ``Outcome`` saying so and what the state is now. Timestamps that belong to a state
(``started_at``, ``finished_at``) are written in the same statement. An ``error`` may be given as a
``RecordedError`` (stored as its ``to_json()``) or as the JSON a record already holds.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from contextlib import AbstractContextManager, nullcontext
from dataclasses import dataclass
from typing import Any, Generic

import sqlalchemy as sa
from sqlalchemy.engine import Connection

from sparkgate.recorded import RecordedError
from sparkgate.states import (
    TERMINAL_ENGINE_STATES,
    TERMINAL_SESSION_STATES,
    TERMINAL_STATEMENT_STATES,
    DeploymentState,
    EngineState,
    JobRunState,
    SessionState,
    StatementState,
    StreamJobState,
    StreamQueryState,
    TableTxnState,
)
from sparkgate.store import schema
from sparkgate.store.database import Database
from sparkgate.store.hints import ADMITTED, ENGINE_CHANGED, NEW_STATEMENT, NODES, engine_channel
from sparkgate.store.machines import (
    DEPLOYMENT,
    ENGINE,
    JOB_RUN,
    SESSION,
    STATEMENT,
    STREAM_JOB,
    STREAM_QUERY,
    TABLE_TXN,
    Machine,
    S,
    stored,
)
from sparkgate.store.resource_groups import ResourceGroups


@dataclass(frozen=True)
class Outcome(Generic[S]):
    """What a transition did. ``state`` is the state now; None when the row does not exist."""

    applied: bool
    state: S | None

    @property
    def missing(self) -> bool:
        return self.state is None


class Transitions:
    def __init__(self, db: Database, groups: ResourceGroups | None = None) -> None:
        self._db = db
        self._updates: dict[tuple[Any, ...], sa.Update] = {}
        self._groups = groups or ResourceGroups(db)

    def statement(
        self,
        statement_id: int,
        to: StatementState,
        *,
        now: float,
        expected: Iterable[StatementState] | None = None,
        conn: Connection | None = None,
        expected_version: int | None = None,
        **values: Any,
    ) -> Outcome[StatementState]:
        """Move one statement to ``to``; e.g. ``statement(7, RUNNING, now=t)``."""
        return self._one(STATEMENT, statement_id, to, now, expected, expected_version, conn, values)

    def session(
        self,
        session_id: int,
        to: SessionState,
        *,
        now: float,
        expected: Iterable[SessionState] | None = None,
        conn: Connection | None = None,
        expected_version: int | None = None,
        **values: Any,
    ) -> Outcome[SessionState]:
        return self._one(SESSION, session_id, to, now, expected, expected_version, conn, values)

    def engine(
        self,
        engine_id: int,
        to: EngineState,
        *,
        now: float,
        expected: Iterable[EngineState] | None = None,
        conn: Connection | None = None,
        expected_version: int | None = None,
        **values: Any,
    ) -> Outcome[EngineState]:
        return self._one(ENGINE, engine_id, to, now, expected, expected_version, conn, values)

    def table_txn(
        self,
        txn_id: int,
        to: TableTxnState,
        *,
        now: float,
        expected: Iterable[TableTxnState] | None = None,
        conn: Connection | None = None,
        expected_version: int | None = None,
        **values: Any,
    ) -> Outcome[TableTxnState]:
        """Move a two-phase table write; e.g. ``table_txn(4, ABORTED, now=t, error=...)``."""
        return self._one(TABLE_TXN, txn_id, to, now, expected, expected_version, conn, values)

    def stream_job(
        self,
        job_id: int,
        to: StreamJobState,
        *,
        now: float,
        expected: Iterable[StreamJobState] | None = None,
        conn: Connection | None = None,
        expected_version: int | None = None,
        **values: Any,
    ) -> Outcome[StreamJobState]:
        """Move a stream job; e.g. ``stream_job(3, STOPPING, now=t, expected=[RUNNING])``."""
        return self._one(STREAM_JOB, job_id, to, now, expected, expected_version, conn, values)

    def stream_query(
        self,
        query_id: int,
        to: StreamQueryState,
        *,
        now: float,
        expected: Iterable[StreamQueryState] | None = None,
        conn: Connection | None = None,
        expected_version: int | None = None,
        guard: Mapping[str, Any] | None = None,
        **values: Any,
    ) -> Outcome[StreamQueryState]:
        """Move a streaming query. ``guard`` adds equality conditions: an engine passes
        ``{"session_id": its session}`` so a superseded run can never move the row."""
        return self._one(
            STREAM_QUERY, query_id, to, now, expected, expected_version, conn, values, guard
        )

    def deployment(
        self,
        deployment_id: int,
        to: DeploymentState,
        *,
        now: float,
        expected: Iterable[DeploymentState] | None = None,
        conn: Connection | None = None,
        expected_version: int | None = None,
        **values: Any,
    ) -> Outcome[DeploymentState]:
        """End a deploy; e.g. ``deployment(5, FAILED, now=t, error=...)``."""
        return self._one(
            DEPLOYMENT, deployment_id, to, now, expected, expected_version, conn, values
        )

    def job_run(
        self,
        run_id: int,
        to: JobRunState,
        *,
        now: float,
        expected: Iterable[JobRunState] | None = None,
        conn: Connection | None = None,
        expected_version: int | None = None,
        **values: Any,
    ) -> Outcome[JobRunState]:
        """End a batch job's run; e.g. ``job_run(3, SUCCEEDED, now=t)``."""
        return self._one(JOB_RUN, run_id, to, now, expected, expected_version, conn, values)

    def stream_queries_of_job(
        self,
        job_id: int,
        to: StreamQueryState,
        *,
        now: float,
        expected: Iterable[StreamQueryState] | None = None,
        conn: Connection | None = None,
        **values: Any,
    ) -> list[int]:
        """Move every query of a stream job that may move to ``to``; the ids moved."""
        return self._many(STREAM_QUERY, "job_id", job_id, to, now, expected, conn, values)

    def stream_queries_of_session(
        self,
        session_id: int,
        to: StreamQueryState,
        *,
        now: float,
        expected: Iterable[StreamQueryState] | None = None,
        conn: Connection | None = None,
        **values: Any,
    ) -> list[int]:
        """Move every query run by a session that may move to ``to``; the ids moved."""
        return self._many(STREAM_QUERY, "session_id", session_id, to, now, expected, conn, values)

    def _many(
        self,
        machine: Machine[S],
        column: str,
        key: int,
        to: S,
        now: float,
        expected: Iterable[S] | None,
        conn: Connection | None,
        values: Mapping[str, Any],
    ) -> list[int]:
        table = machine.table
        stmt = (
            table.update()
            .where(table.c[column] == key)
            .where(table.c.state.in_(machine.allowed_sources(to, expected)))
            .values(machine.values_for(to, now, values))
            .returning(table.c.id)
        )
        with self._conn(conn) as c:
            return sorted(row.id for row in c.execute(stmt))

    def statements_of_session(
        self,
        session_id: int,
        to: StatementState,
        *,
        now: float,
        expected: Iterable[StatementState] | None = None,
        conn: Connection | None = None,
        **values: Any,
    ) -> list[int]:
        """Move every statement of a session that may move to ``to``; the ids moved."""
        machine = STATEMENT
        table = machine.table
        stmt = (
            table.update()
            .where(table.c.session_id == session_id)
            .where(table.c.state.in_(machine.allowed_sources(to, expected)))
            .values(machine.values_for(to, now, values))
            .returning(table.c.id)
        )
        with self._conn(conn) as c:
            moved = sorted(row.id for row in c.execute(stmt))
            if moved and to in TERMINAL_STATEMENT_STATES:
                for statement_id in moved:
                    self._db.hint(c, NODES, statement_id)
                for root in self._groups.end(c, moved):
                    self.admit(root, now=now, conn=c)
            elif moved and to is StatementState.CANCELLING:
                wake_engine_of(self._db, c, session_id=session_id)
            return moved

    def end_statements_of_session(
        self, session_id: int, error: RecordedError, *, now: float, conn: Connection
    ) -> None:
        """The session's work cannot go on (its engine is lost or stopped): waiting and running
        statements fail with ``error``; those being cancelled are cancelled, as was asked."""
        self.statements_of_session(
            session_id,
            StatementState.FAILED,
            now=now,
            expected=[StatementState.QUEUED, StatementState.WAITING, StatementState.RUNNING],
            error=error,
            conn=conn,
        )
        self.statements_of_session(
            session_id,
            StatementState.CANCELLED,
            now=now,
            expected=[StatementState.CANCELLING],
            conn=conn,
        )

    def sessions_of_engine(
        self,
        engine_id: int,
        to: SessionState,
        *,
        now: float,
        expected: Iterable[SessionState] | None = None,
        conn: Connection | None = None,
        **values: Any,
    ) -> list[int]:
        """Move every session hosted by an engine that may move to ``to``; the ids moved."""
        machine = SESSION
        table = machine.table
        stmt = (
            table.update()
            .where(table.c.engine_id == engine_id)
            .where(table.c.state.in_(machine.allowed_sources(to, expected)))
            .values(machine.values_for(to, now, values))
            .returning(table.c.id)
        )
        with self._conn(conn) as c:
            moved = sorted(row.id for row in c.execute(stmt))
            if to in TERMINAL_SESSION_STATES:
                for session_id in moved:
                    self._end_places(c, session_id, now)
            return moved

    def _end_places(self, conn: Connection, session_id: int, now: float) -> None:
        """An ended session's turns are over (a stream job holds one while its session lives:
        ``store.resource_groups``), and the next statements are admitted."""
        for root in self._groups.end_session(conn, session_id):
            self.admit(root, now=now, conn=conn)

    def _one(
        self,
        machine: Machine[S],
        row_id: int,
        to: S,
        now: float,
        expected: Iterable[S] | None,
        expected_version: int | None,
        conn: Connection | None,
        values: Mapping[str, Any],
        guard: Mapping[str, Any] | None = None,
    ) -> Outcome[S]:
        table = machine.table
        sources = tuple(machine.allowed_sources(to, expected))
        guard = guard or {}
        stmt = self._update(
            machine, to, sources, expected_version is not None, tuple(guard), tuple(values)
        )
        params: dict[str, Any] = {"row_id": row_id, "now": now}
        if expected_version is not None:
            params["expected_version"] = expected_version
        params.update({f"guard_{column}": value for column, value in guard.items()})
        params.update({f"set_{name}": stored(value) for name, value in values.items()})
        with self._conn(conn) as c:
            if c.execute(stmt, params).rowcount == 1:
                self._wake(c, machine, row_id, to, values)
                if machine is STATEMENT and to in TERMINAL_STATEMENT_STATES:
                    # An end gives its resource group's turn to the next (store.resource_groups).
                    for root in self._groups.end(c, [row_id]):
                        self.admit(root, now=now, conn=c)
                elif machine is SESSION and to in TERMINAL_SESSION_STATES:
                    self._end_places(c, row_id, now)
                return Outcome(True, to)
            current = c.execute(sa.select(table.c.state).where(table.c.id == row_id)).scalar()
        return Outcome(False, None if current is None else machine.enum(current))

    def _update(
        self,
        machine: Machine[S],
        to: S,
        sources: tuple[str, ...],
        versioned: bool,
        guarded: tuple[str, ...],
        setting: tuple[str, ...],
    ) -> sa.Update:
        """The compare-and-set UPDATE of one shape of move, built once: its values are bound
        at execution. Building and keying a statement costs more Python than running it on
        SQLite, and a statement's claim and end are four of these."""
        key = (machine.table.name, to, sources, versioned, guarded, setting)
        found = self._updates.get(key)
        if found is not None:
            return found
        table = machine.table
        now = sa.bindparam("now", type_=table.c.updated_at.type)
        where = [table.c.id == sa.bindparam("row_id"), table.c.state.in_(sources)]
        if versioned:
            where.append(table.c.version == sa.bindparam("expected_version"))
        where.extend(
            table.c[column] == sa.bindparam(f"guard_{column}", type_=table.c[column].type)
            for column in guarded
        )
        bound = {name: sa.bindparam(f"set_{name}", type_=table.c[name].type) for name in setting}
        stmt = table.update().where(*where).values(machine.values_for(to, now, bound))
        self._updates[key] = stmt
        return stmt

    def _wake(
        self, conn: Connection, machine: Machine[Any], row_id: int, to: Any, values: Any
    ) -> None:
        """Hint whoever must act on this move (see ``store.hints``), in its transaction."""
        if machine is STATEMENT:
            if to in TERMINAL_STATEMENT_STATES:
                self._db.hint(conn, NODES, row_id)  # long polls waiting for it
            elif to is StatementState.CANCELLING:
                wake_engine_of(self._db, conn, statement_id=row_id)
            elif to is StatementState.WAITING:  # admitted from its queue: its engine runs it
                wake_engine_of(self._db, conn, statement_id=row_id, new=True)
        elif machine is SESSION:
            if values.get("engine_id") is not None:
                self._db.hint(conn, engine_channel(values["engine_id"]), row_id)  # placed
            elif to in TERMINAL_SESSION_STATES:
                wake_engine_of(self._db, conn, session_id=row_id)  # ended: it lets go
        elif machine is ENGINE and (to is EngineState.STOPPING or to in TERMINAL_ENGINE_STATES):
            self._db.hint(conn, engine_channel(row_id), ENGINE_CHANGED)

    def admit(self, root: str, *, now: float, conn: Connection | None = None) -> list[int]:
        """Admit the queued statements of ``root``'s resource-group tree whose turn it is, while
        its groups have room (``store.resource_groups``); the ids admitted. Called in the
        transaction of every end of a statement that held a turn, so the next is admitted when
        the end commits, and by a node's duties as a safety net (a configuration that changed,
        an end written by a release that did not admit)."""
        admitted: list[int] = []
        with self._conn(conn) as c:
            tree = self._groups.tree(c, root)
            while (turn := self._groups.next(tree, root)) is not None:
                # A Spark Connect operation runs once its door forwards it (no engine claims
                # it): admitted, it is running, and the door holding its call is told.
                forwarded = c.execute(_IS_OPERATION, {"sid": turn.statement_id}).first()
                to = StatementState.WAITING if forwarded is None else StatementState.RUNNING
                moved = self._one(
                    STATEMENT, turn.statement_id, to, now, [StatementState.QUEUED], None, c, {}
                )
                if not moved.applied:  # cannot happen under the tree's lock; never loop on it
                    break
                if forwarded is not None:
                    self._db.hint(c, NODES, f"{ADMITTED}{turn.statement_id}")
                self._groups.admitted(c, turn)
                admitted.append(turn.statement_id)
                tree = self._groups.tree(c, root, lock=False)
        return admitted

    def _conn(self, conn: Connection | None) -> AbstractContextManager[Connection]:
        """The caller's transaction when given one, else a write transaction of our own."""
        return nullcontext(conn) if conn is not None else self._db.begin()


_IS_OPERATION = sa.select(schema.connect_operations.c.statement_id).where(
    schema.connect_operations.c.statement_id == sa.bindparam("sid")
)


def wake_engine_of(
    db: Database,
    conn: Connection,
    *,
    session_id: int | None = None,
    statement_id: int | None = None,
    new: bool = False,
) -> None:
    """Hint the engine serving a session (or a statement's session), if it has one; ``new``:
    the statement is new work for it (nothing else of the session changed)."""
    sessions, statements = schema.sessions, schema.statements
    query = sa.select(sessions.c.engine_id)
    if statement_id is not None:
        query = query.join(statements, statements.c.session_id == sessions.c.id).where(
            statements.c.id == statement_id
        )
    else:
        query = query.where(sessions.c.id == session_id)
    engine_id = conn.execute(query).scalar()
    if engine_id is not None:
        payload = statement_id or session_id or ""
        db.hint(conn, engine_channel(engine_id), f"{NEW_STATEMENT}{payload}" if new else payload)
