"""Reaping: turning engines that stopped heartbeating, and sessions left idle too long, into a
clear final state, so nothing waits forever on something that will never answer."""

from __future__ import annotations

import logging

from sparkgate.errors import EngineLost
from sparkgate.launcher.base import Launcher
from sparkgate.recorded import RecordedError, SessionTimedOut
from sparkgate.settings import Settings
from sparkgate.states import (
    LIVE_ENGINE_STATES,
    EngineState,
    SessionKind,
    SessionState,
)
from sparkgate.store import Store

log = logging.getLogger("sparkgate.reaper")


def reap_lost_engines(
    store: Store,
    settings: Settings,
    launcher: Launcher,
    *,
    now: float,
    trusted_since: float | None = None,
) -> list[int]:
    """Declare engines lost that missed their heartbeats (or never started): their sessions
    become ``dead`` and their statements ``failed`` with ``ENGINE_LOST``. The ids declared.
    One that still runs (hung, say) would hold memory and cores: ``launcher`` kills it.

    ``trusted_since``: since when the judging node has reached the store without a break.
    Heartbeats missed while the store was out of reach could not have been written, so no
    engine is judged until the store has been reachable for a whole heartbeat timeout."""
    lost: list[int] = []
    if trusted_since is not None and now - trusted_since < settings.engine_heartbeat_timeout:
        return lost
    stale = store.engines.stale(
        now=now,
        heartbeat_timeout=settings.engine_heartbeat_timeout,
        start_timeout=settings.engine_start_timeout,
    )
    for engine in stale:
        if engine.heartbeat_at is None:
            why = f"did not start within {settings.engine_start_timeout:.0f}s"
        else:
            why = f"stopped heartbeating {now - engine.heartbeat_at:.0f}s ago"
        error = EngineLost(
            f"Engine {engine.id} {why}; its sessions and running queries are lost. "
            "Resubmit the query, in a new session if it was interactive.",
            engine_id=engine.id,
        ).recorded()
        if fail_engine(store, engine.id, EngineState.LOST, error, now=now):
            lost.append(engine.id)
            launcher.kill(engine)
            log.warning("engine %s lost (%s)", engine.id, why)
    return lost


def fail_engine(
    store: Store, engine_id: int, to: EngineState, error: RecordedError, *, now: float
) -> bool:
    """Move a live engine to a final state, ending its sessions and statements with ``error``."""
    with store.db.begin() as conn:
        moved = store.transitions.engine(
            engine_id, to, now=now, expected=LIVE_ENGINE_STATES, error=error, conn=conn
        )
        if not moved.applied:
            return False
        sessions = store.transitions.sessions_of_engine(
            engine_id, SessionState.DEAD, now=now, error=error, conn=conn
        )
        for session_id in sessions:
            store.transitions.end_statements_of_session(session_id, error, now=now, conn=conn)
    return True


def reap_idle_sessions(store: Store, settings: Settings, *, now: float) -> list[int]:
    """End interactive sessions idle longer than their idle timeout (0: never): a session's
    own ``idle_timeout`` attribute (Thrift sessions), else ``session_idle_timeout``."""
    timeouts = [t for t in (settings.session_idle_timeout, settings.thrift_idle_timeout) if t > 0]
    if not timeouts:
        return []
    ended = []
    for session in store.sessions.idle_since(now - min(timeouts), SessionKind.INTERACTIVE):
        timeout = session.attributes.idle_timeout
        if timeout is None:
            timeout = settings.session_idle_timeout
        if timeout <= 0 or session.last_activity_at >= now - timeout:
            continue
        error = SessionTimedOut(
            f"Session {session.id} was idle for more than "
            f"{timeout:.0f}s and was ended to free its resources."
        ).recorded()
        moved = store.transitions.session(
            session.id, SessionState.DEAD, now=now, expected=[SessionState.IDLE], error=error
        )
        if moved.applied:
            ended.append(session.id)
    return ended
