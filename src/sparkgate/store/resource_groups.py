"""The queue: statements waiting for a turn in their resource group, and who goes next.

A statement placed in a group (its ``group_places`` row names a dotted path such as
``analysts.bob``) is *admitted* (``waiting``, then ``running``) when every group on its path has
fewer admitted statements than its ``hard_concurrency_limit``; else it is ``queued``, unless its
group already holds ``max_queued`` queued statements (``QueueFull``, 429). When an admitted
statement ends, the transaction that ends it admits the next (``Transitions`` calls ``next``), so
admission is pushed by the end, on whichever node or engine ends it: nothing polls, and a queued
statement needs no node to stay alive for it.

Who goes next, from the root down (Trino's rules): among subgroups with queued work and room,
``fair`` takes the one with the fewest admitted statements, ``weighted`` the fewest per unit of
``scheduling_weight``, the oldest queued statement breaking ties; in the group a statement was
placed in, users take turns: the user with the fewest admitted statements there goes first, with
their oldest queued statement. So alice's first query does not wait behind bob's tenth.

Admissions of one tree are serialised by a write to its root group's row (PostgreSQL holds the
row lock to the commit; SQLite's write transactions are serial already). Admission reads
``group_counts``: per group and user, how many statements are admitted and queued and the
oldest queued, kept by the same transactions that move places. Its work grows with the users
in a tree, not with the length of its queue.

A session's statements run in order: a statement of a session that has one queued is queued
behind it, in its group (``enter``).

A stream job's turn lasts as long as its streams: the place of the last statement of a streaming
session (the script's last step) is over when the session ends, not when the statement does
(its queries go on running in the session after it succeeded). So a running stream job counts
once against its group; its other steps hold turns as any statement does, while they run.
"""

from __future__ import annotations

import re
from collections import defaultdict
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass
from functools import cache
from typing import Any, NamedTuple

import sqlalchemy as sa
from sqlalchemy.engine import Connection

from sparkgate.errors import QueueFull
from sparkgate.states import ACTIVE_SESSION_STATES, SessionKind, StatementState
from sparkgate.store.database import Database
from sparkgate.store.presence import TablePresence
from sparkgate.store.schema import (
    group_counts,
    group_places,
    resource_groups,
    sessions,
    statements,
)

# A place's states: queued (the statement is ``queued``), admitted (it is waiting, running or
# being cancelled: it holds a turn), over (it ended).
_QUEUED, _ADMITTED, _OVER = "queued", "admitted", "over"
_ACTIVE = [_QUEUED, _ADMITTED]


@dataclass(frozen=True)
class GroupSpec:
    """One group of the configuration, as the access file declares it."""

    name: str  # dotted from its root, templates unexpanded: ``analysts.${USER}``
    hard_concurrency_limit: int
    max_queued: int
    scheduling_policy: str = "fair"  # or "weighted"
    scheduling_weight: int = 1


@dataclass(frozen=True)
class GroupPlace:
    """Where a statement waits or ran: its group and, while queued, its position (1: next)."""

    resource_group: str
    queue_position: int | None = None


class Turn(NamedTuple):
    """A queued statement whose turn it is, in its group, of its owner."""

    statement_id: int
    group: str
    owner: str


class _Count(NamedTuple):
    group: str
    owner: str
    state: str
    number: int
    oldest: int  # the smallest statement id


class _Tree:
    """One root group's admitted and queued statements, counted by group, owner and state."""

    def __init__(self, specs: Mapping[str, GroupSpec], counts: Iterable[_Count]) -> None:
        self.specs = specs
        self.counts = list(counts)

    def admitted(self, path: str, owner: str | None = None) -> int:
        return sum(
            c.number
            for c in self.counts
            if c.state == _ADMITTED
            and _within(c.group, path)
            and (owner is None or c.owner == owner)
        )

    def oldest_queued(self, path: str) -> int | None:
        found = [c.oldest for c in self.counts if c.state == _QUEUED and _within(c.group, path)]
        return min(found) if found else None

    def queued(self, path: str) -> int:
        return sum(c.number for c in self.counts if c.state == _QUEUED and c.group == path)

    def has_room(self, path: str) -> bool:
        """Whether every group from the root to ``path`` admits one more."""
        parts = path.split(".")
        for depth in range(1, len(parts) + 1):
            prefix = ".".join(parts[:depth])
            spec = spec_of(self.specs, prefix)
            if spec is not None and self.admitted(prefix) >= spec.hard_concurrency_limit:
                return False
        return True

    def choose(self, path: str) -> tuple[str, str] | None:
        """The (leaf group, owner) whose turn it is under ``path``, if any may go."""
        spec = spec_of(self.specs, path)
        if spec is not None and self.admitted(path) >= spec.hard_concurrency_limit:
            return None
        if any(c.state == _QUEUED and c.group == path for c in self.counts):
            return self._owner_in(path)  # a group that takes queries has no subgroups
        below = len(path) + 1
        children = {
            f"{path}.{c.group[below:].split('.')[0]}"
            for c in self.counts
            if c.state == _QUEUED and c.group.startswith(f"{path}.")
        }
        weighted = spec is not None and spec.scheduling_policy == "weighted"

        def order(child: str) -> tuple[float, int]:
            weight = 1
            if weighted:
                child_spec = spec_of(self.specs, child)
                weight = child_spec.scheduling_weight if child_spec is not None else 1
            return (self.admitted(child) / weight, self.oldest_queued(child) or 0)

        for child in sorted(children, key=order):
            chosen = self.choose(child)
            if chosen is not None:
                return chosen
        return None

    def _owner_in(self, leaf: str) -> tuple[str, str]:
        queued = [c for c in self.counts if c.state == _QUEUED and c.group == leaf]
        first = min(queued, key=lambda c: (self.admitted(leaf, c.owner), c.oldest))
        return leaf, first.owner


