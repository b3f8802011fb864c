"""Result reuse in the store: table versions, session contexts, kept results and reused
queries (tables in ``schema_reuse``).

    store.reuse.bump(["spark_catalog.sales.orders"], now=now, conn=conn)   # a write ended
    store.reuse.versions(["spark_catalog.sales.orders"])                  # {name: 3}
    store.reuse.candidates(key, now=now)                                   # newest first

A lookup that finds nothing writes nothing: it is two reads (the context, the candidates), on
every query that could be reused.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

import sqlalchemy as sa
from sqlalchemy.dialects import postgresql, sqlite
from sqlalchemy.engine import Connection

from sparkgate.states import EngineState
from sparkgate.store.database import Database
from sparkgate.store.presence import TablePresence
from sparkgate.store.schema import (
    engines,
    reusable_results,
    reuse_contexts,
    statement_reuse,
    table_versions,
)

# Engines whose fresh sessions a one-off query may be placed on.
_LIVE_ENGINES = (EngineState.STARTING.value, EngineState.RUNNING.value)


@dataclass(frozen=True)
class TableState:
    """A table or view as a kept result read it: its version in the store and, for a table
    with files, where they are and what they were (``tables.files.fingerprint``)."""

    name: str
    version: int
    location: str | None = None
    files: str | None = None

    def to_json(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "version": self.version,
            "location": self.location,
            "files": self.files,
        }

    @classmethod
    def of(cls, data: dict[str, Any]) -> TableState:
        return cls(str(data["name"]), int(data["version"]), data.get("location"), data.get("files"))


@dataclass(frozen=True)
class PolicyUse:
    """An access decision a kept result's reads took: about ``name``, for ``reader`` (None: the
    query's own user; else a view's owner, whose rights a view reads with), as a digest."""

    name: str
    reader: str | None
    decision: str

    def to_json(self) -> dict[str, Any]:
        return {"name": self.name, "reader": self.reader, "decision": self.decision}

    @classmethod
    def of(cls, data: dict[str, Any]) -> PolicyUse:
        return cls(str(data["name"]), data.get("reader"), str(data["decision"]))


@dataclass(frozen=True)
class KeptResult:
    """A succeeded query's result kept for reuse under ``reuse_key``."""

    statement_id: int
    reuse_key: str
    owner: str | None
    tables: tuple[TableState, ...]
    policy: tuple[PolicyUse, ...]
    result_bytes: int
    created_at: float
    expires_at: float
    id: int | None = None


@dataclass(frozen=True)
class Reused:
    """What a reused query reused, and what computing it had cost (what reuse saved)."""

    reused_from: int
    saved_cpu_seconds: float
    saved_run_seconds: float


@dataclass(frozen=True)
class SessionContext:
    after_seq: int  # the context holds after this statement of the session (-1: before any)
    context: str | None  # None: nothing in the session may be reused


def _upsert(
    conn: Connection, table: sa.Table, values: dict[str, Any], key: str, **update: Any
) -> None:
    """INSERT ... ON CONFLICT (key) DO UPDATE: one statement, safe when two writers race."""
    if conn.dialect.name == "postgresql":
        pg = postgresql.insert(table).values(**values)
        conn.execute(pg.on_conflict_do_update(index_elements=[key], set_=update))
    else:
        lite = sqlite.insert(table).values(**values)
        conn.execute(lite.on_conflict_do_update(index_elements=[key], set_=update))


