"""Engine records: the PySpark driver processes, their heartbeats and who they serve."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import sqlalchemy as sa
from sqlalchemy.engine import Connection

from sparkgate.errors import EngineNotFound
from sparkgate.states import ACTIVE_SESSION_STATES, LIVE_ENGINE_STATES, EngineKind, EngineState
from sparkgate.store.database import Database
from sparkgate.store.presence import TablePresence
from sparkgate.store.records import EngineRecord
from sparkgate.store.schema import engine_policies, engines, sessions
from sparkgate.store.sessions import in_scope

_LIVE = [s.value for s in LIVE_ENGINE_STATES]
TAKING_WORK = (EngineState.STARTING, EngineState.RUNNING)
_TAKING_WORK = [s.value for s in TAKING_WORK]
# Any fixed number: the PostgreSQL advisory lock that serialises starting shared engines.
_SHARED_LOCK = 0x5FA6_5A4E

# The reads every round of the node's duties makes (placement, reaper), built once with their
# values bound at execution: building and keying a statement per call cost more of an idle
# node's CPU than SQLite took to run it.
_WARM_COUNT = (
    sa.select(sa.func.count())
    .select_from(engines)
    .where(engines.c.kind == EngineKind.DEDICATED.value)
    .where(engines.c.session_id.is_(None))
    .where(engines.c.state.in_(_TAKING_WORK))
)


# An engine launched to enforce another access policy than the one bound at execution (an
# engine of the release before has none recorded, and is taken as before).
_OTHER_POLICY = (
    sa.select(engine_policies.c.engine_id)
    .where(engine_policies.c.engine_id == engines.c.id)
    .where(engine_policies.c.policy != sa.bindparam("policy"))
    .exists()
)


def _shared_with_room(keyed: bool, policed: bool) -> sa.Select[Any]:
    active = (
        sa.select(sa.func.count())
        .select_from(sessions)
        .where(sessions.c.engine_id == engines.c.id)
        .where(sessions.c.state.in_([s.value for s in ACTIVE_SESSION_STATES]))
        .scalar_subquery()
    )
    key = engines.c.share_key
    query = (
        sa.select(engines)
        .where(engines.c.kind == sa.bindparam("kind"))
        .where(engines.c.state.in_(_TAKING_WORK))
        .where(key == sa.bindparam("share_key") if keyed else key.is_(None))
        .where(active < sa.bindparam("max_sessions"))
        .order_by(engines.c.state.desc(), engines.c.id)
        .limit(1)
    )
    return query.where(~_OTHER_POLICY) if policed else query


_SHARED_WITH_ROOM = {
    (keyed, policed): _shared_with_room(keyed, policed)
    for keyed in (False, True)
    for policed in (False, True)
}
_T = engines.c.heartbeat_at.type
_STALE = (
    sa.select(engines)
    .where(engines.c.state.in_(_LIVE))
    .where(
        sa.or_(
            sa.and_(
                engines.c.heartbeat_at.is_not(None),
                engines.c.heartbeat_at < sa.bindparam("beat_before", type_=_T),
            ),
            sa.and_(
                engines.c.heartbeat_at.is_(None),
                engines.c.created_at < sa.bindparam("made_before", type_=_T),
            ),
        )
    )
    .order_by(engines.c.id)
)
# An engine's heartbeat, every 2 s of its life: built once too.
_BEAT = (
    engines.update()
    .where(engines.c.id == sa.bindparam("engine_id"), engines.c.state.in_(_LIVE))
    .values(
        heartbeat_at=sa.bindparam("beat_at", type_=_T),
        host=sa.func.coalesce(sa.bindparam("beat_host", type_=engines.c.host.type), engines.c.host),
    )
)
_STATE_OF = sa.select(engines.c.state).where(engines.c.id == sa.bindparam("engine_id"))


def _ran_sessions_of(owner: str | None, creator: str | None) -> sa.ColumnElement[bool]:
    """The engines that hold or held a session ``Scope(owner, creator)`` admits: found
    through the sessions' engine index."""
    return (
        sa.select(sessions.c.id)
        .where(sessions.c.engine_id == engines.c.id, *in_scope(owner, creator))
        .exists()
    )


