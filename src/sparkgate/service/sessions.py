"""Sessions for every door: read and list them, create (once per ``Idempotency-Key``), place
on an engine, kill; and the check of Spark settings a session is opened with. Always through
the store and its transitions; it never talks to Spark.

Every call made for a user takes that user (``user=``): the access checks (rights, denied
settings, limits) and the audit happen here, once, for every front door; sessions the user
does not own are reported as not found. Internal callers (stream supervision, job runs) pass
no user and act as the server.
"""

from __future__ import annotations

import dataclasses
import logging
import time
import uuid
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field

from sqlalchemy import Connection

from sparkgate import tags as session_tags
from sparkgate.auth.access import CODE, SQL
from sparkgate.auth.principal import Principal
from sparkgate.auth.principal import share_key as owner_share_key
from sparkgate.auth.users import Users, statement_right
from sparkgate.errors import EngineBackoff, MissingRight, SessionNotFound
from sparkgate.launcher.placement import Placement
from sparkgate.recorded import Cancelled, EngineLaunchFailed, SessionKilled
from sparkgate.service.admission import Admission
from sparkgate.service.idempotency import KeyedReplay
from sparkgate.service.visibility import scope, sees_session
from sparkgate.settings import Settings
from sparkgate.sql.lexed import LexedScript
from sparkgate.states import (
    ACTIVE_SESSION_STATES,
    EngineKind,
    SessionKind,
    SessionState,
    StatementKind,
    StatementState,
)
from sparkgate.store import Store
from sparkgate.store.records import Page, SessionRecord, StatementRecord, Window
from sparkgate.store.session_attributes import SessionAttributes

log = logging.getLogger("sparkgate.service.sessions")

# What the transaction that makes a session records besides (a submit's audit, a request's
# key): given the session and its first statement, if any.
AlsoRecord = Callable[[SessionRecord, StatementRecord | None, Connection], None]
# Makes a session's first statement final in the transaction that adds it (a reused query).
EndedBy = Callable[[SessionRecord, StatementRecord, Connection], StatementRecord]


