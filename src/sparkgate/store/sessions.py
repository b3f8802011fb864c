"""Reading and creating sessions. State changes go through ``transitions``."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any, NamedTuple

import sqlalchemy as sa
from sqlalchemy.engine import Connection

from sparkgate.errors import SessionNotFound
from sparkgate.states import ACTIVE_SESSION_STATES, SessionKind, SessionState, StatementState
from sparkgate.store.database import Database
from sparkgate.store.pages import read_page
from sparkgate.store.records import FIRST_PAGE, Page, SessionRecord, StatementRecord, Window
from sparkgate.store.schema import sessions, statements
from sparkgate.store.session_attributes import SessionAttributes


class SessionWork(NamedTuple):
    """An engine's session as its loop reads it."""

    session: SessionRecord
    waiting: StatementRecord | None  # its oldest waiting statement
    more_waiting: bool  # others wait behind that one


def _work_of_engine() -> sa.Select[Any]:
    """An engine's active sessions with their next waiting statement and how many wait: built
    once, as the engine's loop runs it for every statement (see ``Sessions.work_of_engine``)."""
    others = statements.alias("queued")
    is_waiting = [
        others.c.session_id == sessions.c.id,
        others.c.state == StatementState.WAITING.value,
    ]
    next_waiting = (
        sa.select(sa.func.min(others.c.id)).where(*is_waiting).correlate(sessions)
    ).scalar_subquery()
    waiting_count = (
        sa.select(sa.func.count()).select_from(others).where(*is_waiting).correlate(sessions)
    ).scalar_subquery()
    waiting = [c.label(f"next_{c.name}") for c in statements.c]
    return (
        sa.select(sessions, *waiting, waiting_count.label("waiting_count"))
        .select_from(sessions.outerjoin(statements, statements.c.id == next_waiting))
        .where(sessions.c.engine_id == sa.bindparam("engine_id"))
        .where(sessions.c.state.in_([s.value for s in ACTIVE_SESSION_STATES]))
        .order_by(sessions.c.id)
    )


_WORK_OF_ENGINE = _work_of_engine()
_BY_ID = sa.select(sessions).where(sessions.c.id == sa.bindparam("session_id"))
# Read every round of the node's duties (placement, reaper): built once, bound per call.
_UNPLACED = (
    sa.select(sessions)
    .where(sessions.c.state == SessionState.NOT_STARTED.value)
    .where(sessions.c.created_at < sa.bindparam("before", type_=sessions.c.created_at.type))
    .order_by(sessions.c.id)
)
_IDLE_SINCE = (
    sa.select(sessions)
    .where(sessions.c.state == SessionState.IDLE.value)
    # A session whose statement waits for its resource group's turn is not idle.
    .where(
        ~sa.exists()
        .where(statements.c.session_id == sessions.c.id)
        .where(statements.c.state == StatementState.QUEUED.value)
    )
    .where(sessions.c.kind == sa.bindparam("kind"))
    .where(
        sessions.c.last_activity_at < sa.bindparam("cutoff", type_=sessions.c.last_activity_at.type)
    )
)


def in_scope(owner: str | None, creator: str | None) -> list[sa.ColumnElement[bool]]:
    """The WHERE clause of ``Scope(owner, creator)`` over sessions (``Scope.admits`` in SQL).

    Owned rows are found through the owner index. What a creator made for others is found by
    reading ``attributes.created_by`` (``->>`` on PostgreSQL, ``json_extract`` on SQLite),
    which no index serves: only impersonators' lists ask for it."""
    if owner is None and creator is None:
        return []
    terms: list[sa.ColumnElement[bool]] = []
    if owner is not None:
        terms.append(sessions.c.owner == owner)
    if creator is not None:
        terms.append(sessions.c.attributes["created_by"].as_string() == creator)
    return [sa.or_(*terms)]


def active_or_ended_since(since: float) -> sa.ColumnElement[bool]:
    """The WHERE clause of the sessions that are active, or ended at ``since`` or later."""
    return sa.or_(
        sessions.c.state.in_([s.value for s in ACTIVE_SESSION_STATES]),
        sessions.c.finished_at >= since,
    )


def one_off_queries(one_off: bool) -> sa.ColumnElement[bool]:
    """The WHERE clause of one-off queries' sessions (``one_off``), or of all the others.

    A one-off query (``POST /v1/queries`` without a session, ``sparkgate sql``) is a batch
    session whose ``attributes.isolation`` the service recorded; Livy's batches and batch
    sessions made through ``/v1/sessions`` have none. Read as ``in_scope`` reads
    ``created_by``; the kind is compared first, so other sessions' attributes go unread."""
    batch = sessions.c.kind == SessionKind.BATCH.value
    isolation = sessions.c.attributes["isolation"].as_string()
    if one_off:
        return sa.and_(batch, isolation.is_not(None))
    return sa.or_(sa.not_(batch), isolation.is_(None))


