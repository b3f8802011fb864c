"""Stream jobs for every door: create, list, read, stop, start, delete, and their progress.

A stream job is its owner's (admins see all); the ``streams`` right is needed to change one,
and each change is audited, here, whichever door asked. The streaming queries SAVE STREAM
starts in an interactive session are the session's: whoever may see the session sees them,
and stopping one is a ``STOP STREAM`` statement in it, submitted as any other.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from sparkgate.auth.access import STREAMS
from sparkgate.auth.principal import Principal
from sparkgate.auth.users import Users
from sparkgate.errors.streams import StreamJobNotFound, StreamQueryNotFound, StreamQueryNotRunning
from sparkgate.service.queries import Queries
from sparkgate.service.sessions import Sessions
from sparkgate.service.stream_jobs import Streams
from sparkgate.service.visibility import list_owner, scope, sees
from sparkgate.settings import Settings
from sparkgate.states import ACTIVE_STREAM_QUERY_STATES, StreamJobState, StreamQueryState
from sparkgate.store import Store
from sparkgate.store.records import (
    Page,
    SessionRecord,
    StatementRecord,
    StreamJobRecord,
    StreamProgressRecord,
    StreamQueryRecord,
    StreamRestartRecord,
    Window,
)

RECENT = 20  # progress samples and restarts shown per query
# A session's streams are listed while it is active, and this long after it ended (its
# queries stopped with it): a list of every stream ever started would only grow.
SESSION_STREAMS_KEPT = 3600.0
# What STOP STREAM acts on (one already stopping is on its way; the supervisor refuses it).
STOPPABLE_QUERY_STATES = ACTIVE_STREAM_QUERY_STATES - {StreamQueryState.STOPPING}


@dataclass(frozen=True)
class QueryDetail:
    """A streaming query with its recent progress samples and restarts."""

    query: StreamQueryRecord
    progress: list[StreamProgressRecord]
    restarts: list[StreamRestartRecord]


@dataclass(frozen=True)
class StreamDetail:
    job: StreamJobRecord
    queries: list[QueryDetail]
    restarts: list[StreamRestartRecord]  # the job's own relaunches


@dataclass(frozen=True)
class StreamSummary:
    job: StreamJobRecord
    queries: list[StreamQueryRecord]


@dataclass(frozen=True)
class SessionStream:
    """A streaming query started in an interactive session, and that session."""

    session: SessionRecord
    query: StreamQueryRecord


@dataclass(frozen=True)
class QueryProgress:
    """A query's stored progress samples after a cursor, oldest first (the charts' data)."""

    name: str
    samples: list[StreamProgressRecord]


@dataclass
class StreamService:
    settings: Settings
    store: Store
    users: Users
    sessions: Sessions
    queries: Queries
    streams: Streams

    def job(self, name: str, *, user: Principal) -> StreamJobRecord:
        """The job, if the user may see it; else not found, as for a name that does not exist."""
        job = self.store.stream_jobs.find(name)
        if job is None or not sees(user, job.owner):
            raise StreamJobNotFound(name)
        return job

    def visible(self, name: str, *, user: Principal) -> bool:
        try:
            self.job(name, user=user)
        except StreamJobNotFound:
            return False
        return True

    def create(
        self,
        name: str,
        sql: str,
        *,
        user: Principal,
        conf: dict[str, str],
        checkpoint_root: str | None = None,
    ) -> StreamDetail:
        target = f"stream:{name}"
        self.users.require(user, STREAMS, "start stream jobs", target=target)
        self.users.check_conf(user, conf, target=target, where=f"conf of stream job {name}")
        self.users.check_sql(user, sql, target=target, where=f"script of stream job {name}")
        job = self.streams.create(
            name, sql, conf=conf, checkpoint_root=checkpoint_root, owner=user.name
        )
        self.users.audit(user, "stream.create", "ok", target=f"stream:{job.name}")
        return self.detail(job)

    def list_page(
        self,
        *,
        user: Principal,
        owner: str | None = None,
        states: Iterable[StreamJobState] | None = None,
        window: Window = Window(),
    ) -> Page[StreamSummary]:
        """Stream jobs by name, each with its queries (admins: ``owner``'s, or everyone's)."""
        page = self.store.stream_jobs.list_page(
            states=states, owner=list_owner(user, owner), window=window
        )
        queries = self.store.stream_queries
        return page.with_items([StreamSummary(j, queries.of_job(j.id)) for j in page.items])

    def get(self, name: str, *, user: Principal) -> StreamDetail:
        return self.detail(self.job(name, user=user))

    def stop(self, name: str, *, user: Principal) -> StreamDetail:
        self._changing(user, name, "stop")
        return self.detail(self.streams.stop(name))

    def start(self, name: str, *, user: Principal) -> StreamDetail:
        self._changing(user, name, "start")
        return self.detail(self.streams.start(name))

    def delete(
        self, name: str, *, user: Principal, keep_checkpoints: bool = False
    ) -> StreamJobRecord:
        self._changing(user, name, "delete")
        return self.streams.delete(name, keep_checkpoints=keep_checkpoints)

    def of_session(self, session_id: int, *, user: Principal) -> list[QueryDetail]:
        """The streaming queries SAVE STREAM started in a session (not a stream job's)."""
        self.sessions.get(session_id, user=user)
        queries = self.store.stream_queries.of_session(session_id)
        return [self._query(q) for q in queries if q.job_id is None]

    def in_sessions(
        self,
        *,
        user: Principal,
        owner: str | None = None,
        states: Iterable[StreamQueryState] | None = None,
        now: float | None = None,
    ) -> list[SessionStream]:
        """The streaming queries started in the sessions the user may list (admins: ``owner``'s,
        or everyone's): of active sessions, and of sessions ended in the last
        ``SESSION_STREAMS_KEPT`` seconds; newest first."""
        since = (self.sessions.clock() if now is None else now) - SESSION_STREAMS_KEPT
        visible = scope(user, owner)
        queries = self.store.stream_queries.started_in_sessions(
            owner=visible.owner, creator=visible.creator, ended_since=since, states=states
        )
        sessions = self.store.sessions.by_ids({q.session_id for q in queries})
        return [
            SessionStream(sessions[q.session_id], q)
            for q in reversed(queries)
            if q.session_id in sessions
        ]

    def in_session(self, session_id: int, query_id: int, *, user: Principal) -> SessionStream:
        """One streaming query of a session the user may see; else not found, as for an id
        that does not exist (a stream job's query is its job's, not the session's)."""
        session = self.sessions.get(session_id, user=user)
        query = self.store.stream_queries.find(query_id)
        if query is None or query.session_id != session_id or query.job_id is not None:
            raise StreamQueryNotFound(query_id)
        return SessionStream(session, query)

    def session_query(
        self, session_id: int, query_id: int, *, user: Principal
    ) -> tuple[SessionStream, QueryDetail]:
        """A session's query, and its recent progress samples and restarts."""
        stream = self.in_session(session_id, query_id, user=user)
        return stream, self._query(stream.query)

    def session_progress(
        self, session_id: int, query_id: int, *, user: Principal, after: int = 0
    ) -> list[QueryProgress]:
        """A session's query's stored progress samples since ``after``, as ``progress``."""
        query = self.in_session(session_id, query_id, user=user).query
        samples = self.store.stream_queries.progress(
            query.id, limit=self.settings.stream_progress_history, after=after
        )
        return [QueryProgress(query.name, list(reversed(samples)))]

    def stop_in_session(
        self, session_id: int, query_id: int, *, user: Principal
    ) -> StatementRecord:
        """Stop a session's query: ``STOP STREAM name`` submitted in its session, as through
        ``POST /v1/queries`` (the same rights, limits and audit); the query stops at the end
        of its micro-batch. One that no longer runs is refused, and nothing is submitted."""
        query = self.in_session(session_id, query_id, user=user).query
        if query.state not in STOPPABLE_QUERY_STATES:
            raise StreamQueryNotRunning(query.name, session_id)
        name = "`" + query.name.replace("`", "``") + "`"
        return self.queries.submit(f"STOP STREAM {name}", user=user, session_id=session_id)[0]

    def progress(self, name: str, *, user: Principal, after: int = 0) -> list[QueryProgress]:
        """Every stored progress sample of the job's queries since ``after`` (a sample id)."""
        job = self.job(name, user=user)
        store = self.store.stream_queries
        history = self.settings.stream_progress_history
        return [
            QueryProgress(q.name, list(reversed(store.progress(q.id, limit=history, after=after))))
            for q in store.of_job(job.id)
        ]

    def detail(self, job: StreamJobRecord) -> StreamDetail:
        queries = self.store.stream_queries
        return StreamDetail(
            job,
            [self._query(q) for q in queries.of_job(job.id)],
            queries.restarts(job_id=job.id, limit=RECENT),
        )

    def _query(self, query: StreamQueryRecord) -> QueryDetail:
        store = self.store.stream_queries
        return QueryDetail(
            query,
            store.progress(query.id, limit=RECENT),
            store.restarts(query_id=query.id, limit=RECENT),
        )

    def _changing(self, user: Principal, name: str, verb: str) -> None:
        self.job(name, user=user)
        self.users.require(user, STREAMS, f"{verb} stream jobs", target=f"stream:{name}")
        self.users.audit(user, f"stream.{verb}", "ok", target=f"stream:{name}")