@dataclass
class Sessions:
    settings: Settings
    store: Store
    placement: Placement
    users: Users
    clock: Callable[[], float] = field(default=time.time, kw_only=True)
    # Requests made once per Idempotency-Key: session creations here, submits in Queries.
    keys: KeyedReplay = field(init=False, repr=False)
    # Which resource group a statement waits its turn in (service.admission).
    admission: Admission = field(init=False, repr=False)

    def __post_init__(self) -> None:
        self.admission = Admission(self.store, self.users)
        # A schema without the table (a node pinned to the release before): keys are ignored.
        self.keys = KeyedReplay(
            self.settings, self.store, enabled=self.store.idempotency.available()
        )

    # -- what a user may see -------------------------------------------------------------

    def get(self, session_id: int, *, user: Principal) -> SessionRecord:
        """The session, if the user may see it; else SessionNotFound, as for a missing id."""
        session = self.store.sessions.find(session_id)
        if session is None or not sees_session(user, session):
            raise SessionNotFound(session_id)
        return session

    def list_page(
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
            window=window,
        )

    # -- making them -----------------------------------------------------------------------

    def create(
        self,
        kind: SessionKind,
        *,
        user: Principal,
        name: str | None = None,
        conf: dict[str, str] | None = None,
        proxy_user: str | None = None,
        attributes: SessionAttributes | None = None,
        first_statement: tuple[StatementKind, str] | None = None,
        key: str | None = None,
        tags: Mapping[str, str] | None = None,
        runs: StatementKind | None = None,
    ) -> tuple[SessionRecord, bool]:
        """A user's session (:meth:`open`), made once per ``key`` (the request's
        Idempotency-Key): the session, and whether an earlier request with the key made it
        (then it is answered as it is now). The key names the request by its kind, name and
        conf: what ``/v1`` sends, the only door that sends a key."""
        claim = self.keys.claim(
            key,
            user,
            "session",
            kind=kind.value,
            name=name,
            conf=conf or {},
            # Only when given: a key recorded before tags existed still names its request.
            **({"tags": dict(tags)} if tags else {}),
        )

        def record_key(
            session: SessionRecord, statement: StatementRecord | None, conn: Connection
        ) -> None:
            if claim is not None:
                self.keys.record(
                    claim,
                    session_id=session.id,
                    statement_id=None if statement is None else statement.id,
                    now=session.created_at,
                    conn=conn,
                )

        def make() -> SessionRecord:
            return self.open(
                kind,
                user=user,
                name=name,
                conf=conf,
                proxy_user=proxy_user,
                attributes=attributes,
                first_statement=first_statement,
                also_record=record_key,
                tags=tags,
                runs=runs,
            )[0]

        return self.keys.once(
            claim, make, lambda found: self.get(found.session_id, user=user), now=self.clock()
        )

    def group_for_owner(
        self,
        owner: str | None,
        kind: SessionKind,
        attributes: SessionAttributes,
        tags: Mapping[str, str] | None = None,
    ) -> str | None:
        """The resource group of an internal session's work (a stream job's, a job run's): its
        owner's, by the groups the access file gives the owner (those of a directory or a
        token are known only while the user is signed in). None for ownerless work."""
        if owner is None:
            return None
        return self.admission.group_for(owner, frozenset(), kind, attributes, tags)

    def open(
        self,
        kind: SessionKind,
        *,
        name: str | None = None,
        conf: dict[str, str] | None = None,
        user: Principal | None = None,
        owner: str | None = None,
        proxy_user: str | None = None,
        attributes: SessionAttributes | None = None,
        first_statement: tuple[StatementKind, str] | None = None,
        also_record: AlsoRecord | None = None,
        tags: Mapping[str, str] | None = None,
        runs: StatementKind | None = None,
        script: LexedScript | None = None,
        ended_by: EndedBy | None = None,
    ) -> tuple[SessionRecord, StatementRecord | None]:
        """Record a session (and, for a batch, its statement) and place it on an engine.

        With ``proxy_user``, ``user`` acts for that user (Livy's proxyUser; only impersonators
        may): the session is the proxied user's, with the proxied user's rights. No ``user``:
        an internal session (a job run's), ``owner``'s if given. ``also_record``: what the
        same transaction records besides (a submit's audit, the request's key). ``tags``: what
        every query of the session carries, with those of its ``sparkgate.tags`` setting.
        ``runs``: the kind of statement the session is made for, when its kind says (a Livy
        ``pyspark`` or ``sql`` session): the right that kind needs is needed to open it.
        ``script``: the first statement's SQL, lexed already. ``ended_by``: what makes the
        first statement final in the same transaction (a reused query's answer); the session
        then ends with it, and no engine is asked for."""
        share_key = None
        attributes = _door_said(attributes or SessionAttributes(), user)
        conf, given = session_tags.take(conf)
        given.update(session_tags.checked(tags))
        if given:
            attributes = dataclasses.replace(attributes, tags=given)
        if user is not None:
            acting = user
            if proxy_user:
                user = self.users.check_impersonation(user, proxy_user, field="proxyUser")
                attributes = dataclasses.replace(attributes, created_by=acting.name)
            self._require_rights(user, first_statement, runs, script)
            if first_statement is not None and first_statement[0] is StatementKind.FILE:
                # Only the engine reads a batch file: it checks the file's SETs against the
                # settings denied now (engine.batch_files.check_settings).
                denied = self.users.denied_settings(user)
                attributes = dataclasses.replace(attributes, conf_deny=tuple(denied))
            self.users.check_conf(user, conf or {})
            self.users.check_session_limit(user)
            owner = user.name
            if user.groups:
                # The groups the user signed in with (an LDAP directory's, a JWT's, the access
                # file's): the engine's table rules match them (engine.authz).
                attributes = dataclasses.replace(attributes, groups=tuple(sorted(user.groups)))
            share_key = self.users.share_key(user, uuid.uuid4().hex[:12])
        elif owner is not None:
            # Internal sessions (job runs) share only with their owner's.
            share_key = owner_share_key(self.settings.share_level, owner)
        elif self.settings.share_level != "server":
            share_key = "system"  # ownerless internal sessions: only with each other
        group = None
        if first_statement is not None:  # a user's, or an internal session's owner's
            group = (
                self.group_for_owner(owner, kind, attributes, given)
                if user is None
                else self.admission.group_for(user.name, user.groups, kind, attributes, given)
            )
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
                    session.id,
                    code,
                    now=now,
                    kind=statement_kind,
                    # Answered at once: it waits in no group and no engine runs it.
                    resource_group=None if ended_by else group,
                    running=ended_by is not None,
                    tags=given,
                    conn=conn,
                )
                statement = dataclasses.replace(statement, owner=owner)
                session = dataclasses.replace(session, statement_count=1)
                if ended_by is not None:
                    statement = ended_by(session, statement, conn)
                    self.store.transitions.session(
                        session.id,
                        SessionState.DEAD,
                        now=now,
                        expected=[SessionState.NOT_STARTED],
                        conn=conn,
                    )
            if also_record is not None:
                also_record(session, statement, conn)
        if ended_by is not None and statement is not None:
            return self.store.sessions.get(session.id), statement
        placed = self.place(session, fresh=True)
        return placed or self.store.sessions.get(session.id), statement

    def _require_rights(
        self,
        user: Principal,
        first_statement: tuple[StatementKind, str] | None,
        runs: StatementKind | None,
        script: LexedScript | None = None,
    ) -> None:
        """The rights to open a session (refusals audited): its first statement's, if it has
        one; else the right of the kind of statement it is made for, if its kind says (a user
        without ``code`` gets no Python session, nor an engine started for one, that could
        run nothing of theirs); else ``sql`` or ``code``."""
        if first_statement is not None:
            self.users.require_statement(user, *first_statement, script=script)
            return
        if runs is not None:
            right = statement_right(runs)
            action = f"start a {runs.value} session"
            if user.admin or right in user.rights:
                return
        elif user.rights & {SQL, CODE} or user.admin:
            return
        else:
            right, action = SQL, "start a session"
        error = MissingRight(user.name, right, action)
        self.users.denied(user, "session.create", error)
        raise error

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

    def place(self, session: SessionRecord, *, fresh: bool = False) -> SessionRecord | None:
        """Put a not_started session on an engine; if none can start, the session errors.
        The session as placed, or None (placed by someone else, ended, or failed)."""
        try:
            return self.placement.place(session, fresh=fresh)
        except EngineBackoff as exc:
            # Engines of its placement keep failing NO_EXECUTORS: the session says so, and
            # when the next may start, rather than waiting on a launch that would fail again.
            log.warning("session %s not placed: %s", session.id, exc)
            error = exc.recorded()
        except Exception as exc:
            log.exception("placing session %s failed", session.id)
            error = EngineLaunchFailed(
                f"No engine could be started for session {session.id}: {exc}"
            ).recorded()
        now = self.clock()
        with self.store.db.begin() as conn:
            self.store.transitions.session(
                session.id, SessionState.ERROR, now=now, error=error, conn=conn
            )
            self.store.transitions.statements_of_session(
                session.id,
                StatementState.FAILED,
                now=now,
                expected=[StatementState.QUEUED, StatementState.WAITING],
                error=error,
                conn=conn,
            )
        return None

    # -- ending them -----------------------------------------------------------------------

    def kill(self, session_id: int, *, user: Principal | None = None) -> SessionRecord:
        """End a session: ``killed``; waiting statements cancelled, a running one cancelling.
        Killing an ended session changes nothing (so a retried DELETE is harmless)."""
        now = self.clock()
        if user is not None:
            session = self.get(session_id, user=user)
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
                error=SessionKilled(f"Session {session_id} was killed.").recorded(),
            )
            if killed.applied:
                self._cancel_statements_of(session_id, now, conn)
        if killed.applied and session.engine_id is not None:
            engine = self.store.engines.find(session.engine_id)
            if engine is not None and engine.kind is EngineKind.DEDICATED:
                self.placement.stop_engine(engine.id)
        return self.store.sessions.get(session_id)

    def _cancel_statements_of(self, session_id: int, now: float, conn: Connection) -> None:
        error = Cancelled(f"Session {session_id} was killed.").recorded()
        self.store.transitions.statements_of_session(
            session_id,
            StatementState.CANCELLED,
            now=now,
            expected=[StatementState.QUEUED, StatementState.WAITING],
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


def _door_said(attributes: SessionAttributes, user: Principal | None) -> SessionAttributes:
    """The session says the door its user came through, unless its door said one already."""
    if attributes.door is not None or user is None or user.door is None:
        return attributes
    return dataclasses.replace(attributes, door=user.door)
