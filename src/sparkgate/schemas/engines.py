"""Engines: the Spark applications sparkgate started, and how they stand."""

from __future__ import annotations

from pydantic import Field

from sparkgate.schemas.common import Body, Timestamp
from sparkgate.schemas.errors import RecordedError
from sparkgate.states import EngineKind, EngineState


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


class EngineList(Body):
    engines: list[Engine]
