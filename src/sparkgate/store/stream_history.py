"""A streaming query's history: its recent progress samples (each query keeps its newest
``stream_progress_history``) and its restarts, with a job's own relaunches (no query).

Apart from the query rows (``stream_queries``) because these rows are only ever added and read
back newest first, never moved through states; ``StreamQueries`` has these methods from here,
so they are called as ``store.stream_queries.record_progress(...)`` all the same.
"""

from __future__ import annotations

from typing import Any

import sqlalchemy as sa
from sqlalchemy.engine import Connection

from sparkgate.recorded import RecordedError
from sparkgate.store.database import Database
from sparkgate.store.records import StreamProgressRecord, StreamRestartRecord
from sparkgate.store.schema import sessions, stream_progress, stream_queries, stream_restarts


class StreamHistory:
    _db: Database  # set by StreamQueries

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
        error: RecordedError | None,
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
            error=None if error is None else error.to_json(),
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
