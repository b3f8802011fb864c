"""Engines: the Spark applications sparkgate started, and how they stand."""

from __future__ import annotations

from typing import TYPE_CHECKING

from pydantic import Field

from sparkgate.schemas.common import Body, OptionalTimestamp, Timestamp
from sparkgate.schemas.errors import RecordedError
from sparkgate.states import EngineKind, EngineState

if TYPE_CHECKING:  # the records its models are built from, for the type checker only
    from sparkgate.store.records import EngineRecord


_ADMINS = "Admins only: null for other users."
POD_LOG_SCHEME = "k8s://"  # an engine pod's log_path: k8s://<namespace>/<pod>


class Engine(Body):
    id: int
    kind: EngineKind
    state: EngineState
    session_id: int | None
    host: str | None = Field(description=_ADMINS)
    pid: int | None = Field(description=_ADMINS)
    app_id: str | None = Field(description="Its Spark application's id. " + _ADMINS)
    spark_ui: str | None = Field(description="Its Spark UI through sparkgate. " + _ADMINS)
    log_path: str | None = Field(description=_ADMINS)
    pod: str | None = Field(
        default=None, description="Kubernetes: its driver pod, as namespace/name. " + _ADMINS
    )
    share_level: str | None = Field(
        default=None,
        description="Whose work it runs: `user`, `group`, `connection` (one client "
        "connection's), `server` (anyone's: shared), `session` (one session's dedicated "
        "engine) or `warm` (kept ready, nobody's yet). " + _ADMINS,
    )
    runs_for: str | None = Field(
        default=None,
        description="The user or group whose engine it is (null: anyone's). " + _ADMINS,
    )
    created_at: Timestamp
    started_at: OptionalTimestamp
    heartbeat_at: OptionalTimestamp
    finished_at: OptionalTimestamp
    error: RecordedError | None

    @classmethod
    def of(
        cls, engine: EngineRecord, share_level: str | None = None, runs_for: str | None = None
    ) -> Engine:
        # Its Spark UI through sparkgate (admins only), when the engine serves one.
        ui = f"/v1/engines/{engine.id}/ui/" if engine.ui_url else None
        where = engine.log_path or ""
        pod = where.removeprefix(POD_LOG_SCHEME) if where.startswith(POD_LOG_SCHEME) else None
        return cls.from_record(
            engine,
            spark_ui=ui,
            pod=pod,
            share_level=share_level,
            runs_for=runs_for,
        )


class EngineLog(Body):
    engine_id: int
    log: str = Field(
        description="Its driver's output (Kubernetes: its pod's log), the last lines asked."
    )


class EngineList(Body):
    engines: list[Engine]
