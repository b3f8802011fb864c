"""Spark Connect sessions and operations, for the Connect door.

A Connect client names its session with an id of its own choosing. Here that id, for the
authenticated user, becomes a sparkgate session (created, limited, audited and placed on an
engine like any other), recorded in the store so that every node finds the engine that holds
it. Each operation (an ExecutePlan) is a sparkgate query: checked against the user's rights
first, recorded running, ended with its outcome. A cancel from any door interrupts it in the
engine. One exception: ``spark.sql`` of a query, which Spark only analyses (the query runs,
and is recorded, when its DataFrame runs), is recorded only if it fails or ran after all.
The door forwards the calls themselves; it decides nothing of this.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from sqlalchemy.exc import IntegrityError

from sparkgate import logs
from sparkgate.auth.access import CODE, SQL
from sparkgate.auth.principal import Principal
from sparkgate.auth.users import Users
from sparkgate.errors import (
    EngineLost,
    EngineUnreachable,
    NotSupported,
    SessionNotActive,
)
from sparkgate.recorded import Cancelled, ErrorCode, RecordedError
from sparkgate.service.queries import Queries
from sparkgate.service.sessions import Sessions
from sparkgate.settings import Settings
from sparkgate.states import (
    ACTIVE_SESSION_STATES,
    TERMINAL_STATEMENT_STATES,
    EngineState,
    SessionKind,
    SessionState,
    StatementKind,
    StatementState,
)
from sparkgate.store import Store
from sparkgate.store.connect import Endpoint
from sparkgate.store.hints import ADMITTED, NODES, Listener
from sparkgate.store.records import EngineRecord, SessionRecord, StatementRecord
from sparkgate.store.session_attributes import SessionAttributes
from sparkgate.tags import words

if TYPE_CHECKING:
    from sparkgate.enginelink import EngineLinks

log = logging.getLogger("sparkgate.service.connect")

# A session's engine is read again after this long: a killed session or a dead engine is
# noticed within it, and a busy client costs the store no read per call.
_TARGET_TTL = 1.0
# A session in use is marked active at most this often (the idle timeout counts from it).
_TOUCH_EVERY = 30.0
# Artifacts that carry no code: a large local relation (createDataFrame) is uploaded as one.
_DATA_ARTIFACTS = ("cache/",)


@dataclass(frozen=True)
class ConnectTarget:
    """Where a Connect client's session lives: the sparkgate session and its engine."""

    client_session: str
    session: SessionRecord
    engine: EngineRecord
    endpoint: Endpoint  # the engine's Connect service


@dataclass(frozen=True)
class Operation:
    """What the door read in an operation's plan."""

    description: str  # a readable summary of the plan
    sql: str | None = None  # the SQL text, when the plan is SQL text
    code: str | None = None  # what in it runs the client's code ("a Python UDF"), if anything
    streaming: bool = False  # it starts a streaming query
    # SQL text that is a query, sent by ``spark.sql``: Spark only analyses it and hands it
    # back, and it runs (and is recorded) when its DataFrame does. Not recorded until the
    # answer shows otherwise: it failed, or Spark ran it after all.
    analysed_only: bool = False
    tags: Mapping[str, str] = field(default_factory=dict)  # the client's operation tags


