"""Reading and creating statements (queries). State changes go through ``transitions``."""

from __future__ import annotations

from collections.abc import Iterable, Mapping

import sqlalchemy as sa
from sqlalchemy.engine import Connection

from sparkgate.errors import BatchSessionUsed, QueryNotFound, SessionNotActive, SessionNotFound
from sparkgate.states import (
    ACTIVE_SESSION_STATES,
    TERMINAL_STATEMENT_STATES,
    SessionKind,
    StatementKind,
    StatementState,
)
from sparkgate.store.database import Database
from sparkgate.store.hints import NEW_STATEMENT, engine_channel
from sparkgate.store.pages import read_page
from sparkgate.store.presence import TablePresence
from sparkgate.store.records import (
    FIRST_PAGE,
    Page,
    SessionRecord,
    StatementRecord,
    TaskCount,
    Window,
)
from sparkgate.store.resource_groups import ResourceGroups
from sparkgate.store.schema import sessions, statement_progress, statement_tags, statements
from sparkgate.store.sessions import in_scope
from sparkgate.store.statement_output import StatementOutput

# A statement is its session's owner's: lists and long polls read the two together.
_WITH_SESSION = statements.join(sessions, statements.c.session_id == sessions.c.id)


# A statement's submit runs these two: built once, their values bound at execution.
_BUMP = (
    sessions.update()
    .where(sessions.c.id == sa.bindparam("session_id"))
    .where(sessions.c.state.in_([s.value for s in ACTIVE_SESSION_STATES]))
    .where(
        sa.or_(
            sessions.c.kind != SessionKind.BATCH.value,
            sessions.c.statement_count == 0,
        )
    )
    .values(
        statement_count=sessions.c.statement_count + 1,
        last_activity_at=sa.bindparam("now", type_=sessions.c.last_activity_at.type),
    )
    .returning(sessions.c.statement_count, sessions.c.engine_id, sessions.c.owner)
)
_INSERT = statements.insert().returning(*statements.c)
# And these two each submit reads (its statement when waited on; its owner's limit).
_BY_ID = sa.select(statements).where(statements.c.id == sa.bindparam("statement_id"))
_UNFINISHED_OF = (
    sa.select(sa.func.count())
    .select_from(statements.join(sessions, statements.c.session_id == sessions.c.id))
    .where(sessions.c.owner == sa.bindparam("owner"))
    .where(
        statements.c.state.in_(
            [s.value for s in StatementState if s not in TERMINAL_STATEMENT_STATES]
        )
    )
)
# A HiveServer2 client's fetch cursor moved by compare-and-set: one per page fetched.
_MOVE_CURSOR = (
    statements.update()
    .where(statements.c.id == sa.bindparam("statement_id"))
    .where(statements.c.fetched == sa.bindparam("expected"))
    .values(fetched=sa.bindparam("position"))
)


