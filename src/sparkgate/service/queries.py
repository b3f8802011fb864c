"""Queries for every door: submit one (once per ``Idempotency-Key``), cancel it, read one,
list them, wait until final, page its result.

One submit for every door, with the access checks, limits and audit; and the reads every door
made its own way before: a wait that sleeps on the store's hints (``watcher.py``), one answer
for a result that is not there (``ResultNotReady``, ``ResultGone``), the visibility rule for
lists. Queries the user may not see are reported as not found.
"""

from __future__ import annotations

import asyncio
import dataclasses
import logging
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from functools import partial
from typing import Any

import pyarrow as pa
from sqlalchemy import Connection
from sqlalchemy.exc import SQLAlchemyError

from sparkgate import logs, results
from sparkgate.auth.principal import Principal
from sparkgate.auth.users import Users
from sparkgate.errors import QueryFinished, QueryNotFound, ResultGone, ResultNotReady
from sparkgate.launcher.placement import needs_own_engine
from sparkgate.pricing import Money, Prices
from sparkgate.recorded import Cancelled
from sparkgate.service.ended import EndedQueries
from sparkgate.service.reuse import Found, Moved, ResultReuse
from sparkgate.service.sessions import Sessions
from sparkgate.service.visibility import scope, sees_session
from sparkgate.service.watcher import StatementWatcher
from sparkgate.settings import Settings
from sparkgate.sql.errors import SqlSyntaxError
from sparkgate.sql.lexed import LexedScript, reuse_text
from sparkgate.statement_cost import StatementCost
from sparkgate.states import TERMINAL_STATEMENT_STATES, SessionKind, StatementKind, StatementState
from sparkgate.store import Store
from sparkgate.store.idempotency import KeyClaim
from sparkgate.store.records import (
    Page,
    ResultColumn,
    SessionRecord,
    StatementRecord,
    TaskCount,
    Window,
)
from sparkgate.store.resource_groups import GroupPlace
from sparkgate.store.reuse import Reused
from sparkgate.store.session_attributes import SessionAttributes
from sparkgate.tags import checked as checked_tags

log = logging.getLogger("sparkgate.service.queries")


@dataclass(frozen=True)
class ResultPage:
    """Rows ``offset`` to ``offset + limit`` of a query's result, of ``total``."""

    schema: list[ResultColumn]
    rows: list[list[Any]]
    offset: int
    limit: int
    total: int


@dataclass(frozen=True)
class Fetched:
    """Rows of a query's result read at its cursor: ``batches`` start at row ``position``."""

    batches: list[pa.RecordBatch]
    position: int
    total: int

    @property
    def more(self) -> bool:
        taken: int = sum(b.num_rows for b in self.batches)
        return self.position + taken < self.total


@dataclass(frozen=True)
class Described:
    """A query with what its answers carry beside its record."""

    statement: StatementRecord
    cost: StatementCost | None
    place: GroupPlace | None
    tags: dict[str, str]
    price: Money | None = None
    tasks: TaskCount | None = None  # while running: its Spark tasks, done and in all
    reused: Reused | None = None  # a reused query's source, and what reuse saved


