"""Engines: the Spark applications sparkgate started, and how they stand."""

from __future__ import annotations

from pydantic import Field

from sparkgate.schemas.common import Body, Timestamp, iso, stamp
from sparkgate.schemas.errors import RecordedError
from sparkgate.states import EngineKind, EngineState
from sparkgate.store.records import EngineRecord


class Engine(Body):
    id: int
    kind: EngineKind
    state: EngineState
    session_id: int | None
    host: str | None
    pid: int | None
    app_id: str | None
    spark_ui: str | None = Field(description="Its Spark UI through sparkgate (admins).")
    log_path: str | None
    created_at: Timestamp
    started_at: Timestamp | None
    heartbeat_at: Timestamp | None
    finished_at: Timestamp | None
    error: RecordedError | None

    @classmethod
    def of(cls, engine: EngineRecord) -> Engine:
        return cls(
            id=engine.id,
            kind=engine.kind,
            state=engine.state,
            session_id=engine.session_id,
            host=engine.host,
            pid=engine.pid,
            app_id=engine.app_id,
            # Its Spark UI through sparkgate (admins only), when the engine serves one.
            spark_ui=f"/v1/engines/{engine.id}/ui/" if engine.ui_url else None,
            log_path=engine.log_path,
            created_at=stamp(engine.created_at),
            started_at=iso(engine.started_at),
            heartbeat_at=iso(engine.heartbeat_at),
            finished_at=iso(engine.finished_at),
            error=RecordedError.of(engine.error),
        )


class EngineList(Body):
    engines: list[Engine]
