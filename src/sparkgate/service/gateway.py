"""Sessions and statements for every door: create, read, list and kill sessions; submit and
cancel statements; stop engines. Always through the store and its transitions; it never talks
to Spark.

Every call made for a user takes that user (``user=``): the access checks (rights, denied
settings, limits) and the audit happen here, once, for every front door; objects the user does
not own are reported as not found. Internal callers (stream supervision, job runs) pass no
user and act as the server.
"""

from __future__ import annotations

import dataclasses
import logging
import time
import uuid
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

from sparkgate import logs
from sparkgate.auth.access import CODE, SQL
from sparkgate.auth.principal import Principal
from sparkgate.auth.principal import share_key as owner_share_key
from sparkgate.auth.users import Users
from sparkgate.errors import (
    EngineBackoff,
    MissingRight,
    QueryFinished,
    QueryNotFound,
    SessionNotFound,
)
from sparkgate.launcher.placement import Placement, needs_own_engine
from sparkgate.recorded import Cancelled, EngineLaunchFailed, SessionKilled
from sparkgate.service.visibility import scope, sees_session
from sparkgate.settings import Settings
from sparkgate.states import (
    ACTIVE_SESSION_STATES,
    LIVE_ENGINE_STATES,
    TERMINAL_STATEMENT_STATES,
    EngineKind,
    SessionKind,
    SessionState,
    StatementKind,
    StatementState,
)
from sparkgate.store import Store
from sparkgate.store.idempotency import KeyClaim
from sparkgate.store.records import EngineRecord, Page, SessionRecord, StatementRecord, Window

log = logging.getLogger("sparkgate.service.gateway")