class ResultReuse:
    def __init__(self, db: Database) -> None:
        self._db = db
        self._present = TablePresence(db, reusable_results)

    def available(self) -> bool:
        """Whether the store's schema has the tables (``presence``)."""
        return self._present()

    # -- table versions --------------------------------------------------------------------

    def bump(self, names: Iterable[str], *, now: float, conn: Connection | None = None) -> None:
        """A write through sparkgate changed these tables (full names, any case)."""
        wanted = sorted({n.lower() for n in names if 0 < len(n) <= 767})
        if not wanted:
            return
        with self._db.within(conn) as c:
            for name in wanted:
                _upsert(
                    c,
                    table_versions,
                    {"table_name": name, "version": 1, "changed_at": now},
                    "table_name",
                    version=table_versions.c.version + 1,
                    changed_at=now,
                )

    def versions(
        self, names: Iterable[str], *, conn: Connection | None = None
    ) -> dict[str, tuple[int, float]]:
        """Each table's version and when it last changed; (0, 0.0) for one never written
        through sparkgate."""
        wanted = sorted({n.lower() for n in names})
        found: dict[str, tuple[int, float]] = dict.fromkeys(wanted, (0, 0.0))
        if not wanted:
            return found
        query = sa.select(
            table_versions.c.table_name, table_versions.c.version, table_versions.c.changed_at
        ).where(table_versions.c.table_name.in_(wanted))
        if conn is not None:
            rows = conn.execute(query).all()
        else:
            with self._db.read() as c:
                rows = c.execute(query).all()
        for row in rows:
            found[row.table_name] = (row.version, row.changed_at)
        return found

    # -- contexts ---------------------------------------------------------------------------

    def set_session_context(
        self,
        session_id: int,
        after_seq: int,
        context: str | None,
        *,
        now: float,
        conn: Connection | None = None,
    ) -> None:
        with self._db.within(conn) as c:
            _upsert(
                c,
                reuse_contexts,
                {"holder": f"s{session_id}", "after_seq": after_seq, "context": context, "at": now},
                "holder",
                after_seq=after_seq,
                context=context,
                at=now,
            )

    def set_engine_context(
        self, engine_id: int, context: str | None, *, now: float, conn: Connection | None = None
    ) -> None:
        """What a fresh session of the engine starts with (the context of a one-off query)."""
        with self._db.within(conn) as c:
            _upsert(
                c,
                reuse_contexts,
                {
                    "holder": f"e{engine_id}",
                    "engine_id": engine_id,
                    "after_seq": -1,
                    "context": context,
                    "at": now,
                },
                "holder",
                context=context,
                at=now,
            )

    def session_context(self, session_id: int) -> SessionContext | None:
        query = sa.select(reuse_contexts.c.after_seq, reuse_contexts.c.context).where(
            reuse_contexts.c.holder == f"s{session_id}"
        )
        with self._db.read() as conn:
            row = conn.execute(query).first()
        return None if row is None else SessionContext(row.after_seq, row.context)

    def fresh_contexts(self) -> set[str | None]:
        """What a fresh session starts with on each live engine (one value when they agree)."""
        query = (
            sa.select(reuse_contexts.c.context)
            .select_from(reuse_contexts.join(engines, engines.c.id == reuse_contexts.c.engine_id))
            .where(engines.c.state.in_(_LIVE_ENGINES))
            .distinct()
        )
        with self._db.read() as conn:
            return set(conn.execute(query).scalars())

    def advance_session(
        self, session_id: int, from_seq: int, to_seq: int, *, conn: Connection
    ) -> bool:
        """A statement that changed nothing in its session (a reused query) moves the session's
        context past it; False if the context moved meanwhile."""
        moved = conn.execute(
            reuse_contexts.update()
            .where(reuse_contexts.c.holder == f"s{session_id}")
            .where(reuse_contexts.c.after_seq == from_seq)
            .values(after_seq=to_seq)
        )
        return moved.rowcount == 1

    def forget_session(self, session_id: int, *, conn: Connection | None = None) -> None:
        with self._db.within(conn) as c:
            c.execute(reuse_contexts.delete().where(reuse_contexts.c.holder == f"s{session_id}"))

    # -- kept results -----------------------------------------------------------------------

    def keep(self, kept: KeptResult, *, conn: Connection | None = None) -> None:
        with self._db.within(conn) as c:
            c.execute(
                reusable_results.insert().values(
                    reuse_key=kept.reuse_key,
                    statement_id=kept.statement_id,
                    owner=kept.owner,
                    tables=[t.to_json() for t in kept.tables],
                    policy=[p.to_json() for p in kept.policy],
                    result_bytes=kept.result_bytes,
                    created_at=kept.created_at,
                    expires_at=kept.expires_at,
                )
            )

    def candidates(self, reuse_key: str, *, now: float, limit: int = 3) -> list[KeptResult]:
        """The newest results kept under the key that have not expired."""
        query = (
            sa.select(reusable_results)
            .where(reusable_results.c.reuse_key == reuse_key)
            .where(reusable_results.c.expires_at > now)
            .order_by(reusable_results.c.id.desc())
            .limit(limit)
        )
        with self._db.read() as conn:
            rows = conn.execute(query).all()
        return [
            KeptResult(
                statement_id=row.statement_id,
                reuse_key=row.reuse_key,
                owner=row.owner,
                tables=tuple(TableState.of(t) for t in row.tables),
                policy=tuple(PolicyUse.of(p) for p in row.policy),
                result_bytes=row.result_bytes,
                created_at=row.created_at,
                expires_at=row.expires_at,
                id=row.id,
            )
            for row in rows
        ]

    def forget(self, ids: Sequence[int]) -> None:
        """Kept results found stale (a table changed, the files are gone): never again."""
        if ids:
            with self._db.begin() as conn:
                conn.execute(reusable_results.delete().where(reusable_results.c.id.in_(list(ids))))

    def expire(self, *, now: float) -> int:
        """Forget kept results past their time to live; how many."""
        with self._db.begin() as conn:
            gone = conn.execute(
                reusable_results.delete().where(reusable_results.c.expires_at <= now)
            )
        return int(gone.rowcount or 0)

    # -- reused queries ---------------------------------------------------------------------

    def record_reused(self, statement_id: int, reused: Reused, *, conn: Connection) -> None:
        conn.execute(
            statement_reuse.insert().values(
                statement_id=statement_id,
                reused_from=reused.reused_from,
                saved_cpu_seconds=reused.saved_cpu_seconds,
                saved_run_seconds=reused.saved_run_seconds,
            )
        )

    def reused_of_many(self, statement_ids: Iterable[int]) -> dict[int, Reused]:
        wanted = list(statement_ids)
        if not wanted or not self.available():
            return {}
        query = sa.select(statement_reuse).where(statement_reuse.c.statement_id.in_(wanted))
        with self._db.read() as conn:
            return {
                row.statement_id: Reused(
                    row.reused_from, row.saved_cpu_seconds, row.saved_run_seconds
                )
                for row in conn.execute(query)
            }