class Statements:
    def __init__(self, db: Database, groups: ResourceGroups | None = None) -> None:
        self._db = db
        self._groups = groups or ResourceGroups(db)
        self._tags_present = TablePresence(db, statement_tags)
        self._tasks_present = TablePresence(db, statement_progress)

    def add(
        self,
        session_id: int,
        code: str,
        *,
        now: float,
        kind: StatementKind = StatementKind.SQL,
        running: bool = False,
        resource_group: str | None = None,
        tags: Mapping[str, str] | None = None,
        conn: Connection | None = None,
    ) -> StatementRecord:
        """Queue a statement in its session, numbered after the session's previous ones.

        ``running``: it runs elsewhere than in an engine's statement loop (a Spark Connect
        operation the door forwards): recorded as started, no engine told; with a
        ``resource_group`` that has no room, queued until admitted (straight to running).

        The session must be active, and a batch session takes only its first statement; both
        are checked in the same UPDATE that numbers the statement, so a session ending
        concurrently cannot gain a statement that nothing would ever run. With ``conn``, inside
        the caller's transaction.

        ``resource_group``: the group it was placed in; it waits there (``queued``) while the
        group is full (``store.resource_groups``; raises ``QueueFull`` when its queue is).
        ``tags``: kept with it (``statement_tags``), on a schema that has them.
        """
        with self._db.within(conn) as c:
            bumped = c.execute(_BUMP, {"session_id": session_id, "now": now}).first()
            count = None if bumped is None else bumped.statement_count
            if count is None:
                session = (
                    c.execute(
                        sa.select(sessions.c.state, sessions.c.kind).where(
                            sessions.c.id == session_id
                        )
                    )
                    .mappings()
                    .first()
                )
                if session is None:
                    raise SessionNotFound(session_id)
                if session["state"] in {s.value for s in ACTIVE_SESSION_STATES}:
                    raise BatchSessionUsed(session_id)
                raise SessionNotActive(session_id, session["state"])
            state = StatementState.WAITING
            if resource_group is not None:
                resource_group, state = self._groups.enter(
                    c, resource_group, session_id, first=count == 1
                )
            if running and state is StatementState.WAITING:
                state = StatementState.RUNNING
            values = {
                "session_id": session_id,
                "seq": count - 1,
                "kind": kind.value,
                "code": code,
                "state": state.value,
                "progress": 0.0,
                "version": 1,
                "created_at": now,
                "started_at": now if state is StatementState.RUNNING else None,
                "updated_at": now,
            }
            row = c.execute(_INSERT, values).mappings().one()
            if tags and self._tags_present():
                c.execute(
                    statement_tags.insert(),
                    [{"statement_id": row["id"], "key": k, "value": v} for k, v in tags.items()],
                )
            if resource_group is not None:
                owner = "" if bumped is None else (bumped.owner or "")
                self._groups.place(c, row["id"], session_id, owner, resource_group, state, now=now)
            engine_id = None if bumped is None else bumped.engine_id
            if state is StatementState.WAITING and engine_id is not None:
                # Its engine runs it as soon as it looks: tell it to look now.
                self._db.hint(c, engine_channel(engine_id), f"{NEW_STATEMENT}{row['id']}")
        return StatementRecord.from_row(row)

    def tags_of(self, statement_id: int) -> dict[str, str]:
        """A statement's tags (none on a schema without them)."""
        return self.tags_of_many([statement_id])[statement_id]

    def tags_of_many(self, statement_ids: Iterable[int]) -> dict[int, dict[str, str]]:
        """:meth:`tags_of` for a page of statements, in one read (each id present, maybe
        with no tags)."""
        wanted = list(statement_ids)
        found: dict[int, dict[str, str]] = {i: {} for i in wanted}
        if not wanted or not self._tags_present():
            return found
        query = sa.select(
            statement_tags.c.statement_id, statement_tags.c.key, statement_tags.c.value
        ).where(statement_tags.c.statement_id.in_(wanted))
        with self._db.read() as conn:
            for row in conn.execute(query):
                found[row.statement_id][row.key] = row.value
        return found

    def find(self, statement_id: int) -> StatementRecord | None:
        with self._db.read() as conn:
            row = conn.execute(_BY_ID, {"statement_id": statement_id}).mappings().first()
        return None if row is None else StatementRecord.from_row(row)

    def find_with_session(self, statement_id: int) -> tuple[StatementRecord, SessionRecord] | None:
        """A statement and its session in one read: what every access check needs."""
        labelled = [column.label(f"session__{column.name}") for column in sessions.c]
        query = (
            sa.select(statements, *labelled)
            .join(sessions, statements.c.session_id == sessions.c.id)
            .where(statements.c.id == statement_id)
        )
        with self._db.read() as conn:
            row = conn.execute(query).mappings().first()
        if row is None:
            return None
        session = SessionRecord.from_row({c.name: row[f"session__{c.name}"] for c in sessions.c})
        statement = StatementRecord.from_row(
            {**{c.name: row[c.name] for c in statements.c}, "owner": session.owner}
        )
        return statement, session

    def get(self, statement_id: int) -> StatementRecord:
        record = self.find(statement_id)
        if record is None:
            raise QueryNotFound(statement_id)
        return record

    def find_by_seq(self, session_id: int, seq: int) -> StatementRecord | None:
        query = sa.select(statements).where(
            statements.c.session_id == session_id, statements.c.seq == seq
        )
        with self._db.read() as conn:
            row = conn.execute(query).mappings().first()
        return None if row is None else StatementRecord.from_row(row)

    def first_of_sessions(self, session_ids: Iterable[int]) -> dict[int, StatementRecord]:
        """Each given session's first statement (a batch's only one), by session id."""
        ids = list(session_ids)
        if not ids:
            return {}
        query = (
            sa.select(statements)
            .where(statements.c.session_id.in_(ids))
            .where(statements.c.seq == 0)
        )
        with self._db.read() as conn:
            rows = conn.execute(query).mappings().all()
        return {row["session_id"]: StatementRecord.from_row(row) for row in rows}

    def list_page(
        self,
        *,
        session_id: int | None = None,
        states: Iterable[StatementState] | None = None,
        owner: str | None = None,
        creator: str | None = None,
        search: str | None = None,
        newest_first: bool = False,
        window: Window = FIRST_PAGE,
    ) -> Page[StatementRecord]:
        """Statements by id (``newest_first``: descending), each with its session's owner;
        ``search``: only those whose text holds it, in any case (a scan of the matching rows,
        which the owner's scope keeps to one user's).

        ``window``: which page; its ``after`` pages by keyset, the statements past that id in
        the list's order (the page's ``next_after`` is the one to pass for the following page),
        reading only the page whatever the list's length, where ``offset`` reads every row it
        skips; ``count=False`` leaves ``total`` None, sparing a count of every matching row.
        """
        # A statement is its session's: seen as the session is (``owner``/``creator``, see
        # ``in_scope``). The planner picks the order of the join: the owner's sessions first
        # (ix_sessions_owner_id) when they are few, else the statements in id order, each with
        # its session.
        scoped = in_scope(owner, creator)
        where = list(scoped)
        if session_id is not None:
            where.append(statements.c.session_id == session_id)
        if states is not None:
            where.append(statements.c.state.in_([s.value for s in states]))
        if search:
            where.append(statements.c.code.icontains(search, autoescape=True))
        query = sa.select(statements, sessions.c.owner).select_from(_WITH_SESSION).where(*where)
        counted = _WITH_SESSION if scoped else statements
        return read_page(
            self._db,
            query,
            sa.select(sa.func.count()).select_from(counted).where(*where),
            make=StatementRecord.from_row,
            by=statements.c.id,
            descending=newest_first,
            window=window,
        )

    def next_waiting(self, session_ids: Iterable[int]) -> dict[int, StatementRecord]:
        """For each given session, its oldest waiting statement (sessions run in order)."""
        ids = list(session_ids)
        if not ids:
            return {}
        first = (
            sa.select(statements.c.session_id, sa.func.min(statements.c.id).label("id"))
            .where(statements.c.session_id.in_(ids))
            .where(statements.c.state == StatementState.WAITING.value)
            .group_by(statements.c.session_id)
            .subquery()
        )
        query = sa.select(statements).join(first, statements.c.id == first.c.id)
        with self._db.read() as conn:
            rows = conn.execute(query).mappings().all()
        return {row["session_id"]: StatementRecord.from_row(row) for row in rows}

    def states(self, statement_ids: Iterable[int]) -> dict[int, StatementState]:
        """The current state of each statement that exists (one cheap read for watchers)."""
        ids = list(statement_ids)
        if not ids:
            return {}
        query = sa.select(statements.c.id, statements.c.state).where(statements.c.id.in_(ids))
        with self._db.read() as conn:
            return {row.id: StatementState(row.state) for row in conn.execute(query)}

    def final(self, statement_ids: Iterable[int]) -> dict[int, StatementRecord]:
        """Those of the given statements that are final, each with its session's owner: what
        a long poll answers (one read for every request a node holds)."""
        ids = list(statement_ids)
        if not ids:
            return {}
        query = (
            sa.select(statements, sessions.c.owner)
            .select_from(_WITH_SESSION)
            .where(statements.c.id.in_(ids))
            .where(statements.c.state.in_([s.value for s in TERMINAL_STATEMENT_STATES]))
        )
        with self._db.read() as conn:
            rows = conn.execute(query).mappings().all()
        return {row["id"]: StatementRecord.from_row(row) for row in rows}

    def set_progress(
        self, statement_id: int, progress: float, *, now: float, tasks: TaskCount | None = None
    ) -> None:
        """A running statement's progress; with ``tasks``, the Spark tasks it is the ratio
        of (kept on a schema that has them; one writer per statement: its engine)."""
        stmt = (
            statements.update()
            .where(statements.c.id == statement_id)
            .where(statements.c.state == StatementState.RUNNING.value)
            .values(progress=max(0.0, min(1.0, progress)), updated_at=now)
        )
        with self._db.begin() as conn:
            running = conn.execute(stmt).rowcount == 1
            if not running or tasks is None or not self._tasks_present():
                return
            values = {"tasks_done": tasks.done, "tasks_total": tasks.total, "at": now}
            kept = conn.execute(
                statement_progress.update()
                .where(statement_progress.c.statement_id == statement_id)
                .values(**values)
            )
            if kept.rowcount == 0:
                added = statement_progress.insert().values(statement_id=statement_id, **values)
                conn.execute(added)

    def tasks_of_many(self, statement_ids: Iterable[int]) -> dict[int, TaskCount]:
        """The task counts last recorded for those of the statements that have any, in one
        read (none on a schema without them)."""
        wanted = list(statement_ids)
        if not wanted or not self._tasks_present():
            return {}
        query = sa.select(
            statement_progress.c.statement_id,
            statement_progress.c.tasks_done,
            statement_progress.c.tasks_total,
        ).where(statement_progress.c.statement_id.in_(wanted))
        with self._db.read() as conn:
            return {
                row.statement_id: TaskCount(row.tasks_done, row.tasks_total)
                for row in conn.execute(query)
            }

    def merge_output(
        self, statement_id: int, values: StatementOutput, *, conn: Connection | None = None
    ) -> None:
        """Add keys to a statement's output record (not a state change); with ``conn``, in
        the caller's transaction."""
        with self._db.within(conn) as c:
            current = c.execute(
                sa.select(statements.c.output).where(statements.c.id == statement_id)
            ).scalar()
            merged = {**(current or {}), **values}
            c.execute(
                statements.update().where(statements.c.id == statement_id).values(output=merged)
            )

    def move_cursor(self, statement_id: int, expected: int, position: int) -> bool:
        """Move a HiveServer2 fetch cursor from ``expected`` to ``position``; False if another
        fetch moved it first (the caller reads again)."""
        values = {"statement_id": statement_id, "expected": expected, "position": position}
        with self._db.begin() as conn:
            return conn.execute(_MOVE_CURSOR, values).rowcount == 1

    def count_unfinished(self, owner: str) -> int:
        """Waiting and running statements in one owner's sessions (for the per-user limit)."""
        with self._db.read() as conn:
            return int(conn.execute(_UNFINISHED_OF, {"owner": owner}).scalar_one())