@dataclass
class Queries:
    settings: Settings
    store: Store
    users: Users
    sessions: Sessions
    watcher: StatementWatcher
    # Told of each running query moved to cancelling, for those no engine loop runs (a Spark
    # Connect operation: the Connect service interrupts it in its engine).
    on_cancelling: Callable[[int], None] | None = field(default=None, kw_only=True)
    _ended: EndedQueries = field(default_factory=EndedQueries, init=False, repr=False)
    reuse: ResultReuse = field(init=False, repr=False)

    def __post_init__(self) -> None:
        self.reuse = ResultReuse(self.settings, self.store, self.users)

    # -- submitting and cancelling -------------------------------------------------------

    def submit(
        self,
        code: str,
        *,
        user: Principal,
        session_id: int | None = None,
        kind: StatementKind = StatementKind.SQL,
        isolation: str = "session",
        conf: dict[str, str] | None = None,
        key: str | None = None,
        tags: Mapping[str, str] | None = None,
        reuse: bool = True,
    ) -> tuple[StatementRecord, bool]:
        """Queue a statement in a session, or (no session) run it as a one-off query; made
        once per ``key`` (the request's Idempotency-Key): the query, and whether an earlier
        request with the key made it (then it is answered as a read would, as it is now).

        A one-off query gets a session of its own, ended with it: by default (``isolation``
        ``"session"``) a fresh ``newSession()`` on a warm shared engine of its owner, whose
        temporary views and settings go with it; with ``"engine"``, or settings only a new
        driver can take (``conf``), a dedicated engine (a warm one, if any).

        A read-only query may be answered at once from an earlier result (``service.reuse``;
        ``reuse=False``: never)."""
        keys = self.sessions.keys
        claim = keys.claim(
            key,
            user,
            "query",
            query=code,
            session_id=session_id,
            kind=kind.value,
            isolation=isolation,
            conf=conf or {},
            # Only when given: a key recorded before tags existed still names its request.
            **({"tags": dict(tags)} if tags else {}),
        )

        def make() -> StatementRecord:
            # Lexed once here for every check that reads the text (the rights, the settings,
            # reuse); text that cannot be lexed is left to those checks to refuse as before.
            script = _lexed(code) if kind is StatementKind.SQL else None
            if session_id is None:
                return self._submit_alone(
                    code, user, kind, isolation, conf, claim, tags, script, reuse
                )
            return self._submit_in(session_id, code, user, kind, claim, tags, script, reuse)

        def replay(found_id: int | None) -> StatementRecord:
            assert found_id is not None  # a query's key names its statement
            return self.get(found_id, user=user)

        statement, replayed = keys.once(
            claim,
            make,
            lambda found: replay(found.statement_id),
            now=self.sessions.clock(),
            # A statement in a session is made in one transaction with its key; a one-off
            # query's session may start an engine before it, so its key is looked up first.
            look_first=session_id is None,
        )
        if not replayed:
            with logs.bound(query_id=statement.id, session_id=statement.session_id):
                log.info("query %s submitted (%s)", statement.id, kind.value)
        return statement, replayed

    def _submit_alone(
        self,
        code: str,
        user: Principal,
        kind: StatementKind,
        isolation: str,
        conf: dict[str, str] | None,
        claim: KeyClaim | None,
        tags: Mapping[str, str] | None = None,
        script: LexedScript | None = None,
        reuse: bool = True,
    ) -> StatementRecord:
        """A one-off query, in a batch session of its own (which carries its tags); a reused
        one's session ends as it is made."""
        self.users.check_query_limit(user)
        on_shared = isolation == "session" and not needs_own_engine(conf or {})
        found = None
        if self._may_reuse(kind, script, reuse):
            self.users.require_statement(user, kind, code, script=script)
            found = self._find(script, lambda: self.reuse.fresh_context(conf), user)

        def open_with(found: Found | None) -> StatementRecord:
            ended_by = None
            if found is not None:
                ended_by = partial(self._serve, found, user)
            _, statement = self.sessions.open(
                SessionKind.BATCH,
                user=user,
                conf=conf,
                first_statement=(kind, code),
                # Also what marks a one-off query's session (store.sessions.one_off_queries).
                attributes=SessionAttributes(isolation="session" if on_shared else "engine"),
                also_record=lambda session, added, conn: self._record(
                    user, session, added, claim, conn
                ),
                tags=tags,
                script=script,
                ended_by=ended_by,
            )
            assert statement is not None
            return statement

        if found is not None:
            try:
                return open_with(found)
            except _STORE_OR_FILES as exc:
                source = found.source.id
                log.warning("reusing query %s's result failed (%s); running it", source, exc)
        return open_with(None)

    def _submit_in(
        self,
        session_id: int,
        code: str,
        user: Principal,
        kind: StatementKind,
        claim: KeyClaim | None,
        tags: Mapping[str, str] | None = None,
        script: LexedScript | None = None,
        reuse: bool = True,
    ) -> StatementRecord:
        """A statement queued in a session the user may use, with its session's tags and its
        own (which win); or, reused, final at once."""
        session = self.sessions.get(session_id, user=user)
        target = f"session:{session_id}"
        self.users.require_statement(user, kind, code, target=target, script=script)
        self.users.check_query_limit(user)
        if session.proxy_user and session.owner != user.name:
            # The impersonator's statement runs with the proxied user's rights, too.
            self.users.require_statement(self.users.as_user(user, session.proxy_user), kind, code)
        # Placed as its session's owner (a proxied user's session: the proxied user).
        owner = session.owner or user.name
        groups = user.groups if owner == user.name else frozenset(session.attributes.groups or ())
        carried = {**(session.attributes.tags or {}), **checked_tags(tags)}
        group = self.sessions.admission.group_for(
            owner, groups, session.kind, session.attributes, carried
        )
        # Reused only for the session's own user: a proxied session's statements run with
        # another's rules, which its rights checks above do not decide alone.
        if self._may_reuse(kind, script, reuse) and session.owner == user.name:
            found = self._find(script, lambda: self.reuse.session_context(session), user)
            if found is not None:
                reused = self._reuse_in(found, session, code, user, claim, carried)
                if reused is not None:
                    return reused
        with self.store.db.begin() as conn:  # the statement, its audit and key: one transaction
            added = self.store.statements.add(
                session_id,
                code,
                now=self.sessions.clock(),
                kind=kind,
                resource_group=group,
                tags=carried,
                conn=conn,
            )
            statement = dataclasses.replace(added, owner=session.owner)
            self._record(user, session, statement, claim, conn)
        return statement

    # -- reuse ---------------------------------------------------------------------------

    def _may_reuse(self, kind: StatementKind, script: LexedScript | None, asked: bool) -> bool:
        return kind is StatementKind.SQL and script is not None and self.reuse.on(asked)

    def _find(
        self,
        script: LexedScript | None,
        context_of: Callable[[], str | None],
        user: Principal,
    ) -> Found | None:
        """An earlier result this query may be answered with: none unless it is one read-only
        query and its context is known (two store reads when none is found)."""
        text = reuse_text(script) if script is not None else None
        if text is None or not _reads_tables(text):
            return None
        context = context_of()
        if context is None:
            return None
        return self.reuse.find(text, context, user, now=self.sessions.clock())

    def _serve(
        self,
        found: Found,
        user: Principal,
        session: SessionRecord,
        statement: StatementRecord,
        conn: Connection,
    ) -> StatementRecord:
        return self.reuse.serve(
            found, statement, user, session.attributes.origin, now=self.sessions.clock(), conn=conn
        )

    def _reuse_in(
        self,
        found: Found,
        session: SessionRecord,
        code: str,
        user: Principal,
        claim: KeyClaim | None,
        tags: Mapping[str, str],
    ) -> StatementRecord | None:
        """The reused query, final, as the session's next statement; None when the session
        moved on meanwhile (or the store or the files failed it): then it runs."""
        added_id = None
        try:
            with self.store.db.begin() as conn:
                added = self.store.statements.add(
                    session.id,
                    code,
                    now=self.sessions.clock(),
                    running=True,  # never an engine's: it ends in this transaction
                    tags=tags,
                    conn=conn,
                )
                added_id = added.id
                moved = added.seq != session.statement_count or not (
                    self.store.reuse.advance_session(
                        session.id, added.seq - 1, added.seq, conn=conn
                    )
                )
                if moved:
                    raise Moved
                added = dataclasses.replace(added, owner=session.owner)
                statement = self._serve(found, user, session, added, conn)
                self._record(user, session, statement, claim, conn)
            return statement
        except Moved:
            return None
        except _STORE_OR_FILES as exc:
            log.warning("reusing query %s's result failed (%s); running it", found.source.id, exc)
            if added_id is not None:
                self.reuse.discard(added_id)
            return None

    def _record(
        self,
        user: Principal,
        session: SessionRecord,
        statement: StatementRecord | None,
        claim: KeyClaim | None,
        conn: Connection,
    ) -> None:
        """What a submit's transaction records besides its statement: its audit, its key."""
        assert statement is not None  # a submit's session has its statement
        self.audit_submit(user, statement, conn)
        if claim is not None:
            self.sessions.keys.record(
                claim,
                session_id=session.id,
                statement_id=statement.id,
                now=statement.created_at,
                conn=conn,
            )

    def audit_submit(self, user: Principal, statement: StatementRecord, conn: Connection) -> None:
        self.users.audit(
            user,
            "query.submit",
            "ok",
            target=f"query:{statement.id}",
            detail={"session_id": statement.session_id, "kind": statement.kind.value},
            conn=conn,
        )

    def cancel(self, query_id: int, *, user: Principal) -> StatementRecord:
        """Cancel a query: a waiting one at once, a running one through its engine (a Spark
        Connect operation: interrupted in its engine through ``on_cancelling``)."""
        found, session = self._with_session(query_id, user)
        owner = found.owner
        with logs.bound(query_id=query_id):
            try:
                statement = dataclasses.replace(self._cancel(query_id), owner=owner)
            except QueryFinished as exc:
                self.users.audit(
                    user,
                    "query.cancel",
                    "failed",
                    target=f"query:{query_id}",
                    detail=exc.to_dict(),
                )
                raise
            log.info("query %s %s", query_id, statement.state.value)
            connect = session.attributes.door == "connect"
            if connect and statement.state is StatementState.CANCELLING and self.on_cancelling:
                self.on_cancelling(query_id)
            self.users.audit(
                user,
                "query.cancel",
                "ok",
                target=f"query:{query_id}",
                detail={"state": statement.state.value},
            )
            return statement

    def _cancel(self, query_id: int) -> StatementRecord:
        for _ in range(3):  # the engine may move it between our read and our write
            statement = self.store.statements.get(query_id)
            if statement.state in TERMINAL_STATEMENT_STATES:
                raise QueryFinished(query_id, statement.state.value)
            if statement.state is StatementState.CANCELLING:
                return statement
            now = self.sessions.clock()
            if statement.state in (StatementState.QUEUED, StatementState.WAITING):
                moved = self.store.transitions.statement(
                    query_id,
                    StatementState.CANCELLED,
                    now=now,
                    expected=[statement.state],
                    error=Cancelled(f"Query {query_id} was cancelled.").recorded(),
                )
                if moved.applied:
                    self._end_batch_without_work(statement.session_id)
            else:
                moved = self.store.transitions.statement(
                    query_id,
                    StatementState.CANCELLING,
                    now=now,
                    expected=[StatementState.RUNNING],
                )
            if moved.applied:
                return self.store.statements.get(query_id)
        return self.store.statements.get(query_id)

    def _end_batch_without_work(self, session_id: int) -> None:
        session = self.store.sessions.get(session_id)
        if session.kind is SessionKind.BATCH:
            self.sessions.kill(session_id)

    # -- reading ---------------------------------------------------------------------------

    def for_fetch(self, query_id: int, *, user: Principal) -> StatementRecord:
        """:meth:`get` for a client paging the query's result by its cursor: once the query
        has ended, its record (cursor included) is kept for the next page's call."""
        now = time.monotonic()
        kept = self._ended.find(query_id, user.name, now)
        if kept is not None:
            return kept
        statement = self.get(query_id, user=user)
        if statement.state in TERMINAL_STATEMENT_STATES:
            self._ended.keep(statement, user.name, now)
        return statement

    def get(self, query_id: int, *, user: Principal) -> StatementRecord:
        """The query, if the user may see it; else QueryNotFound, as for a missing id."""
        return self._with_session(query_id, user)[0]

    def cost(self, statement: StatementRecord) -> StatementCost | None:
        """What an ended query's Spark tasks cost (its engine records it with its end)."""
        if statement.state not in TERMINAL_STATEMENT_STATES:
            return None
        return self.store.statement_costs.of(statement.id)

    def tags(self, statement: StatementRecord) -> dict[str, str]:
        """The tags the query carries (its session's and its own)."""
        return self.store.statements.tags_of(statement.id)

    def place(self, statement: StatementRecord) -> GroupPlace | None:
        """The resource group the query waits or ran in, and its turn while queued."""
        return self.store.resource_groups.where(statement.id)

    def described(self, statement: StatementRecord) -> Described:
        """A query as its single read answers it: with its cost, place and tags."""
        cost = self.cost(statement)
        price = Prices.of(self.settings).money(cost)
        tasks = self._tasks([statement]).get(statement.id)
        reused = self._reused([statement]).get(statement.id)
        return Described(
            statement, cost, self.place(statement), self.tags(statement), price, tasks, reused
        )

    def described_page(self, statements: Sequence[StatementRecord]) -> list[Described]:
        """A list's queries with their places and tags, read in one store call each for the
        whole page (not one per query); no cost (the single read gives it)."""
        places = self.store.resource_groups.places_of(s.id for s in statements)
        tags = self.store.statements.tags_of_many(s.id for s in statements)
        tasks = self._tasks(statements)
        reused = self._reused(statements)
        return [
            Described(
                s,
                None,
                places.get(s.id),
                tags.get(s.id, {}),
                tasks=tasks.get(s.id),
                reused=reused.get(s.id),
            )
            for s in statements
        ]

    def _reused(self, statements: Sequence[StatementRecord]) -> dict[int, Reused]:
        """Which of them were answered by reuse (a read only when one succeeded)."""
        done = [s.id for s in statements if s.state is StatementState.SUCCESS]
        return self.store.reuse.reused_of_many(done) if done else {}

    def _tasks(self, statements: Sequence[StatementRecord]) -> dict[int, TaskCount]:
        """The task counts of those that run (a read only when one does: an ended query's
        last count is stale, its cost says what ran)."""
        running = [s.id for s in statements if s.state is StatementState.RUNNING]
        return self.store.statements.tasks_of_many(running) if running else {}

    def _with_session(
        self, query_id: int, user: Principal
    ) -> tuple[StatementRecord, SessionRecord]:
        """A query and its session, if the user may see them; else QueryNotFound."""
        found = self.store.statements.find_with_session(query_id)
        if found is None or not sees_session(user, found[1]):
            raise QueryNotFound(query_id)
        return found

    def list_page(
        self,
        *,
        user: Principal,
        owner: str | None = None,
        session_id: int | None = None,
        states: Iterable[StatementState] | None = None,
        search: str | None = None,
        window: Window = Window(),
    ) -> Page[StatementRecord]:
        """The queries the user may see (admins: ``owner``'s, or everyone's), newest first;
        ``search``: only those whose text holds it, in any case."""
        visible = scope(user, owner)
        return self.store.statements.list_page(
            session_id=session_id,
            states=states,
            owner=visible.owner,
            creator=visible.creator,
            search=search,
            newest_first=True,
            window=window,
        )

    def in_session(
        self, session_id: int, *, user: Principal, window: Window = Window()
    ) -> Page[StatementRecord]:
        """A session's statements in order, if the user may see the session."""
        self.sessions.get(session_id, user=user)
        return self.store.statements.list_page(session_id=session_id, window=window)

    def by_seq(self, session_id: int, seq: int, *, user: Principal) -> StatementRecord | None:
        """A session's statement by its number in the session (0 first), if any."""
        self.sessions.get(session_id, user=user)
        return self.store.statements.find_by_seq(session_id, seq)

    def first_of_sessions(self, sessions: Iterable[SessionRecord]) -> dict[int, StatementRecord]:
        """The first statement of each of sessions already read (a batch's statement)."""
        return self.store.statements.first_of_sessions(s.id for s in sessions)

    # -- waiting -------------------------------------------------------------------------

    async def wait(self, statement: StatementRecord, seconds: float) -> StatementRecord:
        """The statement once final, or as it is after ``seconds`` (at most long_poll_max).
        The watcher's record when it read it final; else one read. The owner is kept."""
        if statement.state in TERMINAL_STATEMENT_STATES:
            return statement
        final = await self.watcher.wait(statement.id, min(seconds, self.settings.long_poll_max))
        if final is None:
            final = await asyncio.to_thread(self.store.statements.get, statement.id)
        return dataclasses.replace(final, owner=statement.owner)

    async def finished(self, statement: StatementRecord) -> StatementRecord:
        """The statement once it has ended, however long that takes (a client that asked
        for a synchronous answer, or a result before it polled)."""
        while statement.state not in TERMINAL_STATEMENT_STATES:
            statement = await self.wait(statement, self.settings.long_poll_max)
        return statement

    # -- results -------------------------------------------------------------------------

    def result_page(
        self, statement: StatementRecord, offset: int = 0, limit: int | None = None
    ) -> ResultPage:
        """A page of a succeeded query's rows (``limit`` defaults to 1000, at most
        ``result_page_max``)."""
        path = self._result_path(statement)
        page_limit = min(limit if limit is not None else 1000, self.settings.result_page_max)
        try:
            rows, total = results.read_page(path, offset, page_limit)
        except FileNotFoundError as exc:
            raise ResultGone(statement.id, path) from exc
        info = statement.result
        return ResultPage(info.schema if info else [], rows, offset, page_limit, total)

    def result_batches(
        self, statement: StatementRecord, offset: int, limit: int
    ) -> tuple[list[pa.RecordBatch], int]:
        """The Arrow batches holding rows ``offset`` to ``offset + limit``, and the total."""
        path = self._result_path(statement)
        try:
            return results.read_batches(path, offset, limit)
        except FileNotFoundError as exc:
            raise ResultGone(statement.id, path) from exc

    def whole_result(self, statement: StatementRecord) -> results.WholeResult:
        """A succeeded query's whole result, opened to stream batch by batch (a download)."""
        path = self._result_path(statement)
        try:
            return results.open_whole(path)
        except FileNotFoundError as exc:
            raise ResultGone(statement.id, path) from exc

    def _result_path(self, statement: StatementRecord) -> str:
        try:
            return result_path(statement)
        except ResultNotReady:
            # Only now, when there is none, ask whether a Connect client had the rows.
            if self.store.connect.records_operation(statement.id):
                raise ResultNotReady(statement.id, statement.state.value, connect=True) from None
            raise

    def fetch(self, statement: StatementRecord, *, from_start: bool, limit: int) -> Fetched:
        """The next ``limit`` rows after the query's cursor (or its first rows), moving the
        cursor past them. The cursor is in the store, so a client goes on through any node;
        two fetches of one query at once each get rows of their own."""
        while True:
            position = 0 if from_start else statement.fetched
            batches, total = self.result_batches(statement, position, limit)
            taken = sum(b.num_rows for b in batches)
            if self.store.statements.move_cursor(statement.id, statement.fetched, position + taken):
                self._ended.moved(statement.id, position + taken)
                return Fetched(batches, position, total)
            # Another fetch (or node) moved the cursor first: read from where it is now.
            statement = dataclasses.replace(
                self.store.statements.get(statement.id), owner=statement.owner
            )
            self._ended.moved(statement.id, statement.fetched)


_STORE_OR_FILES = (OSError, SQLAlchemyError)


def _reads_tables(text: str) -> bool:
    """Whether a normalised query may read a table (the engine keeps no result of one that
    reads none): its words are upper-case and one space apart, so FROM is found as a word."""
    return " FROM " in text or text.startswith(("TABLE ", "( TABLE "))


def _lexed(code: str) -> LexedScript | None:
    try:
        return LexedScript.of(code)
    except SqlSyntaxError:
        return None


def result_path(statement: StatementRecord) -> str:
    """Where a query's result is: only a query that succeeded with rows has one."""
    info = statement.result
    if statement.state is not StatementState.SUCCESS or info is None or info.path is None:
        load = statement.kind is StatementKind.LOAD
        raise ResultNotReady(statement.id, statement.state.value, load=load)
    return info.path
