"""Engines for every door: list them, read one, the engines of sessions, an engine whose Spark
UI an admin is about to see, and stopping one.

Admins see every engine as it is. Any other user sees only the engines that hold or held one
of the sessions they see (``visibility.scope``: their own, and an impersonator's for others),
ended ones too: those are the engines their sessions, queries and Livy answers name, and a
user who opens the engine a failed session of theirs ran expects to find it. Every other engine
is absent to them, by id as in lists, as an id that does not exist. Even of their own engines
they do not see where it runs (host, pid, node), its Spark application (id, UI) or its log's
path: an engine may be shared with other users' sessions, and those name the machine and the
application the others' work runs in. Seeing an engine's UI and stopping it are an admin's.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable
from dataclasses import dataclass

from sparkgate.auth.principal import Principal
from sparkgate.auth.users import Users
from sparkgate.errors import EngineNotFound
from sparkgate.launcher.placement import Placement
from sparkgate.service.visibility import scope
from sparkgate.states import LIVE_ENGINE_STATES, EngineKind
from sparkgate.store import Store
from sparkgate.store.records import EngineRecord, SessionRecord


@dataclass(frozen=True)
class Whose:
    """Whose work an engine runs: its share level (``user``, ``group``, ``connection``,
    ``server`` for anyone's, ``session`` for one session's dedicated engine, ``warm`` for one
    kept ready for nobody yet) and the user or group it belongs to (None: anyone's)."""

    share_level: str
    runs_for: str | None = None


def whose(engine: EngineRecord, session_owner: str | None = None) -> Whose:
    """Read from its share key (``user:bob``, ``group:analysts``, ``session:<tag>``; none:
    anyone's), or, a dedicated engine, from the session it serves (``session_owner``)."""
    if engine.share_key is not None:
        level, _, name = engine.share_key.partition(":")
        if level == "session":  # one client connection's engines (share level connection)
            return Whose("connection", session_owner)
        return Whose(level, name)
    if engine.kind is EngineKind.DEDICATED:
        if engine.session_id is None:
            return Whose("warm")
        return Whose("session", session_owner)
    return Whose("server")


def as_seen_by(user: Principal, engine: EngineRecord) -> EngineRecord:
    """The engine as ``user`` may see it: whole for admins; else without where it runs, its
    Spark application and its log."""
    if user.admin:
        return engine
    return dataclasses.replace(
        engine, node_id=None, host=None, pid=None, app_id=None, ui_url=None, log_path=None
    )


@dataclass
class Engines:
    store: Store
    users: Users
    placement: Placement

    def list_all(self, *, user: Principal, live_only: bool = True) -> list[EngineRecord]:
        """The engines ``user`` may see (live ones, or all), as they may see them."""
        visible = scope(user)
        engines = self.store.engines.list_all(
            states=LIVE_ENGINE_STATES if live_only else None,
            owner=visible.owner,
            creator=visible.creator,
        )
        return [as_seen_by(user, e) for e in engines]

    def get(self, engine_id: int, *, user: Principal) -> EngineRecord:
        """The engine as ``user`` may see it; EngineNotFound if they may not, as if absent."""
        engine = self.store.engines.find(engine_id)
        if engine is None or not self._sees(user, engine_id):
            raise EngineNotFound(engine_id)
        return as_seen_by(user, engine)

    def _sees(self, user: Principal, engine_id: int) -> bool:
        visible = scope(user)
        if visible.owner is None and visible.creator is None:
            return True
        return self.store.engines.ran_sessions_of(engine_id, visible.owner, visible.creator)

    def ui(self, engine_id: int, *, user: Principal) -> EngineRecord:
        """An engine whose Spark UI an admin is about to see through this node."""
        self.users.require_admin(user, "see engines' Spark UIs", target=f"engine:{engine_id}")
        return self.store.engines.get(engine_id)

    def whose(self, engines: Iterable[EngineRecord], *, user: Principal) -> dict[int, Whose]:
        """Whose work each engine runs, for admins (other users: nothing, as today); a
        dedicated engine's session is read once each."""
        if not user.admin:
            return {}
        found: dict[int, Whose] = {}
        for engine in engines:
            owner = None
            if engine.session_id is not None:
                session = self.store.sessions.find(engine.session_id)
                owner = None if session is None else session.owner
            found[engine.id] = whose(engine, owner)
        return found

    def of_sessions(
        self, sessions: Iterable[SessionRecord], *, user: Principal
    ) -> dict[int, EngineRecord]:
        """The engines of sessions ``user`` was given (one read per engine, not per session),
        as ``user`` may see them."""
        engines: dict[int, EngineRecord] = {}
        for engine_id in {s.engine_id for s in sessions if s.engine_id is not None}:
            engine = self.store.engines.find(engine_id)
            if engine is not None:
                engines[engine_id] = as_seen_by(user, engine)
        return engines

    def log(self, engine_id: int, *, user: Principal, tail: int | None = None) -> str:
        """An engine driver's output (its log file, or its pod's log). Admins only: an
        engine's log names every session's work it ran."""
        self.users.require_admin(user, "read engines' logs", target=f"engine:{engine_id}")
        engine = self.store.engines.get(engine_id)  # 404 for an unknown engine
        self.users.audit(user, "engine.log", "ok", target=f"engine:{engine_id}")
        return self.placement.launcher.log(engine, tail=tail)

    def stop(self, engine_id: int, *, user: Principal) -> EngineRecord:
        """Ask an engine to stop gracefully (it notices within a heartbeat). Admins only."""
        self.users.require_admin(user, "stop an engine", target=f"engine:{engine_id}")
        self.store.engines.get(engine_id)  # 404 for an unknown engine
        self.placement.stop_engine(engine_id)
        self.users.audit(user, "engine.stop", "ok", target=f"engine:{engine_id}")
        return self.store.engines.get(engine_id)
