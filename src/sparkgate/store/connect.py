"""The Spark Connect door's two maps: a client's session id to the sparkgate session (and so
the engine) that holds it, and a Connect operation to the query that records it. Any node
reads them, so a client that changes node finds its session and its running operations."""

from __future__ import annotations

import sqlalchemy as sa
from sqlalchemy.engine import Connection

from sparkgate.store.database import Database
from sparkgate.store.schema import connect_operations, connect_sessions


class ConnectMaps:
    def __init__(self, db: Database) -> None:
        self._db = db

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

    def client_session_of(self, session_id: int) -> tuple[str, str] | None:
        """(owner, client session id) of a Connect session, or None for other sessions."""
        query = sa.select(connect_sessions.c.owner, connect_sessions.c.client_session).where(
            connect_sessions.c.session_id == session_id
        )
        with self._db.read() as conn:
            row = conn.execute(query).first()
        return None if row is None else (row.owner, row.client_session)

    def add_operation(
        self, statement_id: int, session_id: int, operation_id: str, *, conn: Connection
    ) -> None:
        conn.execute(
            connect_operations.insert().values(
                statement_id=statement_id, session_id=session_id, operation_id=operation_id
            )
        )

    def statement_of(self, session_id: int, operation_id: str) -> int | None:
        query = sa.select(connect_operations.c.statement_id).where(
            connect_operations.c.session_id == session_id,
            connect_operations.c.operation_id == operation_id,
        )
        with self._db.read() as conn:
            return conn.execute(query).scalar()

    def operation_of(self, statement_id: int) -> str | None:
        query = sa.select(connect_operations.c.operation_id).where(
            connect_operations.c.statement_id == statement_id
        )
        with self._db.read() as conn:
            return conn.execute(query).scalar()
