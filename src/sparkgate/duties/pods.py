"""Engines as pods (launcher/kubernetes.py): what the API server knows decides at once.

- A live engine whose pod is gone or ended (deleted, evicted, OOM-killed, failed) is lost now:
  its queries end ``ENGINE_LOST`` without waiting out the heartbeat timeout, and its sessions
  move as after any lost engine.
- A pod whose engine has ended (or whose record is gone) is deleted: nothing runs unowned.
"""

from __future__ import annotations

import logging

from sparkgate.duties.reaper import fail_engine
from sparkgate.errors import EngineLost
from sparkgate.launcher.kubernetes import LOG_SCHEME, KubernetesLauncher
from sparkgate.states import LIVE_ENGINE_STATES, EngineState
from sparkgate.store import Store

log = logging.getLogger("sparkgate.reaper")


def settle_engine_pods(store: Store, launcher: KubernetesLauncher, *, now: float) -> list[int]:
    """One round; the ids of the engines declared lost."""
    # The engines first, then the pods: a pod listed after its engine was read and launched
    # is in the list, so an engine is never judged by a list older than its pod.
    live = {e.id: e for e in store.engines.list_all(states=LIVE_ENGINE_STATES)}
    pods = launcher.pods(fresh=True)
    lost: list[int] = []
    for engine in live.values():
        if not (engine.log_path or "").startswith(LOG_SCHEME):
            continue  # its pod is not created yet (the start timeout covers a launch that fails)
        pod = pods.get(engine.id)
        if pod is not None and pod.live:
            continue
        if pod is None:
            why = "its pod was deleted"
        else:
            why = f"its pod {pod.name} ended ({pod.phase}{f': {pod.reason}' if pod.reason else ''})"
        error = EngineLost(
            f"Engine {engine.id} is lost: {why}. Its sessions and running queries are lost; "
            "resubmit the query, in a new session if it was interactive.",
            engine_id=engine.id,
        ).recorded()
        if fail_engine(store, engine.id, EngineState.LOST, error, now=now):
            lost.append(engine.id)
            log.warning("engine %s lost: %s", engine.id, why)
    for engine_id, pod in pods.items():
        if engine_id in live and engine_id not in lost:
            continue
        current = store.engines.find(engine_id)  # launched since the list above was read?
        if current is not None and current.state in LIVE_ENGINE_STATES:
            continue
        if launcher.delete(pod.name):
            log.info("deleted pod %s: engine %s has ended", pod.name, engine_id)
    return lost
