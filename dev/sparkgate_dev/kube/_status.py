"""Pure rules of a pod's status, as the kubelet of Kubernetes 1.20 applies them: the phase from
the containers' states and the restart policy, the conditions, and the restart back-off."""

from __future__ import annotations

import datetime
from typing import Any

Obj = dict[str, Any]


def now_iso() -> str:
    return datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def restart_delay(restarts_done: int, base: float, cap: float) -> float:
    """Seconds to wait before the next restart of a container restarted ``restarts_done`` times:
    the first restart is immediate, then ``base`` doubling up to ``cap`` (CrashLoopBackOff)."""
    if restarts_done <= 0:
        return 0.0
    return float(min(cap, base * 2 ** (restarts_done - 1)))


def should_restart(policy: str, exit_code: int, *, init: bool) -> bool:
    if policy == "Never":
        return False
    if init or policy == "OnFailure":
        return exit_code != 0
    return True  # Always


def pod_phase(spec: Obj, init_statuses: list[Obj], statuses: list[Obj]) -> str:
    """``getPhase`` of the 1.20 kubelet."""
    policy = spec.get("restartPolicy", "Always")
    init_by_name = {status["name"]: status for status in init_statuses}
    pending_init = failed_init = 0
    for container in spec.get("initContainers") or []:
        status = init_by_name.get(container["name"])
        state = status["state"] if status else {}
        last = (status or {}).get("lastState", {}).get("terminated")
        if "terminated" in state:
            failed_init += state["terminated"]["exitCode"] != 0
        elif "waiting" in state and last is not None:
            failed_init += last["exitCode"] != 0
        else:
            pending_init += 1
    by_name = {status["name"]: status for status in statuses}
    containers = spec["containers"]
    unknown = running = waiting = stopped = succeeded = failed = 0
    for container in containers:
        status = by_name.get(container["name"])
        if status is None:
            unknown += 1
            continue
        state = status["state"]
        if "running" in state:
            running += 1
        elif "terminated" in state:
            stopped += 1
            if state["terminated"]["exitCode"] == 0:
                succeeded += 1
            else:
                failed += 1
        elif "waiting" in state and status.get("lastState", {}).get("terminated"):
            stopped += 1
        elif "waiting" in state:
            waiting += 1
        else:
            unknown += 1
    if failed_init and policy == "Never":
        return "Failed"
    if pending_init or waiting:
        return "Pending"
    if running and not unknown:
        return "Running"
    if running == len(containers):
        return "Running"
    if stopped == len(containers):
        if policy == "Always":
            return "Running"
        if policy == "OnFailure":
            return "Succeeded" if stopped == succeeded else "Running"
        return "Failed" if failed else "Succeeded"
    if running:
        return "Running"
    return "Pending"


def pod_conditions(
    phase: str,
    init_statuses: list[Obj],
    statuses: list[Obj],
    previous: dict[str, Obj],
) -> list[Obj]:
    """PodScheduled, Initialized, ContainersReady and Ready; a condition keeps its
    ``lastTransitionTime`` from ``previous`` (type -> condition) while its status holds."""
    completed = phase in ("Succeeded", "Failed")
    initialized = all(s["state"].get("terminated", {}).get("exitCode") == 0 for s in init_statuses)
    unready = [s["name"] for s in statuses if not s["ready"]]
    wanted: list[tuple[str, bool, str, str]] = [("PodScheduled", True, "", "")]
    if initialized:
        wanted.append(("Initialized", True, "", ""))
    else:
        waiting = [s["name"] for s in init_statuses if "terminated" not in s["state"]]
        message = f"containers with incomplete status: [{' '.join(waiting)}]"
        wanted.append(("Initialized", False, "ContainersNotInitialized", message))
    if completed:
        ready: tuple[bool, str, str] = (False, "PodCompleted", "")
    elif unready:
        ready = (
            False,
            "ContainersNotReady",
            f"containers with unready status: [{' '.join(unready)}]",
        )
    else:
        ready = (True, "", "")
    wanted.append(("ContainersReady", *ready))
    wanted.append(("Ready", *ready))
    conditions = []
    for kind, ok, reason, message in wanted:
        status = "True" if ok else "False"
        before = previous.get(kind)
        changed_at = (
            before["lastTransitionTime"] if before and before["status"] == status else now_iso()
        )
        condition: Obj = {
            "type": kind,
            "status": status,
            "lastProbeTime": None,
            "lastTransitionTime": changed_at,
        }
        if reason:
            condition["reason"] = reason
        if message:
            condition["message"] = message
        conditions.append(condition)
    return conditions
