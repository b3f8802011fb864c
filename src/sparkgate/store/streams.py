"""Stream jobs, their streaming queries, recent progress and restarts. State changes go
through ``transitions``; everything else about these rows is here.

jobs = store.stream_jobs
job = jobs.add("clicks", "CREATE STREAM ...; SAVE STREAM ...", now=time.time())
store.transitions.stream_job(job.id, StreamJobState.STOPPING, now=time.time())
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import sqlalchemy as sa
from sqlalchemy.engine import Connection
from sqlalchemy.exc import IntegrityError

from sparkgate.errors import (
    StreamJobActive,
    StreamJobExists,
    StreamJobNotFound,
    StreamJobSuperseded,
    StreamQueryNameClash,
    StreamQueryNotFound,
)
from sparkgate.states import (
    ACTIVE_STREAM_JOB_STATES,
    ACTIVE_STREAM_QUERY_STATES,
    INACTIVE_STREAM_JOB_STATES,
    TERMINAL_SESSION_STATES,
    StreamJobState,
    StreamQueryState,
)
from sparkgate.store.database import Database
from sparkgate.store.pages import read_page
from sparkgate.store.records import (
    Page,
    StreamJobRecord,
    StreamProgressRecord,
    StreamQueryRecord,
    StreamRestartRecord,
)
from sparkgate.store.schema import (
    sessions,
    stream_jobs,
    stream_progress,
    stream_queries,
    stream_restarts,
)
from sparkgate.store.sessions import active_or_ended_since, in_scope
from sparkgate.store.transitions import Transitions

_ACTIVE_QUERY = [s.value for s in ACTIVE_STREAM_QUERY_STATES]
_INACTIVE_JOB = [s.value for s in INACTIVE_STREAM_JOB_STATES]
# A job's query row can be taken by the job's new session from these states.
_RECLAIMABLE = [StreamQueryState.STOPPED, StreamQueryState.FAILED, StreamQueryState.RESTARTING]


class StreamJobs:
    def __init__(self, db: Database) -> None:
        self._db = db

    def add(
        self,
        name: str,
        sql: str,
        *,
        now: float,
        conf: dict[str, str] | None = None,
        checkpoint_root: str | None = None,
        steps: list[dict[str, str]] | None = None,
        owner: str | None = None,
    ) -> StreamJobRecord:
        """Record a new job, ``pending`` (a supervisor duty launches it). ``steps``: the whole
        script, when it has Python steps (``sql`` is then its SQL steps)."""
        stmt = (
            stream_jobs.insert()
            .values(
                name=name,
                owner=owner,
                state=StreamJobState.PENDING.value,
                sql=sql,
                steps=steps,
                conf=dict(conf or {}),
                checkpoint_root=checkpoint_root,
                revision=1,
                failures=0,
                restarts=0,
                version=1,
                created_at=now,
                updated_at=now,
            )
            .returning(*stream_jobs.c)
        )
        try:
            with self._db.begin() as conn:
                row = conn.execute(stmt).mappings().one()
        except IntegrityError:
            existing = self.find(name)
            raise StreamJobExists(name, existing.state.value if existing else "unknown") from None
        return StreamJobRecord.from_row(row)

    def find(self, name: str) -> StreamJobRecord | None:
        return self._one(stream_jobs.c.name == name)

    def get(self, name: str) -> StreamJobRecord:
        record = self.find(name)
        if record is None:
            raise StreamJobNotFound(name)
        return record

    def find_by_id(self, job_id: int) -> StreamJobRecord | None:
        return self._one(stream_jobs.c.id == job_id)

    def _one(self, where: sa.ColumnElement[bool]) -> StreamJobRecord | None:
        with self._db.read() as conn:
            row = conn.execute(sa.select(stream_jobs).where(where)).mappings().first()
        return None if row is None else StreamJobRecord.from_row(row)

    def list_page(
        self,
        *,
        states: Iterable[StreamJobState] | None = None,
        owner: str | None = None,
        offset: int = 0,
        limit: int = 100,
        after: str | None = None,
        count: bool = True,
    ) -> Page[StreamJobRecord]:
        """Stream jobs by name; ``after``: keyset paging, the jobs named after that (the page's
        ``next_after`` is the one to pass next). ``count=False`` leaves ``total`` None."""
        where: list[sa.ColumnElement[bool]] = []
        if states is not None:
            where.append(stream_jobs.c.state.in_([s.value for s in states]))
        if owner is not None:
            where.append(stream_jobs.c.owner == owner)
        query = sa.select(stream_jobs).where(*where)
        if after is not None:
            query = query.where(stream_jobs.c.name > after)
        return read_page(
            self._db,
            query.order_by(stream_jobs.c.name),
            sa.select(sa.func.count()).select_from(stream_jobs).where(*where),
            make=StreamJobRecord.from_row,
            key=lambda job: job.name,
            offset=offset,
            limit=limit,
            count=count,
        )

    def active(self) -> list[StreamJobRecord]:
        """Jobs a supervisor has something to watch or do for."""
        return self.list_page(states=ACTIVE_STREAM_JOB_STATES, limit=1_000_000).items

    def redefine(
        self,
        name: str,
        *,
        now: float,
        sql: str | None = None,
        steps: list[dict[str, str]] | None = None,
        conf: dict[str, str] | None = None,
        checkpoint_root: str | None = None,
        clear_checkpoint_root: bool = False,
        states: Iterable[StreamJobState] = INACTIVE_STREAM_JOB_STATES,
    ) -> StreamJobRecord:
        """Change a job's script, conf or checkpoint root (its next launch uses them) and bump
        its revision. ``sql`` replaces the script (and its ``steps``, None for a SQL-only one).
        Only in ``states``: by default stopped or failed; ``Streams.redefine_running`` also
        allows a job that runs or waits to be (re)launched.

        The row's compare-and-set ``version`` is bumped too: a supervisor that read the job
        before this change and is about to launch it loses its race and launches the new
        definition next round, never the old one with the new one's statement count."""
        allowed = [s.value for s in states]
        values: dict[str, Any] = {
            "revision": stream_jobs.c.revision + 1,
            "version": stream_jobs.c.version + 1,
            "updated_at": now,
        }
        if sql is not None:
            values["sql"] = sql
            values["steps"] = steps
        if conf is not None:
            values["conf"] = dict(conf)
        if checkpoint_root is not None or clear_checkpoint_root:
            values["checkpoint_root"] = checkpoint_root
        stmt = (
            stream_jobs.update()
            .where(stream_jobs.c.name == name, stream_jobs.c.state.in_(allowed))
            .values(**values)
        )
        with self._db.begin() as conn:
            if conn.execute(stmt).rowcount != 1:
                current = conn.execute(
                    sa.select(stream_jobs.c.state).where(stream_jobs.c.name == name)
                ).scalar()
                if current is None:
                    raise StreamJobNotFound(name)
                raise StreamJobActive(name, current, "be redefined")
        return self.get(name)

    def update(self, job_id: int, conn: Connection | None = None, **values: Any) -> None:
        """Set bookkeeping columns (failures, error, ...); never ``state``."""
        if "state" in values:
            raise ValueError("stream job states change through store.transitions")
        with self._db.within(conn) as c:
            c.execute(stream_jobs.update().where(stream_jobs.c.id == job_id).values(**values))

    def delete(self, name: str) -> StreamJobRecord:
        """Remove a stopped or failed job with its queries, progress and restarts."""
        with self._db.begin() as conn:
            row = (
                conn.execute(sa.select(stream_jobs).where(stream_jobs.c.name == name))
                .mappings()
                .first()
            )
            if row is None:
                raise StreamJobNotFound(name)
            job = StreamJobRecord.from_row(row)
            if job.state not in INACTIVE_STREAM_JOB_STATES:
                raise StreamJobActive(name, job.state.value, "be deleted")
            query_ids = sa.select(stream_queries.c.id).where(stream_queries.c.job_id == job.id)
            conn.execute(stream_progress.delete().where(stream_progress.c.query_id.in_(query_ids)))
            conn.execute(
                stream_restarts.delete().where(
                    sa.or_(
                        stream_restarts.c.job_id == job.id,
                        stream_restarts.c.query_id.in_(query_ids),
                    )
                )
            )
            conn.execute(stream_queries.delete().where(stream_queries.c.job_id == job.id))
            deleted = conn.execute(
                stream_jobs.delete().where(
                    stream_jobs.c.id == job.id, stream_jobs.c.state.in_(_INACTIVE_JOB)
                )
            ).rowcount
            if deleted != 1:  # started again between our read and our delete
                raise StreamJobActive(name, "active", "be deleted")
        return job


