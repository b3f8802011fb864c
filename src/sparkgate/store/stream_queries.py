"""Streaming queries: a session's (SAVE STREAM) or a stream job's, recorded, claimed by the
session that runs them, read for a supervisor's tick, and found orphaned when their session
ended without them. State changes go through ``transitions``; everything else about these rows
is here, and their progress and restarts in ``stream_history``.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import sqlalchemy as sa
from sqlalchemy.engine import Connection

from sparkgate.errors.streams import StreamJobSuperseded, StreamQueryNameClash, StreamQueryNotFound
from sparkgate.recorded import RecordedError
from sparkgate.states import (
    ACTIVE_STREAM_QUERY_STATES,
    TERMINAL_SESSION_STATES,
    StreamJobState,
    StreamQueryState,
)
from sparkgate.store.database import Database
from sparkgate.store.records import StreamQueryRecord, read_error
from sparkgate.store.schema import sessions, stream_jobs, stream_queries
from sparkgate.store.sessions import active_or_ended_since, in_scope
from sparkgate.store.stream_history import StreamHistory
from sparkgate.store.transitions import Transitions
from sparkgate.stream_spec import QuerySpec

_ACTIVE_QUERY = [s.value for s in ACTIVE_STREAM_QUERY_STATES]
# A job's query row can be taken by the job's new session from these states.
_RECLAIMABLE = [StreamQueryState.STOPPED, StreamQueryState.FAILED, StreamQueryState.RESTARTING]
# Read every round of the streams duty: built once.
_ORPHANED = (
    sa.select(
        stream_queries,
        sessions.c.error.label("session_error"),
        sessions.c.finished_at.label("session_finished_at"),
    )
    .join(sessions, sessions.c.id == stream_queries.c.session_id)
    .where(stream_queries.c.job_id.is_(None))
    .where(stream_queries.c.state.in_(_ACTIVE_QUERY))
    .where(sessions.c.state.in_([s.value for s in TERMINAL_SESSION_STATES]))
)


class StreamQueries(StreamHistory):
    def __init__(self, db: Database, transitions: Transitions) -> None:
        self._db = db
        self._transitions = transitions

    def find(self, query_id: int) -> StreamQueryRecord | None:
        with self._db.read() as conn:
            row = (
                conn.execute(sa.select(stream_queries).where(stream_queries.c.id == query_id))
                .mappings()
                .first()
            )
        return None if row is None else StreamQueryRecord.from_row(row)

    def get(self, query_id: int) -> StreamQueryRecord:
        record = self.find(query_id)
        if record is None:
            raise StreamQueryNotFound(query_id)
        return record

    def of_job(self, job_id: int) -> list[StreamQueryRecord]:
        return self._where(stream_queries.c.job_id == job_id)

    def of_session(self, session_id: int) -> list[StreamQueryRecord]:
        return self._where(stream_queries.c.session_id == session_id)

    def started_in_sessions(
        self,
        *,
        owner: str | None,
        creator: str | None,
        ended_since: float,
        states: Iterable[StreamQueryState] | None = None,
    ) -> list[StreamQueryRecord]:
        """The queries SAVE STREAM started (not a stream job's) in the sessions a
        ``Scope(owner, creator)`` admits that are active or ended since ``ended_since``, by id:
        one read, however many sessions those are."""
        visible = sa.select(sessions.c.id).where(
            *in_scope(owner, creator), active_or_ended_since(ended_since)
        )
        where = [stream_queries.c.job_id.is_(None), stream_queries.c.session_id.in_(visible)]
        if states is not None:
            where.append(stream_queries.c.state.in_([s.value for s in states]))
        return self._where(*where)

    def _where(self, *where: sa.ColumnElement[bool]) -> list[StreamQueryRecord]:
        query = sa.select(stream_queries).where(*where).order_by(stream_queries.c.id)
        with self._db.read() as conn:
            return [StreamQueryRecord.from_row(r) for r in conn.execute(query).mappings()]

    def states(self, query_ids: Iterable[int]) -> dict[int, tuple[StreamQueryState, int]]:
        """The state and session of each query that exists: one cheap read an engine's
        supervisor makes every tick (a stop requested, a query run elsewhere now)."""
        ids = list(query_ids)
        if not ids:
            return {}
        query = sa.select(
            stream_queries.c.id, stream_queries.c.state, stream_queries.c.session_id
        ).where(stream_queries.c.id.in_(ids))
        with self._db.read() as conn:
            return {
                row.id: (StreamQueryState(row.state), row.session_id) for row in conn.execute(query)
            }

    def add_for_session(
        self,
        session_id: int,
        name: str,
        *,
        now: float,
        spec: QuerySpec,
        checkpoint: str | None,
        statement_id: int | None = None,
        engine_id: int | None = None,
    ) -> StreamQueryRecord:
        """A new ``starting`` query of an interactive session; its name must not be taken by
        another of the session's active queries."""
        with self._db.begin() as conn:
            clash = (
                conn.execute(
                    sa.select(stream_queries.c.statement_id)
                    .where(stream_queries.c.session_id == session_id)
                    .where(stream_queries.c.job_id.is_(None))
                    .where(stream_queries.c.name == name)
                    .where(stream_queries.c.state.in_(_ACTIVE_QUERY))
                )
                .mappings()
                .first()
            )
            if clash is not None:
                raise StreamQueryNameClash(
                    name,
                    f"the running query of statement {clash['statement_id']}",
                    f"statement {statement_id}",
                )
            row = conn.execute(
                _insert(session_id, name, now, spec, checkpoint, statement_id, engine_id, None)
            )
            return StreamQueryRecord.from_row(row.mappings().one())

    def claim_for_job(
        self,
        job_id: int,
        name: str,
        *,
        session_id: int,
        now: float,
        spec: QuerySpec,
        checkpoint: str | None,
        statement_id: int | None = None,
        engine_id: int | None = None,
    ) -> StreamQueryRecord:
        """Take (or create) the job's query of this name for ``session_id``, ``starting``.

        Only the session the job runs in now may: a superseded session (its engine declared
        lost but still alive, say) gets StreamJobSuperseded and starts nothing. The row keeps
        its restarts and history across the job's relaunches.
        """
        with self._db.begin() as conn:
            job = (
                conn.execute(
                    sa.select(
                        stream_jobs.c.name, stream_jobs.c.state, stream_jobs.c.session_id
                    ).where(stream_jobs.c.id == job_id)
                )
                .mappings()
                .one()
            )
            runs = job["state"] in (StreamJobState.STARTING.value, StreamJobState.RUNNING.value)
            if not runs or job["session_id"] != session_id:
                raise StreamJobSuperseded(job["name"], session_id, job["state"])
            row = (
                conn.execute(
                    sa.select(stream_queries)
                    .where(stream_queries.c.job_id == job_id)
                    .where(stream_queries.c.name == name)
                )
                .mappings()
                .first()
            )
            if row is None:
                inserted = conn.execute(
                    _insert(
                        session_id, name, now, spec, checkpoint, statement_id, engine_id, job_id
                    )
                )
                return StreamQueryRecord.from_row(inserted.mappings().one())
            current = StreamQueryRecord.from_row(row)
            if current.session_id == session_id and current.state in ACTIVE_STREAM_QUERY_STATES:
                raise StreamQueryNameClash(
                    name, f"statement {current.statement_id}", f"statement {statement_id}"
                )
            taken = self._transitions.stream_query(
                current.id,
                StreamQueryState.STARTING,
                now=now,
                expected=_RECLAIMABLE,
                conn=conn,
                session_id=session_id,
                statement_id=statement_id,
                engine_id=engine_id,
                spec=spec.to_json(),
                checkpoint=checkpoint,
                run_id=None,
                next_restart_at=None,
                finished_at=None,
            )
            if not taken.applied:
                raise StreamQueryNameClash(
                    name,
                    f"the query still {current.state.value} in session {current.session_id}",
                    f"statement {statement_id}",
                )
        return self.get(current.id)

    def update(self, query_id: int, conn: Connection | None = None, **values: Any) -> None:
        """Set bookkeeping columns (failures, spark ids, ...); never ``state``."""
        if "state" in values:
            raise ValueError("stream query states change through store.transitions")
        with self._db.within(conn) as c:
            c.execute(
                stream_queries.update().where(stream_queries.c.id == query_id).values(**values)
            )

    def reset_failures_of_job(self, job_id: int, conn: Connection | None = None) -> None:
        with self._db.within(conn) as c:
            c.execute(
                stream_queries.update()
                .where(stream_queries.c.job_id == job_id)
                .values(failures=0, next_restart_at=None)
            )

    def orphaned(self) -> list[tuple[StreamQueryRecord, RecordedError | None, float | None]]:
        """Active interactive-session queries whose session has ended without them being
        stopped (their engine died, say): each with the session's error and end time."""
        with self._db.read() as conn:
            rows = conn.execute(_ORPHANED).mappings().all()
        found = []
        for row in rows:
            values = dict(row)
            error = read_error(values.pop("session_error"))
            ended = values.pop("session_finished_at")
            found.append((StreamQueryRecord.from_row(values), error, ended))
        return found


def _insert(
    session_id: int,
    name: str,
    now: float,
    spec: QuerySpec,
    checkpoint: str | None,
    statement_id: int | None,
    engine_id: int | None,
    job_id: int | None,
) -> sa.Insert:
    return (
        stream_queries.insert()
        .values(
            job_id=job_id,
            session_id=session_id,
            statement_id=statement_id,
            engine_id=engine_id,
            name=name,
            state=StreamQueryState.STARTING.value,
            spec=spec.to_json(),
            checkpoint=checkpoint,
            failures=0,
            restarts=0,
            version=1,
            created_at=now,
            updated_at=now,
        )
        .returning(*stream_queries.c)
    )
