"""Stopping what a sparkgate home runs on this machine, once its server nodes are down.

Engines and the embedded metastore outlive server restarts on purpose. This is how a user
ends them all: each live engine is asked to stop through the store (it finishes what runs and
exits within a heartbeat); one that does not answer in time is killed by the launcher that
started it; then the embedded metastore is stopped.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field

from sparkgate.catalog.metastore import stop_metastore
from sparkgate.errors import Conflict
from sparkgate.launcher import launcher_for
from sparkgate.launcher.base import Launcher
from sparkgate.recorded import EngineTerminated, ErrorCode
from sparkgate.settings import Settings
from sparkgate.states import LIVE_ENGINE_STATES, TERMINAL_ENGINE_STATES, EngineState
from sparkgate.store import Store


class ServerStillRunning(Conflict):
    code = ErrorCode.SERVER_RUNNING

    def __init__(self, owner: str) -> None:
        super().__init__(
            f"Server node {owner} still runs for this home and would start engines again; "
            "stop it first (Ctrl-C), or pass --force.",
            owner=owner,
        )


@dataclass
class StopReport:
    stopped: list[int] = field(default_factory=list)  # engines that exited when asked
    terminated: list[int] = field(default_factory=list)  # engines that had to be killed
    metastore: bool = False  # the embedded metastore was running and was stopped


def stop_home(
    settings: Settings,
    *,
    timeout: float = 60.0,
    force: bool = False,
    clock: Callable[[], float] = time.time,
    launcher: Launcher | None = None,
) -> StopReport:
    """Stop every live engine of the home's store, then its embedded metastore. ``launcher``
    (default: the one the settings name) tells whether an engine's process is gone and kills
    one that does not stop in time."""
    report = StopReport()
    store = Store.open(settings.resolved_store_url)
    try:
        store.migrate()
        launcher = launcher or launcher_for(settings, store)
        holder = store.leases.get("placement")
        if holder is not None and holder.expires_at > clock() and not force:
            raise ServerStillRunning(holder.owner)
        live = store.engines.list_all(states=LIVE_ENGINE_STATES)
        for engine in live:
            store.transitions.engine(
                engine.id,
                EngineState.STOPPING,
                now=clock(),
                expected=[EngineState.STARTING, EngineState.RUNNING],
            )
        deadline = clock() + timeout
        waiting = {engine.id: engine for engine in live}
        while waiting and clock() < deadline:
            for engine_id in list(waiting):
                current = store.engines.get(engine_id)
                if current.state in TERMINAL_ENGINE_STATES or launcher.alive(current) is False:
                    # A process that is gone has stopped, whatever its record says.
                    store.transitions.engine(
                        engine_id, EngineState.STOPPED, now=clock(), expected=LIVE_ENGINE_STATES
                    )
                    report.stopped.append(engine_id)
                    del waiting[engine_id]
            time.sleep(0.2)
        for engine in waiting.values():
            # As it is now: a pid recorded since the listing (an engine just launched) counts.
            launcher.kill(store.engines.get(engine.id))
            store.transitions.engine(
                engine.id,
                EngineState.STOPPED,
                now=clock(),
                expected=LIVE_ENGINE_STATES,
                error=EngineTerminated("did not stop when asked").recorded(),
            )
            report.terminated.append(engine.id)
    finally:
        store.close()
    report.metastore = stop_metastore(settings)
    return report
