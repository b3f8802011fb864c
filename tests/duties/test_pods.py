"""The engine-pods duty decides from what the API server says (a fake of it here; the real
thing is in tests/kube): an engine whose pod went or ended is lost at once, a pod whose
engine ended is deleted, and a pod listed before its engine was read is left alone."""

from __future__ import annotations

from typing import Any, cast

from sparkgate.duties.pods import settle_engine_pods
from sparkgate.launcher.kubernetes import KubernetesLauncher, PodStatus
from sparkgate.states import EngineState, SessionState, StatementState
from sparkgate.store import Store
from tests.conftest import NOW, force_state


class FakePods:
    """What the launcher lists and deletes, as the test says."""

    def __init__(self, pods: dict[int, PodStatus]) -> None:
        self.listed = pods
        self.deleted: list[str] = []

    def pods(self, *, fresh: bool = False) -> dict[int, PodStatus]:
        return dict(self.listed)

    def delete(self, name: str, *, grace: int | None = None) -> bool:
        self.deleted.append(name)
        return True


def pod(
    engine_id: int, phase: str = "Running", *, deleting: bool = False, reason: str | None = None
) -> PodStatus:
    return PodStatus(f"sg-engine-{engine_id}", engine_id, phase, deleting, reason)


def launched(store: Store, engine_id: int) -> None:
    store.engines.set_process(
        engine_id, pid=None, host=None, log_path=f"k8s://ns/sg-engine-{engine_id}", now=NOW
    )


def test_an_engine_whose_pod_went_or_ended_is_lost_with_its_work(
    store: Store, make_engine: Any, make_session: Any
) -> None:
    running, deleted, oom, stopping, unlaunched = (make_engine(heartbeat_at=NOW) for _ in range(5))
    for engine in (running, deleted, oom, stopping):
        launched(store, engine.id)
    session = make_session(state=SessionState.BUSY, engine_id=oom.id)
    statement = store.statements.add(session.id, "SELECT 1", now=NOW)
    force_state(store, "statements", statement.id, "running")
    fake = FakePods(
        {
            running.id: pod(running.id),
            oom.id: pod(oom.id, "Failed", reason="OOMKilled (exit 137)"),
            stopping.id: pod(stopping.id, deleting=True),
        }
    )
    lost = settle_engine_pods(store, cast(KubernetesLauncher, fake), now=NOW + 1)
    assert sorted(lost) == sorted([deleted.id, oom.id, stopping.id])
    assert store.engines.get(running.id).state is not EngineState.LOST
    # Not yet created: the start timeout judges it, not the pod list.
    assert store.engines.get(unlaunched.id).state is not EngineState.LOST
    failed = store.statements.get(statement.id)
    assert failed.state is StatementState.FAILED and failed.error
    assert failed.error.code == "ENGINE_LOST" and "OOMKilled (exit 137)" in failed.error.message
    deleted_error = store.engines.get(deleted.id).error
    assert deleted_error and "its pod was deleted" in deleted_error.message
    # The lost engines' pods that are still listed go.
    assert sorted(fake.deleted) == sorted([f"sg-engine-{oom.id}", f"sg-engine-{stopping.id}"])


def test_pods_of_ended_or_unknown_engines_are_deleted_not_those_of_live_ones(
    store: Store, make_engine: Any
) -> None:
    live = make_engine(heartbeat_at=NOW)
    ended = make_engine(heartbeat_at=NOW)
    launched(store, live.id)
    launched(store, ended.id)
    force_state(store, "engines", ended.id, "stopped")
    fake = FakePods({live.id: pod(live.id), ended.id: pod(ended.id, "Succeeded"), 999: pod(999)})
    assert settle_engine_pods(store, cast(KubernetesLauncher, fake), now=NOW + 1) == []
    assert sorted(fake.deleted) == sorted([f"sg-engine-{ended.id}", "sg-engine-999"])
