"""The Spark Connect door's two maps: a client's session id to the sparkgate session (and so
the engine) that holds it, and a Connect operation to the query that records it. Any node
reads them, so a client that changes node finds its session and its running operations."""

from __future__ import annotations

from dataclasses import dataclass, field

import sqlalchemy as sa
from sqlalchemy.engine import Connection

from sparkgate.states import StatementState
from sparkgate.store.database import Database
from sparkgate.store.hints import CONNECT_CANCELLED, engine_channel
from sparkgate.store.schema import (
    connect_operations,
    connect_sessions,
    engine_connect,
    sessions,
    statements,
)

_UNFINISHED = [StatementState.RUNNING.value, StatementState.CANCELLING.value]
# Built once, its values bound at execution (every Connect operation is one): see audit.py.
_ADD_OPERATION = connect_operations.insert()


@dataclass(frozen=True)
class Endpoint:
    """An engine's Spark Connect service: where it listens, and its secret."""

    url: str
    # Never in a repr (logs): only nodes forwarding Connect calls use it.
    secret: str = field(repr=False)


@dataclass(frozen=True)
class ConnectOperation:
    """A Connect operation: Spark's Connect service keys it by user, session and id."""

    operation_id: str
    owner: str  # the user id the engine knows the session by
    client_session: str
    engine_id: int


class ConnectMaps:
    def __init__(self, db: Database) -> None:
        self._db = db

    def set_endpoint(self, engine_id: int, url: str, secret: str) -> None:
        """An engine records its Connect service as it starts (before it says running)."""
        with self._db.begin() as conn:
            conn.execute(engine_connect.delete().where(engine_connect.c.engine_id == engine_id))
            conn.execute(
                engine_connect.insert().values(engine_id=engine_id, url=url, secret=secret)
            )

    def endpoint(self, engine_id: int) -> Endpoint | None:
        query = sa.select(engine_connect.c.url, engine_connect.c.secret).where(
            engine_connect.c.engine_id == engine_id
        )
        with self._db.read() as conn:
            row = conn.execute(query).first()
        return None if row is None else Endpoint(row.url, row.secret)

    def session_of(self, owner: str, client_session: str) -> int | None:
        query = sa.select(connect_sessions.c.session_id).where(
            connect_sessions.c.owner == owner,
            connect_sessions.c.client_session == client_session,
        )
        with self._db.read() as conn:
            return conn.execute(query).scalar()

    def bind(
        self, owner: str, client_session: str, session_id: int, *, now: float, conn: Connection
    ) -> None:
        """Record which session a client's session id is (in the caller's transaction: a
        second node binding the same id at once fails on the key, and reads the winner)."""
        conn.execute(
            connect_sessions.insert().values(
                owner=owner, client_session=client_session, session_id=session_id, created_at=now
            )
        )

    def add_operation(
        self, statement_id: int, session_id: int, operation_id: str, *, conn: Connection
    ) -> None:
        values = {
            "statement_id": statement_id,
            "session_id": session_id,
            "operation_id": operation_id,
        }
        conn.execute(_ADD_OPERATION, values)

    def statement_of(self, session_id: int, operation_id: str) -> int | None:
        query = sa.select(connect_operations.c.statement_id).where(
            connect_operations.c.session_id == session_id,
            connect_operations.c.operation_id == operation_id,
        )
        with self._db.read() as conn:
            return conn.execute(query).scalar()

    def statement_of_client(self, owner: str, client_session: str, operation_id: str) -> int | None:
        """The query of a client's operation, by the names Spark's Connect service knows."""
        query = (
            sa.select(connect_operations.c.statement_id)
            .join(
                connect_sessions,
                connect_sessions.c.session_id == connect_operations.c.session_id,
            )
            .where(
                connect_sessions.c.owner == owner,
                connect_sessions.c.client_session == client_session,
                connect_operations.c.operation_id == operation_id,
            )
        )
        with self._db.read() as conn:
            return conn.execute(query).scalar()

    def records_operation(self, statement_id: int) -> bool:
        """Whether a query records a Connect operation (whose rows went to its client)."""
        query = sa.select(connect_operations.c.statement_id).where(
            connect_operations.c.statement_id == statement_id
        )
        with self._db.read() as conn:
            return conn.execute(query).first() is not None

    def operation_of(self, statement_id: int) -> ConnectOperation | None:
        """The Connect operation a query records, as Spark's Connect service knows it (None
        for the other queries): one read."""
        query = (
            sa.select(
                connect_operations.c.operation_id,
                connect_sessions.c.owner,
                connect_sessions.c.client_session,
                sessions.c.engine_id,
            )
            .join(
                connect_sessions,
                connect_sessions.c.session_id == connect_operations.c.session_id,
            )
            .join(sessions, sessions.c.id == connect_operations.c.session_id)
            .where(connect_operations.c.statement_id == statement_id)
        )
        with self._db.read() as conn:
            row = conn.execute(query).first()
        if row is None or row.engine_id is None:
            return None
        return ConnectOperation(row.operation_id, row.owner, row.client_session, row.engine_id)

    def queued_of_session(self, session_id: int) -> dict[str, int]:
        """The session's operations still queued in their resource group, which no engine
        knows yet: operation id -> query id."""
        query = (
            sa.select(connect_operations.c.operation_id, connect_operations.c.statement_id)
            .join(statements, statements.c.id == connect_operations.c.statement_id)
            .where(connect_operations.c.session_id == session_id)
            .where(statements.c.state == StatementState.QUEUED.value)
        )
        with self._db.read() as conn:
            return {row.operation_id: row.statement_id for row in conn.execute(query)}

    def unfinished_of_engine(self, engine_id: int) -> dict[str, int]:
        """The operations whose queries still run, in sessions on this engine: operation id
        -> query id (what the engine checks against the operations its Connect service
        still holds)."""
        query = (
            sa.select(connect_operations.c.operation_id, connect_operations.c.statement_id)
            .join(statements, statements.c.id == connect_operations.c.statement_id)
            .join(sessions, sessions.c.id == statements.c.session_id)
            .where(sessions.c.engine_id == engine_id)
            .where(statements.c.state.in_(_UNFINISHED))
        )
        with self._db.read() as conn:
            return {row.operation_id: row.statement_id for row in conn.execute(query)}

    def tell_cancelled(self, engine_id: int, statement_id: int) -> None:
        """Tell an engine that a Connect operation of its was cancelled (it makes sure no
        Spark job of the operation runs on; see ``engine.process``)."""
        with self._db.begin() as conn:
            self._db.hint(conn, engine_channel(engine_id), f"{CONNECT_CANCELLED}{statement_id}")
