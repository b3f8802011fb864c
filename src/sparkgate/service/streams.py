"""Stream jobs for every door: create, list, read, stop, start, delete, and their progress.

A stream job is its owner's (admins see all); the ``streams`` right is needed to change one,
and each change is audited, here, whichever door asked.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from sparkgate.auth.access import STREAMS
from sparkgate.auth.principal import Principal
from sparkgate.auth.users import Users
from sparkgate.errors import StreamJobNotFound
from sparkgate.service.gateway import Gateway
from sparkgate.service.visibility import list_owner, sees
from sparkgate.settings import Settings
from sparkgate.states import StreamJobState
from sparkgate.store import Store
from sparkgate.store.records import (
    Page,
    StreamJobRecord,
    StreamProgressRecord,
    StreamQueryRecord,
    StreamRestartRecord,
    Window,
)
from sparkgate.streaming.jobs import Streams

RECENT = 20  # progress samples and restarts shown per query


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
class QueryProgress:
    """A query's stored progress samples after a cursor, oldest first (the charts' data)."""

    name: str
    samples: list[StreamProgressRecord]


@dataclass
class StreamService:
    settings: Settings
    store: Store
    users: Users
    gateway: Gateway
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
            states=states, owner=list_owner(user, owner), **window.kwargs()
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
        self.gateway.session(session_id, user=user)
        queries = self.store.stream_queries.of_session(session_id)
        return [self._query(q) for q in queries if q.job_id is None]

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