@dataclass
class Gateway:
    settings: Settings
    store: Store
    placement: Placement
    users: Users
    clock: Callable[[], float] = field(default=time.time, kw_only=True)
    # Told of each running query moved to cancelling, for those no engine loop runs (a Spark
    # Connect operation: the Connect service interrupts it in its engine).
    on_cancelling: Callable[[int], None] | None = field(default=None, kw_only=True)

    # -- what a user may see -------------------------------------------------------------

    def session(self, session_id: int, *, user: Principal) -> SessionRecord:
        """The session, if the user may see it; else SessionNotFound, as for a missing id."""
        session = self.store.sessions.find(session_id)
        if session is None or not sees_session(user, session):
            raise SessionNotFound(session_id)
        return session

    def statement(self, statement_id: int, *, user: Principal) -> StatementRecord:
        return self._statement_with_session(statement_id, user)[0]

    def _statement_with_session(
        self, statement_id: int, user: Principal
    ) -> tuple[StatementRecord, SessionRecord]:
        """A statement and its session, if the user may see them; else QueryNotFound."""
        found = self.store.statements.find_with_session(statement_id)
        if found is None or not sees_session(user, found[1]):
            raise QueryNotFound(statement_id)
        return found

    def sessions(
        self,
        *,
        user: Principal,
        owner: str | None = None,
        states: Iterable[SessionState] | None = None,
        kinds: Iterable[SessionKind] | None = None,
        ended_since: float | None = None,
        one_off: bool | None = None,
        window: Window = Window(),
    ) -> Page[SessionRecord]:
        """The sessions the user may see (admins: ``owner``'s, or everyone's), oldest first;
        ``ended_since``: only active ones and those ended since then; ``one_off``: only
        one-off queries' sessions (True), or none of them (False)."""
        visible = scope(user, owner)
        return self.store.sessions.list_page(
            states=states,
            kinds=kinds,
            ended_since=ended_since,
            one_off=one_off,
            owner=visible.owner,
            creator=visible.creator,
            **window.kwargs(),
        )

    # -- sessions ------------------------------------------------------------------------

    def create_session(
        self,
        kind: SessionKind,
        *,
        name: str | None = None,
        conf: dict[str, str] | None = None,
        user: Principal | None = None,
        owner: str | None = None,
        proxy_user: str | None = None,
        attributes: dict[str, Any] | None = None,
        first_statement: tuple[StatementKind, str] | None = None,
        audit_submit: bool = False,
        key: KeyClaim | None = None,
    ) -> tuple[SessionRecord, StatementRecord | None]:
        """Record a session (and, for a batch, its statement) and place it on an engine.

        With ``proxy_user``, ``user`` acts for that user (Livy's proxyUser; only impersonators
        may): the session is the proxied user's, with the proxied user's rights.
        ``audit_submit``: the first statement is a submitted query (audited as one). ``key``:
        the request's Idempotency-Key, recorded with what it made (service/idempotency.py)."""
        share_key = None
        if user is not None:
            acting = user
            if proxy_user:
                user = self.users.check_impersonation(user, proxy_user, field="proxyUser")
                attributes = {**(attributes or {}), "created_by": acting.name}
            if first_statement is not None:
                self.users.require_statement(user, *first_statement)
                if first_statement[0] is StatementKind.FILE:
                    # Only the engine reads a batch file: it checks the file's SETs against
                    # the settings denied now (engine.batch_files.check_settings).
                    denied = self.users.denied_settings(user)
                    attributes = {**(attributes or {}), "conf_deny": denied}
            elif not user.rights & {SQL, CODE}:
                error = MissingRight(user.name, SQL, "start a session")
                self.users.denied(user, "session.create", error)
                raise error
            self.users.check_conf(user, conf or {})
            self.users.check_session_limit(user)
            owner = user.name
            if user.groups:
                # The groups the user signed in with (an LDAP directory's, a JWT's, the access
                # file's): the engine's table rules match them (engine.authz).
                attributes = {**(attributes or {}), "groups": sorted(user.groups)}
            share_key = self.users.share_key(user, uuid.uuid4().hex[:12])
        elif owner is not None:
            # Internal sessions (job runs) share only with their owner's.
            share_key = owner_share_key(self.settings.share_level, owner)
        elif self.settings.share_level != "server":
            share_key = "system"  # ownerless internal sessions: only with each other
        now = self.clock()
        statement = None
        # One transaction: the session, its first statement and what the audit says of them.
        with self.store.db.begin() as conn:
            session = self.store.sessions.add(
                kind,
                now=now,
                name=name,
                conf=conf,
                owner=owner,
                proxy_user=proxy_user,
                share_key=share_key,
                attributes=attributes,
                conn=conn,
            )
            target = f"session:{session.id}"
            if user is not None:
                detail = {"kind": kind}
                self.users.audit(
                    user, "session.create", "ok", target=target, detail=detail, conn=conn
                )
            if first_statement is not None:
                statement_kind, code = first_statement
                statement = self.store.statements.add(
                    session.id, code, now=now, kind=statement_kind, conn=conn
                )
                statement = dataclasses.replace(statement, owner=owner)
                session = dataclasses.replace(session, statement_count=1)
                if audit_submit and user is not None:
                    self.audit_submit(user, statement, conn)
            if key is not None:
                self._record_key(key, session, statement, now, conn)
        placed = self.place(session, fresh=True)
        return placed or self.store.sessions.get(session.id), statement

    def _record_key(
        self,
        key: KeyClaim,
        session: SessionRecord,
        statement: StatementRecord | None,
        now: float,
        conn: Any,
    ) -> None:
        self.store.idempotency.add(
            key,
            session_id=session.id,
            statement_id=None if statement is None else statement.id,
            now=now,
            expired_before=now - self.settings.idempotency_key_ttl,
            conn=conn,
        )

    def check_settings(
        self,
        user: Principal,
        *,
        conf: dict[str, str] | None = None,
        sql: Iterable[str] = (),
        target: str | None = None,
        where: str | None = None,
    ) -> None:
        """Refuse (audited) denied Spark settings among ``conf``'s keys and in a ``SET`` of
        ``sql``, all at once: for a door that applies settings as several statements
        (HiveServer2's OpenSession configuration and confOverlay), so that a denied one is
        refused before any of them runs."""
        self.users.check_conf(user, conf or {}, target=target, where=where)
        for text in sql:
            self.users.check_sql_settings(user, text, target=target, where=where)

    def audit_submit(self, user: Principal, statement: StatementRecord, conn: Any) -> None:
        self.users.audit(
            user,
            "query.submit",
            "ok",
            target=f"query:{statement.id}",
            detail={"session_id": statement.session_id, "kind": statement.kind.value},
            conn=conn,
        )

    def place(self, session: SessionRecord, *, fresh: bool = False) -> SessionRecord | None:
        """Put a not_started session on an engine; if none can start, the session errors.
        The session as placed, or None (placed by someone else, ended, or failed)."""
        try:
            return self.placement.place(session, fresh=fresh)
        except EngineBackoff as exc:
            # Engines of its placement keep failing NO_EXECUTORS: the session says so, and
            # when the next may start, rather than waiting on a launch that would fail again.
            log.warning("session %s not placed: %s", session.id, exc)
            error = exc.to_dict()
        except Exception as exc:
            log.exception("placing session %s failed", session.id)
            error = EngineLaunchFailed(
                f"No engine could be started for session {session.id}: {exc}"
            ).to_dict()
        now = self.clock()
        with self.store.db.begin() as conn:
            self.store.transitions.session(
                session.id, SessionState.ERROR, now=now, error=error, conn=conn
            )
            self.store.transitions.statements_of_session(
                session.id,
                StatementState.FAILED,
                now=now,
                expected=[StatementState.WAITING],
                error=error,
                conn=conn,
            )
        return None

    def kill_session(self, session_id: int, *, user: Principal | None = None) -> SessionRecord:
        """End a session: ``killed``; waiting statements cancelled, a running one cancelling.
        Killing an ended session changes nothing (so a retried DELETE is harmless)."""
        now = self.clock()
        if user is not None:
            session = self.session(session_id, user=user)
            self.users.audit(user, "session.kill", "ok", target=f"session:{session_id}")
        else:
            session = self.store.sessions.get(session_id)
        with self.store.db.begin() as conn:
            killed = self.store.transitions.session(
                session_id,
                SessionState.KILLED,
                now=now,
                expected=ACTIVE_SESSION_STATES,
                conn=conn,
                error=SessionKilled(f"Session {session_id} was killed.").to_dict(),
            )
            if killed.applied:
                self._cancel_statements_of(session_id, now, conn)
        if killed.applied and session.engine_id is not None:
            engine = self.store.engines.find(session.engine_id)
            if engine is not None and engine.kind is EngineKind.DEDICATED:
                self.placement.stop_engine(engine.id)
        return self.store.sessions.get(session_id)

    def _cancel_statements_of(self, session_id: int, now: float, conn: Any) -> None:
        error = Cancelled(f"Session {session_id} was killed.").to_dict()
        self.store.transitions.statements_of_session(
            session_id,
            StatementState.CANCELLED,
            now=now,
            expected=[StatementState.WAITING],
            error=error,
            conn=conn,
        )
        self.store.transitions.statements_of_session(
            session_id,
            StatementState.CANCELLING,
            now=now,
            expected=[StatementState.RUNNING],
            conn=conn,
        )

    def engines(self, *, live_only: bool = True) -> list[EngineRecord]:
        """The engines (live ones, or all): every user may see what runs Spark."""
        return self.store.engines.list_all(states=LIVE_ENGINE_STATES if live_only else None)

    def engine(self, engine_id: int) -> EngineRecord:
        return self.store.engines.get(engine_id)

    def engine_ui(self, engine_id: int, *, user: Principal) -> EngineRecord:
        """An engine whose Spark UI an admin is about to see through this node."""
        self.users.require_admin(user, "see engines' Spark UIs", target=f"engine:{engine_id}")
        return self.store.engines.get(engine_id)

    def engines_of(self, sessions: Iterable[SessionRecord]) -> dict[int, EngineRecord]:
        """The engines of sessions already read (one read per engine, not per session)."""
        engines: dict[int, EngineRecord] = {}
        for engine_id in {s.engine_id for s in sessions if s.engine_id is not None}:
            engine = self.store.engines.find(engine_id)
            if engine is not None:
                engines[engine_id] = engine
        return engines

    def stop_engine(self, engine_id: int, *, user: Principal) -> EngineRecord:
        """Ask an engine to stop gracefully (it notices within a heartbeat). Admins only."""
        self.users.require_admin(user, "stop an engine", target=f"engine:{engine_id}")
        self.store.engines.get(engine_id)  # 404 for an unknown engine
        self.placement.stop_engine(engine_id)
        self.users.audit(user, "engine.stop", "ok", target=f"engine:{engine_id}")
        return self.store.engines.get(engine_id)

    # -- statements ----------------------------------------------------------------------

    def submit(
        self,
        code: str,
        *,
        user: Principal,
        session_id: int | None = None,
        kind: StatementKind = StatementKind.SQL,
        isolation: str = "session",
        conf: dict[str, str] | None = None,
        key: KeyClaim | None = None,
    ) -> StatementRecord:
        """Queue a statement in a session, or (no session) run it as a one-off query.

        A one-off query gets a session of its own, ended with it: by default (``isolation``
        ``"session"``) a fresh ``newSession()`` on a warm shared engine of its owner, whose
        temporary views and settings go with it; with ``"engine"``, or settings only a new
        driver can take (``conf``), a dedicated engine (a warm one, if any)."""
        if session_id is None:
            self.users.check_query_limit(user)
            on_shared = isolation == "session" and not needs_own_engine(conf or {})
            _, statement = self.create_session(
                SessionKind.BATCH,
                user=user,
                conf=conf,
                first_statement=(kind, code),
                # Also what marks a one-off query's session (store.sessions.one_off_queries).
                attributes={"isolation": "session" if on_shared else "engine"},
                audit_submit=True,
                key=key,
            )
            assert statement is not None
        else:
            session = self.session(session_id, user=user)
            self.users.require_statement(user, kind, code, target=f"session:{session_id}")
            self.users.check_query_limit(user)
            if session.proxy_user and session.owner != user.name:
                # The impersonator's statement runs with the proxied user's rights, too.
                self.users.require_statement(
                    self.users.as_user(user, session.proxy_user), kind, code
                )
            with self.store.db.begin() as conn:  # the statement and its audit: one transaction
                added = self.store.statements.add(
                    session_id, code, now=self.clock(), kind=kind, conn=conn
                )
                statement = dataclasses.replace(added, owner=session.owner)
                self.audit_submit(user, statement, conn)
                if key is not None:  # and its key
                    self._record_key(key, session, statement, added.created_at, conn)
        with logs.bound(query_id=statement.id, session_id=statement.session_id):
            log.info("query %s submitted (%s)", statement.id, kind.value)
        return statement

    def cancel(self, statement_id: int, *, user: Principal) -> StatementRecord:
        """Cancel a statement: a waiting one at once, a running one through its engine (a
        Spark Connect operation: interrupted in its engine through ``on_cancelling``)."""
        found, session = self._statement_with_session(statement_id, user)
        owner = found.owner
        with logs.bound(query_id=statement_id):
            try:
                statement = dataclasses.replace(self._cancel(statement_id), owner=owner)
            except QueryFinished as exc:
                self.users.audit(
                    user,
                    "query.cancel",
                    "failed",
                    target=f"query:{statement_id}",
                    detail=exc.to_dict(),
                )
                raise
            log.info("query %s %s", statement_id, statement.state.value)
            connect = session.attributes.get("door") == "connect"
            if connect and statement.state is StatementState.CANCELLING and self.on_cancelling:
                self.on_cancelling(statement_id)
            self.users.audit(
                user,
                "query.cancel",
                "ok",
                target=f"query:{statement_id}",
                detail={"state": statement.state.value},
            )
            return statement

    def _cancel(self, statement_id: int) -> StatementRecord:
        for _ in range(3):  # the engine may move it between our read and our write
            statement = self.store.statements.get(statement_id)
            if statement.state in TERMINAL_STATEMENT_STATES:
                raise QueryFinished(statement_id, statement.state.value)
            if statement.state is StatementState.CANCELLING:
                return statement
            now = self.clock()
            if statement.state is StatementState.WAITING:
                moved = self.store.transitions.statement(
                    statement_id,
                    StatementState.CANCELLED,
                    now=now,
                    expected=[StatementState.WAITING],
                    error=Cancelled(f"Query {statement_id} was cancelled.").to_dict(),
                )
                if moved.applied:
                    self._end_batch_without_work(statement.session_id)
            else:
                moved = self.store.transitions.statement(
                    statement_id,
                    StatementState.CANCELLING,
                    now=now,
                    expected=[StatementState.RUNNING],
                )
            if moved.applied:
                return self.store.statements.get(statement_id)
        return self.store.statements.get(statement_id)

    def _end_batch_without_work(self, session_id: int) -> None:
        session = self.store.sessions.get(session_id)
        if session.kind is SessionKind.BATCH:
            self.kill_session(session_id)
