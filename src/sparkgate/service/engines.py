"""Engines for every door: list them, read one, the engines of sessions, an engine whose Spark
UI an admin is about to see, and stopping one. Every user may see what runs Spark; seeing an
engine's UI and stopping it are an admin's.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from sparkgate.auth.principal import Principal
from sparkgate.auth.users import Users
from sparkgate.launcher.placement import Placement
from sparkgate.states import LIVE_ENGINE_STATES
from sparkgate.store import Store
from sparkgate.store.records import EngineRecord, SessionRecord


@dataclass
class Engines:
    store: Store
    users: Users
    placement: Placement

    def list_all(self, *, live_only: bool = True) -> list[EngineRecord]:
        """The engines (live ones, or all)."""
        return self.store.engines.list_all(states=LIVE_ENGINE_STATES if live_only else None)

    def get(self, engine_id: int) -> EngineRecord:
        return self.store.engines.get(engine_id)

    def ui(self, engine_id: int, *, user: Principal) -> EngineRecord:
        """An engine whose Spark UI an admin is about to see through this node."""
        self.users.require_admin(user, "see engines' Spark UIs", target=f"engine:{engine_id}")
        return self.store.engines.get(engine_id)

    def of_sessions(self, sessions: Iterable[SessionRecord]) -> dict[int, EngineRecord]:
        """The engines of sessions already read (one read per engine, not per session)."""
        engines: dict[int, EngineRecord] = {}
        for engine_id in {s.engine_id for s in sessions if s.engine_id is not None}:
            engine = self.store.engines.find(engine_id)
            if engine is not None:
                engines[engine_id] = engine
        return engines

    def stop(self, engine_id: int, *, user: Principal) -> EngineRecord:
        """Ask an engine to stop gracefully (it notices within a heartbeat). Admins only."""
        self.users.require_admin(user, "stop an engine", target=f"engine:{engine_id}")
        self.store.engines.get(engine_id)  # 404 for an unknown engine
        self.placement.stop_engine(engine_id)
        self.users.audit(user, "engine.stop", "ok", target=f"engine:{engine_id}")
        return self.store.engines.get(engine_id)