class StreamQueries:
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
        spec: dict[str, Any],
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
        spec: dict[str, Any],
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
                spec=spec,
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

    def orphaned(self) -> list[tuple[StreamQueryRecord, dict[str, Any] | None, float | None]]:
        """Active interactive-session queries whose session has ended without them being
        stopped (their engine died, say): each with the session's error and end time."""
        query = (
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
        with self._db.read() as conn:
            rows = conn.execute(query).mappings().all()
        found = []
        for row in rows:
            values = dict(row)
            error = values.pop("session_error")
            ended = values.pop("session_finished_at")
            found.append((StreamQueryRecord.from_row(values), error, ended))
        return found

    # -- progress ------------------------------------------------------------------------

    def record_progress(
        self,
        query_id: int,
        progress: dict[str, Any],
        *,
        now: float,
        keep: int,
        session_id: int | None = None,
        **values: Any,
    ) -> None:
        """Add one progress sample (``stream_progress`` columns), make it the query's last
        progress, and drop samples beyond the newest ``keep``. ``session_id``: also mark that
        session active, so a session whose streams make progress is never reaped as idle."""
        columns = {c.name for c in stream_progress.c} - {"id", "query_id"}
        sample = {k: v for k, v in progress.items() if k in columns}
        sample["at"] = sample.get("at") or now
        with self._db.begin() as conn:
            conn.execute(stream_progress.insert().values(query_id=query_id, **sample))
            conn.execute(
                stream_queries.update()
                .where(stream_queries.c.id == query_id)
                .values(last_progress=progress, progress_at=now, **values)
            )
            cutoff = conn.execute(
                sa.select(stream_progress.c.id)
                .where(stream_progress.c.query_id == query_id)
                .order_by(stream_progress.c.id.desc())
                .offset(keep)
                .limit(1)
            ).scalar()
            if cutoff is not None:
                conn.execute(
                    stream_progress.delete()
                    .where(stream_progress.c.query_id == query_id)
                    .where(stream_progress.c.id <= cutoff)
                )
            if session_id is not None:
                conn.execute(
                    sessions.update()
                    .where(sessions.c.id == session_id)
                    .values(last_activity_at=now)
                )

    def progress(
        self, query_id: int, *, limit: int = 100, after: int = 0
    ) -> list[StreamProgressRecord]:
        """The newest progress samples first; with ``after``, only those stored since the
        sample of that id (a chart's cursor)."""
        query = (
            sa.select(stream_progress)
            .where(stream_progress.c.query_id == query_id, stream_progress.c.id > after)
            .order_by(stream_progress.c.id.desc())
            .limit(limit)
        )
        with self._db.read() as conn:
            return [StreamProgressRecord.from_row(r) for r in conn.execute(query).mappings()]

    # -- restarts ------------------------------------------------------------------------

    def add_restart(
        self,
        *,
        job_id: int | None,
        query_id: int | None,
        attempt: int,
        failed_at: float,
        delay: float,
        error: dict[str, Any] | None,
        conn: Connection | None = None,
    ) -> int:
        """Record a restart scheduled ``delay`` seconds after ``failed_at``; its id."""
        stmt = stream_restarts.insert().values(
            job_id=job_id,
            query_id=query_id,
            attempt=attempt,
            failed_at=failed_at,
            delay=delay,
            restart_at=failed_at + delay,
            error=error,
        )
        with self._db.within(conn) as c:
            return int(c.execute(stmt.returning(stream_restarts.c.id)).scalar_one())

    def mark_restarted(
        self, restart_id: int, *, now: float, conn: Connection | None = None
    ) -> None:
        with self._db.within(conn) as c:
            c.execute(
                stream_restarts.update()
                .where(stream_restarts.c.id == restart_id)
                .values(restarted_at=now)
            )

    def restarts(
        self, *, job_id: int | None = None, query_id: int | None = None, limit: int = 100
    ) -> list[StreamRestartRecord]:
        """Restarts, newest first: a query's (``query_id``), or a job's own relaunches
        (``job_id`` alone)."""
        query = sa.select(stream_restarts).order_by(stream_restarts.c.id.desc()).limit(limit)
        if query_id is not None:
            query = query.where(stream_restarts.c.query_id == query_id)
        elif job_id is not None:
            query = query.where(stream_restarts.c.job_id == job_id).where(
                stream_restarts.c.query_id.is_(None)
            )
        with self._db.read() as conn:
            return [StreamRestartRecord.from_row(r) for r in conn.execute(query).mappings()]


def _insert(
    session_id: int,
    name: str,
    now: float,
    spec: dict[str, Any],
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
            spec=spec,
            checkpoint=checkpoint,
            failures=0,
            restarts=0,
            version=1,
            created_at=now,
            updated_at=now,
        )
        .returning(*stream_queries.c)
    )