def _within(group: str, path: str) -> bool:
    return group == path or group.startswith(f"{path}.")


def root_of(group: str) -> str:
    return group.split(".", 1)[0]


# ``${name}`` as re.escape writes it
_ESCAPED_VARIABLE = re.compile(r"\\\$\\\{\w+\\\}")


@cache
def _template(name: str) -> re.Pattern[str]:
    """A group name with ``${...}`` in it, as a pattern of the names it expands to."""
    return re.compile(_ESCAPED_VARIABLE.sub(".+", re.escape(name)))


def spec_of(specs: Mapping[str, GroupSpec], path: str) -> GroupSpec | None:
    """The configuration of a concrete group (``analysts.bob`` finds ``analysts.${USER}``);
    None for a group the configuration no longer has (nothing limits it then)."""
    declared = ""
    for part in path.split("."):
        prefix = f"{declared}." if declared else ""
        if f"{prefix}{part}" in specs:
            declared = f"{prefix}{part}"
            continue
        templated = [
            name
            for name in specs
            if name.startswith(prefix)
            and "." not in name[len(prefix) :]
            and "${" in name
            and _template(name[len(prefix) :]).fullmatch(part)
        ]
        if not templated:
            return None
        declared = templated[0]
    return specs.get(declared)


_SPECS = sa.select(resource_groups)
_LOCK = (
    resource_groups.update()
    .where(resource_groups.c.name == sa.bindparam("root"))
    .values(admissions=resource_groups.c.admissions + 1)
)
_QUEUED_IN_SESSION = (
    sa.select(group_places.c.resource_group)
    .where(group_places.c.session_id == sa.bindparam("sess"))
    .where(group_places.c.state == _QUEUED)
    .limit(1)
)
_PLACE = group_places.insert()
# An end: its place is over; the same statement says which group and count it gives back
# (one statement, which finds nothing for a statement placed in no group).
# The place of the last statement of a stream job's session that still lives: held.
_STREAMING = sa.and_(
    sa.exists()
    .where(sessions.c.id == group_places.c.session_id)
    .where(sessions.c.kind == SessionKind.STREAMING.value)
    .where(sessions.c.state.in_([s.value for s in ACTIVE_SESSION_STATES])),
    ~sa.exists()
    .where(statements.c.session_id == group_places.c.session_id)
    .where(statements.c.id > group_places.c.statement_id),
)
_END = (
    group_places.update()
    .where(group_places.c.statement_id == sa.bindparam("sid"))
    .where(group_places.c.state.in_(_ACTIVE))
    .where(~_STREAMING)  # a running stream job keeps its turn (see the module's doc)
    .values(state=_OVER)
    .returning(group_places.c.resource_group, group_places.c.owner, group_places.c.held)
)
_END_SESSION = (
    group_places.update()
    .where(group_places.c.session_id == sa.bindparam("sess"))
    .where(group_places.c.state.in_(_ACTIVE))
    .values(state=_OVER)
    .returning(group_places.c.resource_group, group_places.c.owner, group_places.c.held)
)
_ADMIT = (
    group_places.update()
    .where(group_places.c.statement_id == sa.bindparam("sid"))
    .values(state=_ADMITTED, held=True)
)
# A user's counts in a group moved by (da, dq), their oldest queued statement read again from
# the index on places (the place itself has moved already, in the same transaction).
_OLDEST = (
    sa.select(sa.func.min(group_places.c.statement_id))
    .where(group_places.c.state == _QUEUED)
    .where(group_places.c.resource_group == sa.bindparam("g"))
    .where(group_places.c.owner == sa.bindparam("o"))
    .scalar_subquery()
)
_BUMP = (
    group_counts.update()
    .where(group_counts.c.resource_group == sa.bindparam("g"))
    .where(group_counts.c.owner == sa.bindparam("o"))
    .values(
        admitted=group_counts.c.admitted + sa.bindparam("da"),
        queued=group_counts.c.queued + sa.bindparam("dq"),
        oldest_queued=_OLDEST,
    )
)
_FIRST = group_counts.insert()