@dataclass
class ConnectService:
    settings: Settings
    store: Store
    users: Users
    sessions: Sessions
    queries: Queries
    clock: Callable[[], float] = field(default=time.time, kw_only=True)
    _targets: dict[tuple[str, str], tuple[float, ConnectTarget]] = field(
        default_factory=dict, init=False
    )
    _lock: threading.Lock = field(default_factory=threading.Lock, init=False)
    _links: EngineLinks | None = field(default=None, init=False)
    # Calls of queued operations waiting for their turn, by query id, and what wakes them.
    _queued: dict[int, list[threading.Event]] = field(default_factory=dict, init=False)
    _listener: Listener | None = field(default=None, init=False)

    @property
    def links(self) -> EngineLinks:
        """The node's channels to engines' Connect services (made on first use)."""
        with self._lock:
            if self._links is None:
                from sparkgate.enginelink import EngineLinks

                self._links = EngineLinks()
            return self._links

    # -- sessions ------------------------------------------------------------------------

    def target(self, user: Principal, client_session: str) -> ConnectTarget:
        """The engine holding the user's Connect session ``client_session``; a new sparkgate
        session (placed on the user's engine) the first time the id is seen, waiting while
        its engine starts. Another user's session id is this user's own, new session."""
        key = (user.name, client_session)
        now = self.clock()
        with self._lock:
            cached = self._targets.get(key)
        if cached is not None and cached[0] > now:
            return cached[1]
        session_id = self.store.connect.session_of(user.name, client_session)
        if session_id is None:
            session = self._open(user, client_session)
        else:
            session = self.store.sessions.get(session_id)
        target = self._ready(session, client_session)
        if now - target.session.last_activity_at > _TOUCH_EVERY:
            self.store.sessions.touch(target.session.id, now=now)
        with self._lock:
            if len(self._targets) > 10_000:
                self._targets.clear()
            self._targets[key] = (now + _TARGET_TTL, target)
        return target

    def _open(self, user: Principal, client_session: str) -> SessionRecord:
        session, _ = self.sessions.create(
            SessionKind.INTERACTIVE,
            name=f"connect {client_session[:8]}",
            user=user,
            attributes=SessionAttributes(door="connect", connect_session=client_session),
        )
        try:
            with self.store.db.begin() as conn:
                self.store.connect.bind(
                    user.name, client_session, session.id, now=self.clock(), conn=conn
                )
        except IntegrityError:
            # Another node bound this id first (the client's first calls raced): theirs wins.
            self.sessions.kill(session.id)
            winner = self.store.connect.session_of(user.name, client_session)
            assert winner is not None
            return self.store.sessions.get(winner)
        with logs.bound(session_id=session.id):
            log.info(
                "Connect session %s of %s is session %s", client_session, user.name, session.id
            )
        return session

    def _ready(self, session: SessionRecord, client_session: str) -> ConnectTarget:
        deadline = self.clock() + self.settings.engine_start_timeout
        while True:
            if session.state not in ACTIVE_SESSION_STATES:
                raise _ended(session)
            if session.state in (SessionState.IDLE, SessionState.BUSY) and session.engine_id:
                engine = self.store.engines.get(session.engine_id)
                if engine.state in (EngineState.RUNNING, EngineState.STOPPING):
                    endpoint = self.store.connect.endpoint(engine.id)
                    if endpoint is None:
                        raise EngineUnreachable(
                            f"Engine {engine.id}, which holds session {session.id}, runs no "
                            "Spark Connect service (it started with SPARKGATE_CONNECT_PORT=0).",
                            engine_id=engine.id,
                        )
                    return ConnectTarget(client_session, session, engine, endpoint)
            if self.clock() > deadline:
                raise EngineUnreachable(
                    f"Session {session.id} is still {session.state.value}: its engine did not "
                    f"start within {self.settings.engine_start_timeout:.0f}s. Try again later.",
                    session_id=session.id,
                )
            time.sleep(0.1)
            session = self.store.sessions.get(session.id)

    def forget(self, user: Principal, client_session: str) -> None:
        with self._lock:
            self._targets.pop((user.name, client_session), None)

    def release(self, user: Principal, target: ConnectTarget) -> None:
        """The client ended its session (ReleaseSession): so does sparkgate's."""
        self.forget(user, target.client_session)
        self.sessions.kill(target.session.id, user=user)

    def check_clone(self, user: Principal, source: ConnectTarget, new_session: str) -> None:
        """A clone lives in its source's engine: bind ``new_session`` to a session there."""
        target = self.target(user, new_session)
        if target.engine.id != source.engine.id:
            raise NotSupported(
                "The new session was placed on another engine than the one cloned; clone "
                "within one engine only (share level user, group or server).",
            )

    # -- what a user may do --------------------------------------------------------------

    def check_settings(self, user: Principal, keys: Iterable[str], target: ConnectTarget) -> None:
        """Settings set through Config: refused as in SQL SET, naming the key."""
        self.users.check_conf(user, dict.fromkeys(keys, ""), target=_name(target))

    def check_explain(self, user: Principal, target: ConnectTarget) -> None:
        """A plan's explanation (``df.explain()``) shows the plan as the table rules rewrote it
        for the user: the hidden columns, masks and row filter. While table rules are in
        force it needs ``code`` (whose holders read around the rules anyway), as SQL's
        ``EXPLAIN`` of a rewritten plan does in the engine."""
        if self.users.rules().tables is not None:
            self.users.require(
                user, CODE, "explain a plan while table rules are in force", target=_name(target)
            )

    def check_artifacts(self, user: Principal, names: Iterable[str], target: ConnectTarget) -> None:
        """Uploaded files, archives and jars run on the engine: they need ``code``."""
        for artifact in names:
            if not artifact.startswith(_DATA_ARTIFACTS):
                self.users.require(
                    user, CODE, f"add code to the engine ({artifact})", target=_name(target)
                )

    # -- operations ----------------------------------------------------------------------

    def start(
        self, user: Principal, target: ConnectTarget, operation_id: str, operation: Operation
    ) -> StatementRecord:
        """Check an operation against the user's rights and limits and record it running, or
        queued in its resource group (``await_turn`` holds the call until its turn)."""
        group = self.admit(user, target, operation)
        return self.record(user, target, operation_id, operation, resource_group=group)

    def admit(self, user: Principal, target: ConnectTarget, operation: Operation) -> str | None:
        """Check an operation against the user's rights and limits (refused: an error); the
        resource group it waits its turn in, if any (``service.admission``)."""
        where = _name(target)
        if operation.streaming:
            raise NotSupported(
                "Streaming queries cannot be started through Spark Connect yet: they would run "
                "unsupervised (no restart, no progress in sparkgate). Start them with SAVE "
                "STREAM, or as a stream job.",
            )
        if operation.sql is not None:
            self.users.require_statement(user, StatementKind.SQL, operation.sql, target=where)
        else:
            self.users.require(user, SQL, "run DataFrame operations", target=where)
        if operation.code is not None:
            self.users.require(user, CODE, f"run {operation.code} on the engine", target=where)
        self.users.check_query_limit(user)
        session = target.session
        return self.sessions.admission.group_for(
            user.name,
            user.groups,
            session.kind,
            session.attributes,
            {**(session.attributes.tags or {}), **operation.tags},
        )

    def record(
        self,
        user: Principal,
        target: ConnectTarget,
        operation_id: str,
        operation: Operation,
        *,
        started_at: float | None = None,
        resource_group: str | None = None,
    ) -> StatementRecord:
        """Record an admitted operation as a query running since ``started_at`` (now), or
        queued in ``resource_group`` when that has no room."""
        kind = StatementKind.SQL if operation.sql is not None else StatementKind.DATAFRAME
        with self.store.db.begin() as conn:
            statement = self.store.statements.add(
                target.session.id,
                operation.sql if operation.sql is not None else operation.description,
                now=self.clock() if started_at is None else started_at,
                kind=kind,
                running=True,
                resource_group=resource_group,
                tags={**(target.session.attributes.tags or {}), **operation.tags},
                conn=conn,
            )
            self.store.connect.add_operation(
                statement.id, target.session.id, operation_id, conn=conn
            )
            self.queries.audit_submit(user, statement, conn)
        with logs.bound(query_id=statement.id, session_id=target.session.id):
            queued = statement.state is StatementState.QUEUED
            log.info(
                "query %s %s Connect operation %s",
                statement.id,
                f"queues in {resource_group}:" if queued else "runs",
                operation_id,
            )
        return statement

    def await_turn(self, statement: StatementRecord, wanted: Callable[[], bool]) -> StatementRecord:
        """Hold a queued operation until its resource group admits it (its record, running),
        it is cancelled or its session ends (its record, final). A call the client gave up
        (``wanted()`` false) cancels it. Woken by the admission's hint, with the store read on
        the safety timer should a hint be lost."""
        turn = threading.Event()
        with self._lock:
            self._queued.setdefault(statement.id, []).append(turn)
            if self._listener is None:
                self._listener = self.store.db.hints.listen(NODES, self._hinted)
        try:
            while statement.state is StatementState.QUEUED:
                turn.wait(self.settings.hint_safety_poll)
                turn.clear()
                if not wanted():
                    self._cancel_queued(statement.id, "its client left the queue")
                statement = self.store.statements.get(statement.id)
            if statement.state is StatementState.CANCELLING:
                # Cancelled as it was admitted, before its door forwarded it: nothing ran.
                self.finish(statement.id, cancelled=True)
                statement = self.store.statements.get(statement.id)
            return statement
        finally:
            with self._lock:
                waiting = self._queued.get(statement.id, [])
                if turn in waiting:
                    waiting.remove(turn)
                if not waiting:
                    self._queued.pop(statement.id, None)

    def _hinted(self, payload: str) -> None:
        """A hint on the nodes' channel (the listener's thread): wake whom it concerns."""
        with self._lock:
            if not payload:  # the listener (re)connected: hints may have been lost
                events = [e for waiting in self._queued.values() for e in waiting]
            else:
                raw = payload.removeprefix(ADMITTED)
                events = list(self._queued.get(int(raw), ())) if raw.isdigit() else []
        for event in events:
            event.set()

    def operation(self, target: ConnectTarget, operation_id: str) -> int | None:
        """The query recording an operation of this session (for a reattach), if any."""
        return self.store.connect.statement_of(target.session.id, operation_id)

    def finish(
        self,
        statement_id: int,
        *,
        error: RecordedError | None = None,
        cancelled: bool = False,
    ) -> None:
        """An operation ended: its query succeeded, failed, or (cancelled, or asked to be)
        was cancelled. Ending an ended query changes nothing."""
        found = self.store.statements.find_with_session(statement_id)
        assert found is not None
        statement, session = found
        if statement.state in TERMINAL_STATEMENT_STATES:
            return
        if cancelled or (error is not None and statement.state is StatementState.CANCELLING):
            to = StatementState.CANCELLED
            if session.engine_id is not None:
                self.store.connect.tell_cancelled(session.engine_id, statement_id)
        elif error is not None:
            to = StatementState.FAILED
        else:
            to = StatementState.SUCCESS
        self.store.transitions.statement(
            statement_id,
            to,
            now=self.clock(),
            expected=[StatementState.RUNNING, StatementState.CANCELLING],
            error=error,
        )

    def interrupt_queued(
        self, target: ConnectTarget, *, operation_id: str | None = None, tag: str | None = None
    ) -> list[str]:
        """The client's Interrupt reaches its queued operations too (its engine knows only
        those that run): all of the session's, the one named, or those carrying ``tag``. Each
        ends cancelled at once, and its held call fails. The operation ids cancelled."""
        queued = self.store.connect.queued_of_session(target.session.id)
        cancelled = []
        for operation, statement_id in queued.items():
            if operation_id is not None and operation != operation_id:
                continue
            if tag is not None and tag not in words(self.store.statements.tags_of(statement_id)):
                continue
            if self._cancel_queued(statement_id, "its client interrupted it"):
                cancelled.append(operation)
        return cancelled

    def _cancel_queued(self, statement_id: int, why: str) -> bool:
        """End a queued operation's query, cancelled (whether it still was queued)."""
        return self.store.transitions.statement(
            statement_id,
            StatementState.CANCELLED,
            now=self.clock(),
            expected=[StatementState.QUEUED],
            error=Cancelled(f"Query {statement_id} was cancelled: {why}.").recorded(),
        ).applied

    def interrupt(self, statement_id: int) -> None:
        """A query being cancelled: if it records a Connect operation, interrupt it in its
        engine; the stream serving it then ends, and the query with it."""
        operation = self.store.connect.operation_of(statement_id)
        if operation is None:
            return
        endpoint = self.store.connect.endpoint(operation.engine_id)
        if endpoint is None:
            return
        self.store.connect.tell_cancelled(operation.engine_id, statement_id)
        try:
            self.links.interrupt(
                operation.engine_id,
                endpoint,
                operation.owner,
                operation.client_session,
                operation.operation_id,
            )
        except Exception:
            # The engine is gone: the reaper ends the query with ENGINE_LOST.
            log.warning("could not interrupt operation %s", operation.operation_id, exc_info=True)

    def close(self) -> None:
        if self._links is not None:
            self._links.close()
        if self._listener is not None:
            self._listener.close()


def _name(target: ConnectTarget) -> str:
    return f"session:{target.session.id}"


def _ended(session: SessionRecord) -> Exception:
    error = session.error
    if error is not None and error.code == ErrorCode.ENGINE_LOST:
        return EngineLost.of_session(session.id, error.message or "it stopped heartbeating")
    return SessionNotActive(session.id, session.state.value)