class Engines:
    def __init__(self, db: Database) -> None:
        self._db = db
        # A node pinned to a revision before 0015 records and compares no policies.
        self._policies_present = TablePresence(db, engine_policies)

    def add(
        self,
        kind: EngineKind,
        *,
        now: float,
        conf: dict[str, str] | None = None,
        node_id: str | None = None,
        session_id: int | None = None,
        share_key: str | None = None,
        policy: str | None = None,
        conn: Connection | None = None,
    ) -> EngineRecord:
        """A new ``starting`` engine record; ``policy``: the access policy the process to be
        launched for it will enforce (``Settings.access_policy``)."""
        stmt = (
            engines.insert()
            .values(
                kind=kind.value,
                state=EngineState.STARTING.value,
                session_id=session_id,
                conf=dict(conf or {}),
                share_key=share_key,
                node_id=node_id,
                version=1,
                created_at=now,
                updated_at=now,
            )
            .returning(*engines.c)
        )
        recorded = self._policed(policy)
        with self._db.within(conn) as c:
            row = c.execute(stmt).mappings().one()
            if recorded:
                c.execute(engine_policies.insert().values(engine_id=row["id"], policy=policy))
        return EngineRecord.from_row(row)

    def _policed(self, policy: str | None) -> bool:
        """Whether a policy is given and this store's schema records policies."""
        return policy is not None and self._policies_present()

    def of_other_policy(self, policy: str) -> list[EngineRecord]:
        """Live engines launched to enforce another access policy than ``policy``."""
        if not self._policies_present():
            return []
        query = (
            sa.select(engines)
            .where(engines.c.state.in_(_LIVE))
            .where(_OTHER_POLICY)
            .order_by(engines.c.id)
        )
        with self._db.read() as conn:
            rows = conn.execute(query, {"policy": policy}).mappings()
            return [EngineRecord.from_row(r) for r in rows]

    def find(self, engine_id: int) -> EngineRecord | None:
        with self._db.read() as conn:
            row = (
                conn.execute(sa.select(engines).where(engines.c.id == engine_id)).mappings().first()
            )
        return None if row is None else EngineRecord.from_row(row)

    def get(self, engine_id: int) -> EngineRecord:
        record = self.find(engine_id)
        if record is None:
            raise EngineNotFound(engine_id)
        return record

    def list_all(
        self,
        *,
        states: Iterable[EngineState] | None = None,
        kinds: Iterable[EngineKind] | None = None,
        owner: str | None = None,
        creator: str | None = None,
    ) -> list[EngineRecord]:
        """The engines, by id; ``owner``/``creator``: only those that hold or held a session
        a ``Scope`` with them admits (see ``ran_sessions_of``)."""
        query = sa.select(engines).order_by(engines.c.id)
        if states is not None:
            query = query.where(engines.c.state.in_([s.value for s in states]))
        if kinds is not None:
            query = query.where(engines.c.kind.in_([k.value for k in kinds]))
        if owner is not None or creator is not None:
            query = query.where(_ran_sessions_of(owner, creator))
        with self._db.read() as conn:
            return [EngineRecord.from_row(r) for r in conn.execute(query).mappings()]

    def ran_sessions_of(self, engine_id: int, owner: str | None, creator: str | None) -> bool:
        """Whether the engine holds or held a session ``Scope(owner, creator)`` admits (a
        session keeps its engine's id once ended)."""
        query = sa.select(
            sa.select(engines.c.id)
            .where(engines.c.id == engine_id, _ran_sessions_of(owner, creator))
            .exists()
        )
        with self._db.read() as conn:
            return bool(conn.execute(query).scalar())

    def recent(
        self, kind: EngineKind, share_key: str | None, *, limit: int, before: int | None = None
    ) -> list[EngineRecord]:
        """The latest engines of a placement (``kind`` and ``share_key``), newest first;
        ``before``: only those older than this engine id."""
        key = engines.c.share_key
        query = (
            sa.select(engines)
            .where(engines.c.kind == kind.value)
            .where(key.is_(None) if share_key is None else key == share_key)
            .order_by(engines.c.id.desc())
            .limit(limit)
        )
        if before is not None:
            query = query.where(engines.c.id < before)
        with self._db.read() as conn:
            return [EngineRecord.from_row(r) for r in conn.execute(query).mappings()]

    def set_process(
        self, engine_id: int, *, pid: int | None, host: str | None, log_path: str, now: float
    ) -> None:
        """Record where an engine runs (launcher side, right after starting the process)."""
        stmt = (
            engines.update()
            .where(engines.c.id == engine_id)
            .values(pid=pid, host=host, log_path=log_path, updated_at=now)
        )
        with self._db.begin() as conn:
            conn.execute(stmt)

    def heartbeat(
        self, engine_id: int, *, now: float, host: str | None = None
    ) -> EngineState | None:
        """Record that the engine is alive (and, given ``host``, where it runs); the engine's
        state now (STOPPING: finish and exit; LOST or another final state: it was given up
        on, so exit at once)."""
        values = {"engine_id": engine_id, "beat_at": now, "beat_host": host}
        with self._db.begin() as conn:
            conn.execute(_BEAT, values)
            state = conn.execute(_STATE_OF, values).scalar()
        return None if state is None else EngineState(state)

    def claim_warm(
        self, session_id: int, *, now: float, policy: str | None = None
    ) -> EngineRecord | None:
        """Give a session the oldest unassigned dedicated engine from the warm pool, if any.
        ``policy`` (here and below): only an engine enforcing that access policy, or none
        recorded."""
        return self._claim(
            EngineKind.DEDICATED,
            engines.c.session_id,
            {"session_id": session_id},
            now=now,
            policy=policy,
        )

    def warm_count(self) -> int:
        with self._db.read() as conn:
            return int(conn.execute(_WARM_COUNT).scalar_one())

    def shared_with_room(
        self,
        max_sessions: int,
        kind: EngineKind = EngineKind.SHARED,
        share_key: str | None = None,
        conn: Connection | None = None,
        *,
        policy: str | None = None,
    ) -> EngineRecord | None:
        """A live engine of ``kind`` (shared, or streaming) with this share key (NULL: anyone's
        or not yet claimed) hosting fewer than ``max_sessions`` active sessions."""
        policed = self._policed(policy)
        query = _SHARED_WITH_ROOM[share_key is not None, policed]
        values: dict[str, object] = {"kind": kind.value, "max_sessions": max_sessions}
        if share_key is not None:
            values["share_key"] = share_key
        if policed:
            values["policy"] = policy
        with self._db.within(conn) if conn is not None else self._db.read() as c:
            row = c.execute(query, values).mappings().first()
        return None if row is None else EngineRecord.from_row(row)

    def shared_or_add(
        self,
        max_sessions: int,
        kind: EngineKind,
        share_key: str | None,
        *,
        now: float,
        node_id: str | None = None,
        policy: str | None = None,
    ) -> tuple[EngineRecord, bool]:
        """:meth:`shared_with_room`, or else a new engine record of ``kind`` for the key; and
        whether it is new (the caller launches it). One transaction, serialised between nodes
        (SQLite's write lock; a PostgreSQL advisory lock), so two nodes placing sessions at
        once do not both start a shared engine: on a cluster each takes cores."""
        with self._db.begin() as conn:
            if self._db.dialect == "postgresql":
                conn.execute(sa.text("SELECT pg_advisory_xact_lock(:k)"), {"k": _SHARED_LOCK})
            found = self.shared_with_room(max_sessions, kind, share_key, conn=conn, policy=policy)
            if found is not None:
                return found, False
            added = self.add(
                kind, now=now, node_id=node_id, share_key=share_key, policy=policy, conn=conn
            )
            return added, True

    def claim_shared(
        self,
        kind: EngineKind,
        share_key: str,
        *,
        now: float,
        states: Iterable[EngineState] = TAKING_WORK,
        policy: str | None = None,
    ) -> EngineRecord | None:
        """Give an unclaimed live engine of ``kind`` (one kept warm) to ``share_key``: from
        then on it hosts only sessions with that key."""
        values = {"share_key": share_key}
        return self._claim(kind, engines.c.share_key, values, now=now, states=states, policy=policy)

    def claim_warm_as_shared(
        self, share_key: str, *, now: float, policy: str | None = None
    ) -> EngineRecord | None:
        """Make a running engine of the warm pool a shared engine of ``share_key``. A warm
        engine is a driver with the default conf, as a shared engine is, so it serves either
        way: a user with no shared engine then waits for no JVM while the spare one starts."""
        values = {"kind": EngineKind.SHARED.value, "share_key": share_key}
        return self._claim(
            EngineKind.DEDICATED,
            engines.c.session_id,
            values,
            now=now,
            states=[EngineState.RUNNING],
            policy=policy,
        )

    def _claim(
        self,
        kind: EngineKind,
        free: sa.Column[Any],
        values: dict[str, Any],
        *,
        now: float,
        states: Iterable[EngineState] = TAKING_WORK,
        policy: str | None = None,
    ) -> EngineRecord | None:
        """Compare-and-set the oldest engine of ``kind`` in ``states`` whose ``free`` column
        is NULL to ``values``, so two nodes (or two kinds of claim) cannot both take it."""
        wanted = [s.value for s in states]
        policed = self._policed(policy)
        for _ in range(5):  # another node may grab the same engine; try the next one
            with self._db.begin() as conn:
                candidate = (
                    sa.select(engines.c.id)
                    .where(engines.c.kind == kind.value)
                    .where(free.is_(None))
                    .where(engines.c.state.in_(wanted))
                    .order_by(engines.c.state.desc(), engines.c.id)  # running before starting
                    .limit(1)
                )
                binds = {}
                if policed:
                    candidate = candidate.where(~_OTHER_POLICY)
                    binds["policy"] = policy
                if self._db.dialect == "postgresql":
                    candidate = candidate.with_for_update(skip_locked=True)
                engine_id = conn.execute(candidate, binds).scalar()
                if engine_id is None:
                    return None
                taken = conn.execute(
                    engines.update()
                    .where(engines.c.id == engine_id, engines.c.kind == kind.value)
                    .where(free.is_(None), engines.c.state.in_(wanted))
                    .values(**values, updated_at=now)
                ).rowcount
            if taken == 1:
                return self.get(engine_id)
        return None

    def stale(
        self, *, now: float, heartbeat_timeout: float, start_timeout: float
    ) -> list[EngineRecord]:
        """Live engines that stopped heartbeating, or never started, in time."""
        values = {"beat_before": now - heartbeat_timeout, "made_before": now - start_timeout}
        with self._db.read() as conn:
            return [EngineRecord.from_row(r) for r in conn.execute(_STALE, values).mappings()]
