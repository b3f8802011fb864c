"""Stream jobs: their rows, found by name or id, listed, redefined, deleted with their queries.
State changes go through ``transitions``; everything else about these rows is here.

jobs = store.stream_jobs
job = jobs.add("clicks", "CREATE STREAM ...; SAVE STREAM ...", now=time.time())
store.transitions.stream_job(job.id, StreamJobState.STOPPING, now=time.time())

Apart from their queries (``stream_queries``): a job is what a user declares and a supervisor
duty launches; its queries are what an engine runs for it.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import sqlalchemy as sa
from sqlalchemy.engine import Connection
from sqlalchemy.exc import IntegrityError

from sparkgate.errors.streams import StreamJobActive, StreamJobExists, StreamJobNotFound
from sparkgate.states import ACTIVE_STREAM_JOB_STATES, INACTIVE_STREAM_JOB_STATES, StreamJobState
from sparkgate.store.database import Database
from sparkgate.store.pages import read_page
from sparkgate.store.records import FIRST_PAGE, Page, StreamJobRecord, Window
from sparkgate.store.schema import stream_jobs, stream_progress, stream_queries, stream_restarts

_INACTIVE_JOB = [s.value for s in INACTIVE_STREAM_JOB_STATES]
# Read every round of the streams duty: built once.
_ACTIVE = (
    sa.select(stream_jobs)
    .where(stream_jobs.c.state.in_([s.value for s in ACTIVE_STREAM_JOB_STATES]))
    .order_by(stream_jobs.c.name)
)


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
        window: Window = FIRST_PAGE,
    ) -> Page[StreamJobRecord]:
        """Stream jobs by name. ``window``: which page; its ``after`` pages by keyset, the
        jobs named after that (the page's ``next_after`` is the one to pass next);
        ``count=False`` leaves ``total`` None."""
        where: list[sa.ColumnElement[bool]] = []
        if states is not None:
            where.append(stream_jobs.c.state.in_([s.value for s in states]))
        if owner is not None:
            where.append(stream_jobs.c.owner == owner)
        return read_page(
            self._db,
            sa.select(stream_jobs).where(*where),
            sa.select(sa.func.count()).select_from(stream_jobs).where(*where),
            make=StreamJobRecord.from_row,
            by=stream_jobs.c.name,
            window=window,
        )

    def active(self) -> list[StreamJobRecord]:
        """Jobs a supervisor has something to watch or do for, by name."""
        with self._db.read() as conn:
            return [StreamJobRecord.from_row(r) for r in conn.execute(_ACTIVE).mappings()]

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