def _counts_query() -> sa.Select[Any]:
    group = group_counts.c.resource_group
    # The root's subgroups: names from "root." up to "root/" ("/" sorts right after "."),
    # a range the primary key answers.
    under = sa.and_(group > sa.bindparam("under"), group < sa.bindparam("past"))
    return (
        sa.select(
            group,
            group_counts.c.owner,
            group_counts.c.admitted,
            group_counts.c.queued,
            group_counts.c.oldest_queued,
        )
        .where(sa.or_(group == sa.bindparam("root"), under))
        .where(sa.or_(group_counts.c.admitted > 0, group_counts.c.queued > 0))
    )


_COUNTS = _counts_query()


def _counts(rows: Iterable[Any]) -> Iterator[_Count]:
    for group, owner, admitted, queued, oldest in rows:
        if admitted:
            yield _Count(group, owner, _ADMITTED, admitted, 0)
        if queued:
            yield _Count(group, owner, _QUEUED, queued, oldest or 0)


class ResourceGroups:
    """The groups' configuration in the store, and the queue's decisions on it."""

    def __init__(self, db: Database) -> None:
        self._db = db
        # A node or engine of a release pinned to the schema before has no places to keep.
        self.present = TablePresence(db, group_places)

    def specs(self, conn: Connection) -> dict[str, GroupSpec]:
        return {
            row.name: GroupSpec(
                row.name,
                row.hard_concurrency_limit,
                row.max_queued,
                row.scheduling_policy,
                row.scheduling_weight,
            )
            for row in conn.execute(_SPECS)
        }

    def configured(self) -> dict[str, GroupSpec]:
        """The groups in force (none on a schema before them)."""
        if not self.present():
            return {}
        with self._db.read() as conn:
            return self.specs(conn)

    def sync(self, conn: Connection, specs: Iterable[GroupSpec]) -> bool:
        """Make the stored configuration ``specs``; whether it changed."""
        wanted = {spec.name: spec for spec in specs}
        if self.specs(conn) == wanted:
            return False
        conn.execute(resource_groups.delete())
        if wanted:
            conn.execute(
                resource_groups.insert(),
                [
                    {
                        "name": s.name,
                        "hard_concurrency_limit": s.hard_concurrency_limit,
                        "max_queued": s.max_queued,
                        "scheduling_policy": s.scheduling_policy,
                        "scheduling_weight": s.scheduling_weight,
                        "admissions": 0,
                    }
                    for s in wanted.values()
                ],
            )
        return True

    def tree(self, conn: Connection, root: str, *, lock: bool = True) -> _Tree:
        if lock:
            conn.execute(_LOCK, {"root": root})
        rows = conn.execute(_COUNTS, {"root": root, "under": f"{root}.", "past": f"{root}/"})
        return _Tree(self.specs(conn), _counts(rows))

    def enter(
        self, conn: Connection, group: str, session_id: int, *, first: bool = False
    ) -> tuple[str, StatementState]:
        """Where a new statement of ``session_id`` placed in ``group`` goes: the group (that of
        a statement of its session queued before it, if any: none for its ``first``) and its
        first state, queued when its group has no room. Raises ``QueueFull``."""
        ahead = None if first else conn.execute(_QUEUED_IN_SESSION, {"sess": session_id}).scalar()
        if ahead is not None:
            group = ahead
        tree = self.tree(conn, root_of(group))
        if ahead is None and tree.has_room(group):
            return group, StatementState.WAITING
        spec = spec_of(tree.specs, group)
        if spec is not None and tree.queued(group) >= spec.max_queued:
            raise QueueFull(group, spec.max_queued)
        return group, StatementState.QUEUED

    def place(
        self,
        conn: Connection,
        statement_id: int,
        session_id: int,
        owner: str,
        group: str,
        state: StatementState,
        *,
        now: float,
    ) -> None:
        """Record the place ``enter`` chose, in the statement's own transaction."""
        queued = state is StatementState.QUEUED
        conn.execute(
            _PLACE,
            {
                "statement_id": statement_id,
                "session_id": session_id,
                "owner": owner,
                "resource_group": group,
                "state": _QUEUED if queued else _ADMITTED,
                "held": not queued,
                "created_at": now,
            },
        )
        self._count(conn, group, owner, 0 if queued else 1, 1 if queued else 0)

    def _count(self, conn: Connection, group: str, owner: str, da: int, dq: int) -> None:
        """Move a user's counts in a group (under the tree's lock, or the row's own)."""
        params = {"g": group, "o": owner, "da": da, "dq": dq}
        if conn.execute(_BUMP, params).rowcount == 0:
            oldest = conn.execute(sa.select(_OLDEST), params).scalar()
            conn.execute(
                _FIRST,
                {
                    "resource_group": group,
                    "owner": owner,
                    "admitted": max(da, 0),
                    "queued": max(dq, 0),
                    "oldest_queued": oldest,
                },
            )

    def end(self, conn: Connection, statement_ids: Iterable[int]) -> list[str]:
        """The places of statements that ended are over: the roots of the groups they held."""
        if not self.present():
            return []
        places = [conn.execute(_END, {"sid": sid}).first() for sid in statement_ids]
        return self._over(conn, [place for place in places if place is not None])

    def end_session(self, conn: Connection, session_id: int) -> list[str]:
        """A session ended: what places its statements still hold are over (a stream job's:
        see the module's doc); the roots of their groups."""
        if not self.present():
            return []
        return self._over(conn, conn.execute(_END_SESSION, {"sess": session_id}).all())

    def _over(self, conn: Connection, places: Iterable[Any]) -> list[str]:
        roots = set()
        for place in places:
            held = bool(place.held)
            self._count(conn, place.resource_group, place.owner, -held, -(not held))
            roots.add(root_of(place.resource_group))
        return sorted(roots)

    def admitted(self, conn: Connection, turn: Turn) -> None:
        """A queued statement admitted (its state moved by the caller)."""
        conn.execute(_ADMIT, {"sid": turn.statement_id})
        self._count(conn, turn.group, turn.owner, 1, -1)

    def next(self, tree: _Tree, root: str) -> Turn | None:
        """The queued statement whose turn it is in ``root``'s tree, if one may go now."""
        chosen = tree.choose(root)
        if chosen is None:
            return None
        leaf, owner = chosen
        oldest = next(
            c.oldest
            for c in tree.counts
            if c.state == _QUEUED and c.group == leaf and c.owner == owner
        )
        return Turn(oldest, leaf, owner)

    def queued_roots(self) -> list[str]:
        """The root groups with queued statements (for the safety net's round)."""
        if not self.present():
            return []
        query = sa.select(group_counts.c.resource_group).where(group_counts.c.queued > 0)
        with self._db.read() as conn:
            return sorted({root_of(str(group)) for (group,) in conn.execute(query)})

    def where(self, statement_id: int) -> GroupPlace | None:
        """A statement's group and, queued, its position: 1 goes next in its group, 2 after
        one, and so on, as the turns stand (users alternate, each in the order they
        submitted). None for a statement placed in no group."""
        return self.places_of([statement_id]).get(statement_id)

    def places_of(self, statement_ids: Iterable[int]) -> dict[int, GroupPlace]:
        """:meth:`where` for a page of statements, in one read: those placed in no group
        are absent."""
        wanted = list(statement_ids)
        if not wanted or not self.present():
            return {}
        with self._db.read() as conn:
            found = conn.execute(
                sa.select(
                    group_places.c.statement_id, group_places.c.resource_group, group_places.c.state
                ).where(group_places.c.statement_id.in_(wanted))
            ).all()
            queued_in = {row.resource_group for row in found if row.state == _QUEUED}
            rows = (
                conn.execute(
                    sa.select(
                        group_places.c.resource_group,
                        group_places.c.statement_id,
                        group_places.c.owner,
                        group_places.c.state,
                    )
                    .where(group_places.c.resource_group.in_(sorted(queued_in)))
                    .where(group_places.c.state.in_(_ACTIVE))
                    .order_by(group_places.c.statement_id)
                ).all()
                if queued_in
                else []
            )
        active: dict[str, list[Any]] = defaultdict(list)
        for row in rows:
            active[row.resource_group].append(row)
        positions: dict[int, int] = {}
        for group_rows in active.values():
            positions.update(_positions(group_rows))
        return {
            row.statement_id: GroupPlace(
                row.resource_group,
                positions.get(row.statement_id) if row.state == _QUEUED else None,
            )
            for row in found
        }


def _positions(rows: Iterable[Any]) -> dict[int, int]:
    """Each queued statement's turn in one group, from its active places in statement order:
    a user's n-th queued statement goes after the turns their admitted ones hold."""
    listed = list(rows)
    admitted: dict[str, int] = defaultdict(int)
    rank: dict[str, int] = defaultdict(int)
    for row in listed:
        if row.state == _ADMITTED:
            admitted[row.owner] += 1
    turns: list[tuple[int, int]] = []
    for row in listed:
        if row.state == _QUEUED:
            rank[row.owner] += 1
            turns.append((admitted[row.owner] + rank[row.owner], row.statement_id))
    return {statement_id: place + 1 for place, (_, statement_id) in enumerate(sorted(turns))}