class Sessions:
    def __init__(self, db: Database) -> None:
        self._db = db

    def add(
        self,
        kind: SessionKind,
        *,
        now: float,
        name: str | None = None,
        conf: dict[str, str] | None = None,
        owner: str | None = None,
        proxy_user: str | None = None,
        share_key: str | None = None,
        attributes: SessionAttributes | None = None,
        conn: Connection | None = None,
    ) -> SessionRecord:
        """Record a new session in ``not_started``; placing it on an engine comes next.
        With ``conn``, inside the caller's transaction."""
        stmt = (
            sessions.insert()
            .values(
                kind=kind.value,
                name=name,
                state=SessionState.NOT_STARTED.value,
                conf=dict(conf or {}),
                owner=owner,
                proxy_user=proxy_user,
                share_key=share_key,
                attributes={} if attributes is None else attributes.to_json(),
                statement_count=0,
                version=1,
                created_at=now,
                last_activity_at=now,
                updated_at=now,
            )
            .returning(*sessions.c)
        )
        with self._db.within(conn) as c:
            row = c.execute(stmt).mappings().one()
        return SessionRecord.from_row(row)

    def find(self, session_id: int) -> SessionRecord | None:
        with self._db.read() as conn:
            row = conn.execute(_BY_ID, {"session_id": session_id}).mappings().first()
        return None if row is None else SessionRecord.from_row(row)

    def by_ids(self, session_ids: Iterable[int]) -> dict[int, SessionRecord]:
        """The sessions of these ids that exist, by id."""
        ids = list(session_ids)
        if not ids:
            return {}
        query = sa.select(sessions).where(sessions.c.id.in_(ids))
        with self._db.read() as conn:
            found = [SessionRecord.from_row(r) for r in conn.execute(query).mappings()]
        return {session.id: session for session in found}

    def get(self, session_id: int) -> SessionRecord:
        record = self.find(session_id)
        if record is None:
            raise SessionNotFound(session_id)
        return record

    def list_page(
        self,
        *,
        states: Iterable[SessionState] | None = None,
        kinds: Iterable[SessionKind] | None = None,
        engine_id: int | None = None,
        ended_since: float | None = None,
        one_off: bool | None = None,
        owner: str | None = None,
        creator: str | None = None,
        window: Window = FIRST_PAGE,
    ) -> Page[SessionRecord]:
        """Sessions by id; ``ended_since``: only active ones and those ended since then;
        ``one_off``: only one-off queries' sessions (True) or none of them (False);
        ``owner``/``creator``: only those a ``Scope`` with them admits.

        ``window``: which page; its ``after`` pages by keyset, the sessions after that id (the
        page's ``next_after`` is the one to pass for the following page); ``count=False``
        leaves ``total`` None.
        """
        where = in_scope(owner, creator)
        if states is not None:
            where.append(sessions.c.state.in_([s.value for s in states]))
        if kinds is not None:
            where.append(sessions.c.kind.in_([k.value for k in kinds]))
        if engine_id is not None:
            where.append(sessions.c.engine_id == engine_id)
        if ended_since is not None:
            where.append(active_or_ended_since(ended_since))
        if one_off is not None:
            where.append(one_off_queries(one_off))
        return read_page(
            self._db,
            sa.select(sessions).where(*where),
            sa.select(sa.func.count()).select_from(sessions).where(*where),
            make=SessionRecord.from_row,
            by=sessions.c.id,
            window=window,
        )

    def of_engine(
        self, engine_id: int, states: Iterable[SessionState] = ACTIVE_SESSION_STATES
    ) -> list[SessionRecord]:
        query = (
            sa.select(sessions)
            .where(sessions.c.engine_id == engine_id)
            .where(sessions.c.state.in_([s.value for s in states]))
            .order_by(sessions.c.id)
        )
        with self._db.read() as conn:
            return [SessionRecord.from_row(r) for r in conn.execute(query).mappings()]

    def work_of_engine(self, engine_id: int) -> list[SessionWork]:
        """The engine's active sessions, each with its oldest waiting statement (whole, so
        that claiming it needs no second read) and whether others wait behind it.

        One read each time an engine looks: it is kept to one query.
        """
        query = _WORK_OF_ENGINE
        with self._db.read() as conn:
            rows = conn.execute(query, {"engine_id": engine_id}).mappings().all()
        work = []
        for row in rows:
            values = dict(row)
            count = values.pop("waiting_count") or 0
            statement = {c.name: values.pop(f"next_{c.name}") for c in statements.c}
            next_statement = None
            if statement["id"] is not None:
                next_statement = StatementRecord.from_row(statement)
            work.append(SessionWork(SessionRecord.from_row(values), next_statement, count > 1))
        return work

    def unplaced(self, *, created_before: float) -> list[SessionRecord]:
        """Sessions nobody put on an engine yet (their node may have died while placing them)."""
        with self._db.read() as conn:
            rows = conn.execute(_UNPLACED, {"before": created_before}).mappings()
            return [SessionRecord.from_row(r) for r in rows]

    def idle_since(self, cutoff: float, kind: SessionKind) -> list[SessionRecord]:
        with self._db.read() as conn:
            rows = conn.execute(_IDLE_SINCE, {"kind": kind.value, "cutoff": cutoff}).mappings()
            return [SessionRecord.from_row(r) for r in rows]

    def touch(self, session_id: int, *, now: float) -> None:
        with self._db.begin() as conn:
            conn.execute(
                sessions.update().where(sessions.c.id == session_id).values(last_activity_at=now)
            )

    def count_active(self, owner: str, kinds: Iterable[SessionKind]) -> int:
        """Active sessions of one owner (for the per-user limit)."""
        query = (
            sa.select(sa.func.count())
            .select_from(sessions)
            .where(sessions.c.owner == owner)
            .where(sessions.c.kind.in_([k.value for k in kinds]))
            .where(sessions.c.state.in_([s.value for s in ACTIVE_SESSION_STATES]))
        )
        with self._db.read() as conn:
            return int(conn.execute(query).scalar_one())
