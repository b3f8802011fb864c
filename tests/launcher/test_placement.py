"""Placement decisions, with a launcher that records instead of starting JVMs."""

from __future__ import annotations

from typing import Any

import pytest

from sparkgate.errors import EngineBackoff
from sparkgate.launcher.placement import Placement, needs_own_engine
from sparkgate.settings import Settings
from sparkgate.states import EngineKind, EngineState, SessionKind, SessionState
from sparkgate.store import Store
from sparkgate.store.records import EngineRecord, SessionRecord
from tests.conftest import NOW, NoProcesses


class BrokenLauncher(NoProcesses):
    def launch(self, engine: EngineRecord) -> None:
        raise OSError("no java here")


@pytest.fixture
def placement(store: Store) -> tuple[Placement, NoProcesses]:
    launcher = NoProcesses()
    settings = Settings(warm_engines=1, shared_engine_max_sessions=2)
    return Placement(settings, store, launcher, "node-a", clock=lambda: NOW), launcher


@pytest.mark.parametrize(
    ("conf", "own"),
    [
        ({}, False),
        ({"spark.sql.shuffle.partitions": "8", "spark.sql.ansi.enabled": "false"}, False),
        ({"spark.sql.warehouse.dir": "/x"}, True),
        ({"spark.executor.memory": "2g"}, True),
        ({"spark.jars": "a.jar"}, True),
    ],
)
def test_which_conf_needs_its_own_engine(conf: dict[str, str], own: bool) -> None:
    assert needs_own_engine(conf) is own


def test_interactive_sessions_share_an_engine_until_full(
    store: Store, placement: tuple[Placement, NoProcesses], make_session: Any
) -> None:
    place, launcher = placement
    sessions = [make_session(state=SessionState.NOT_STARTED) for _ in range(3)]
    for session in sessions:
        place.place(session)
    engines = [store.sessions.get(s.id).engine_id for s in sessions]
    assert engines[0] == engines[1] != engines[2]
    assert [e.kind for e in launcher.launched] == [EngineKind.SHARED, EngineKind.SHARED]
    assert all(store.sessions.get(s.id).state is SessionState.STARTING for s in sessions)


def test_batch_takes_a_warm_engine_and_the_pool_refills(
    store: Store, placement: tuple[Placement, NoProcesses], make_session: Any
) -> None:
    place, launcher = placement
    place.keep_warm()
    warm = launcher.launched[-1]
    assert warm.kind is EngineKind.DEDICATED and warm.session_id is None
    batch = make_session(state=SessionState.NOT_STARTED, kind=SessionKind.BATCH)
    place.place(batch)
    assert store.sessions.get(batch.id).engine_id == warm.id
    assert store.engines.get(warm.id).session_id == batch.id
    assert len(launcher.launched) == 2 and launcher.launched[-1].session_id is None  # refilled


def test_static_conf_gets_a_fresh_dedicated_engine(
    store: Store, placement: tuple[Placement, NoProcesses]
) -> None:
    place, launcher = placement
    place.keep_warm()
    session = store.sessions.add(
        SessionKind.INTERACTIVE, now=NOW, conf={"spark.executor.memory": "2g"}
    )
    place.place(session)
    engine = launcher.launched[-1]
    assert engine.kind is EngineKind.DEDICATED and engine.session_id == session.id
    assert engine.conf == {"spark.executor.memory": "2g"}
    assert store.engines.warm_count() == 1  # the warm one was not used


def test_placing_twice_is_harmless(
    store: Store, placement: tuple[Placement, NoProcesses], make_session: Any
) -> None:
    place, launcher = placement
    session = make_session(state=SessionState.NOT_STARTED, kind=SessionKind.BATCH)
    place.place(session)
    place.place(session)  # a stale copy: the second attempt changes nothing
    assert len(launcher.launched) == 1


def test_session_killed_while_its_engine_launches_stops_the_engine(
    store: Store, make_session: Any
) -> None:
    session = make_session(state=SessionState.NOT_STARTED, kind=SessionKind.BATCH)

    class KillingLauncher(NoProcesses):
        def launch(self, engine: EngineRecord) -> None:
            super().launch(engine)
            store.transitions.session(session.id, SessionState.KILLED, now=NOW)

    launcher = KillingLauncher()
    Placement(Settings(), store, launcher, "node-a", clock=lambda: NOW).place(session)
    assert store.sessions.get(session.id).engine_id is None
    assert store.engines.get(launcher.launched[0].id).state is EngineState.STOPPING


def test_launch_failure_marks_the_engine_failed(store: Store, make_session: Any) -> None:
    place = Placement(Settings(), store, BrokenLauncher(), "node-a", clock=lambda: NOW)
    with pytest.raises(OSError, match="no java"):
        place.place(make_session(state=SessionState.NOT_STARTED))
    [engine] = store.engines.list_all()
    assert engine.state is EngineState.FAILED and engine.error
    assert engine.error.code == "ENGINE_LAUNCH_FAILED"


def _fail_no_executors(store: Store, engine_id: int, now: float) -> None:
    error = {"code": "NO_EXECUTORS", "message": "no executor"}
    store.transitions.engine(engine_id, EngineState.FAILED, now=now, error=error)


def test_placement_backs_off_after_no_executors_and_resets_on_a_start(
    store: Store, make_session: Any
) -> None:
    """The warm pool's loop (start, wait, fail NO_EXECUTORS, start again) with a fake clock."""
    clock = [NOW]
    launcher = NoProcesses()
    settings = Settings(warm_engines=1, engine_backoff_min=10, engine_backoff_max=25)
    place = Placement(settings, store, launcher, "node-a", clock=lambda: clock[0])
    launched_at = []
    for tick in range(80):  # the placement duty, every second
        clock[0] = NOW + tick
        before = len(launcher.launched)
        place.keep_warm()
        if len(launcher.launched) > before:
            launched_at.append(tick)
            # The new warm engine gets no executor (its wait fast-forwarded): it fails.
            _fail_no_executors(store, launcher.launched[-1].id, clock[0])
    # 10 s after the first failure, 20 s after the second, then the cap: 25 s.
    assert launched_at == [0, 10, 30, 55]
    # A batch needing a new engine meanwhile is told why, and when the next may start.
    with pytest.raises(EngineBackoff) as waiting:
        place.place(make_session(state=SessionState.NOT_STARTED, kind=SessionKind.BATCH))
    assert waiting.value.code == "ENGINE_BACKOFF"
    assert waiting.value.params["attempt"] == 4
    assert waiting.value.params["next_attempt_at"] == NOW + 80
    assert "in 1s" in waiting.value.message
    # Interactive sessions use another placement (the shared engines): not held back.
    place.place(make_session(state=SessionState.NOT_STARTED))
    shared = launcher.launched[-1]
    assert shared.kind is EngineKind.SHARED
    # An engine of the placement that starts ends the backoff.
    clock[0] = NOW + 80
    place.keep_warm()
    store.transitions.engine(launcher.launched[-1].id, EngineState.RUNNING, now=clock[0])
    assert place.backoff(EngineKind.DEDICATED, None) is None


def test_the_shared_engine_is_kept_only_outside_its_backoff(store: Store) -> None:
    clock = [NOW]
    launcher = NoProcesses()
    settings = Settings(shared_engine=True, engine_backoff_min=10)
    place = Placement(settings, store, launcher, "node-a", clock=lambda: clock[0])
    place.keep_shared()
    place.keep_shared()  # one is starting: nothing more
    assert [e.kind for e in launcher.launched] == [EngineKind.SHARED]
    _fail_no_executors(store, launcher.launched[0].id, NOW)
    clock[0] = NOW + 9.5
    place.keep_shared()
    assert len(launcher.launched) == 1
    clock[0] = NOW + 10
    place.keep_shared()
    assert len(launcher.launched) == 2


def _spare_and_warm(
    store: Store, place: Placement, launcher: NoProcesses, *, spare_running: bool
) -> tuple[EngineRecord, EngineRecord]:
    """The resting pool: the spare shared engine (running, or still starting) and a running
    warm dedicated engine."""
    place.keep_shared()
    place.keep_warm()
    spare, warm = launcher.launched
    for engine in (spare, warm) if spare_running else (warm,):
        store.transitions.engine(engine.id, EngineState.RUNNING, now=NOW)
    return spare, warm


def _user_session(store: Store, user: str) -> SessionRecord:
    return store.sessions.add(SessionKind.INTERACTIVE, now=NOW, owner=user, share_key=user)


def test_a_new_user_gets_the_running_spare_shared_engine(
    store: Store, placement: tuple[Placement, NoProcesses]
) -> None:
    place, launcher = placement
    spare, _ = _spare_and_warm(store, place, launcher, spare_running=True)
    session = _user_session(store, "ann")
    place.place(session)
    assert store.sessions.get(session.id).engine_id == spare.id
    assert store.engines.get(spare.id).share_key == "ann"
    # Nothing starts in the request: the placement duty refills the spare.
    assert len(launcher.launched) == 2
    place.keep_shared()
    assert launcher.launched[-1].kind is EngineKind.SHARED and len(launcher.launched) == 3


def test_with_the_spare_still_starting_a_new_user_gets_a_running_warm_engine(
    store: Store, placement: tuple[Placement, NoProcesses]
) -> None:
    place, launcher = placement
    spare, warm = _spare_and_warm(store, place, launcher, spare_running=False)
    session = _user_session(store, "bob")
    place.place(session)
    assert store.sessions.get(session.id).engine_id == warm.id
    taken = store.engines.get(warm.id)
    assert (taken.kind, taken.share_key, taken.session_id) == (EngineKind.SHARED, "bob", None)
    assert store.engines.get(spare.id).share_key is None  # still the spare
    assert store.engines.warm_count() == 0
    # A batch now finds no warm engine: it is not given bob's, and gets a new one.
    batch = store.sessions.add(SessionKind.BATCH, now=NOW)
    place.place(batch)
    assert store.sessions.get(batch.id).engine_id not in (warm.id, spare.id)
    # The second session of bob's shares his engine; another user takes the starting spare.
    again = _user_session(store, "bob")
    place.place(again)
    assert store.sessions.get(again.id).engine_id == warm.id
    carl = _user_session(store, "carl")
    place.place(carl)
    assert store.sessions.get(carl.id).engine_id == spare.id


def test_a_warm_engine_taken_for_a_batch_cannot_also_become_shared(
    store: Store, placement: tuple[Placement, NoProcesses]
) -> None:
    place, launcher = placement
    place.keep_warm()
    [warm] = launcher.launched
    store.transitions.engine(warm.id, EngineState.RUNNING, now=NOW)
    batch = store.sessions.add(SessionKind.BATCH, now=NOW)
    assert store.engines.claim_warm(batch.id, now=NOW) is not None
    assert store.engines.claim_warm_as_shared("dan", now=NOW) is None
    assert store.engines.get(warm.id).kind is EngineKind.DEDICATED


def test_engines_of_another_access_policy_get_no_work_and_are_stopped(
    store: Store, tmp_path: Any
) -> None:
    """A node restarted with another access file (or other admins) must not place anyone on
    the engines the node before it launched: they enforce the rules of the file they were
    started with, read once from their environment."""
    before = Settings(warm_engines=1, shared_engine_max_sessions=4)
    old_launcher = NoProcesses()
    old = Placement(before, store, old_launcher, "node-a", clock=lambda: NOW)
    old.keep_shared()
    old.keep_warm()
    old_shared, old_warm = old_launcher.launched
    for engine in (old_shared, old_warm):
        store.transitions.engine(engine.id, EngineState.RUNNING, now=NOW)
    # An engine of the release before this one recorded no policy: taken as before.
    legacy = store.engines.add(EngineKind.SHARED, now=NOW, share_key="user:zoe")
    store.transitions.engine(legacy.id, EngineState.RUNNING, now=NOW)

    access = tmp_path / "access.yaml"
    access.write_text("admins: [carol]\n")
    after = before.model_copy(update={"access_file": access})
    assert after.access_policy() != before.access_policy()
    assert after.model_copy(update={"admins": ["dave"]}).access_policy() != after.access_policy()
    launcher = NoProcesses()
    new = Placement(after, store, launcher, "node-a", clock=lambda: NOW)
    assert store.engines.of_other_policy(new.policy) == [
        store.engines.get(old_shared.id),
        store.engines.get(old_warm.id),
    ]
    # Even before they are stopped, no placement takes them: not the shared engine, not the
    # warm one for a batch, not the warm one for a user's first session.
    for session in (
        store.sessions.add(SessionKind.INTERACTIVE, now=NOW),
        store.sessions.add(SessionKind.BATCH, now=NOW),
        _user_session(store, "user:ann"),
    ):
        new.place(session)
        assert store.sessions.get(session.id).engine_id not in (old_shared.id, old_warm.id)
    zoe = _user_session(store, "user:zoe")
    new.place(zoe)
    assert store.sessions.get(zoe.id).engine_id == legacy.id

    assert new.stop_other_policies() == [old_shared.id, old_warm.id]
    assert {store.engines.get(e.id).state for e in (old_shared, old_warm)} == {EngineState.STOPPING}
    assert store.engines.get(legacy.id).state is EngineState.RUNNING
    assert store.engines.of_other_policy(new.policy) == [
        store.engines.get(old_shared.id),
        store.engines.get(old_warm.id),
    ]  # live until they exit, and given nothing
    assert new.stop_other_policies() == [old_shared.id, old_warm.id]  # asked again: harmless
    # Every engine the new node launched records its policy: the old node's placement, in
    # turn, does not take them.
    assert all(e.id not in (old_shared.id, old_warm.id) for e in launcher.launched)
    assert {e.id for e in store.engines.of_other_policy(old.policy)} == {
        e.id for e in launcher.launched
    }


def test_on_a_schema_before_engine_policies_placement_works_as_before(
    store: Store, tmp_path: Any
) -> None:
    """A node pinned to the release before's revision (a rolling upgrade) has no table to
    record policies in: it launches, places and stops nothing on their account."""
    with store.db.engine.begin() as conn:
        conn.exec_driver_sql("DROP TABLE engine_policies")
        conn.exec_driver_sql("UPDATE alembic_version SET version_num = '0014_stream_costs'")
    old = Store(store.db)
    access = tmp_path / "access.yaml"
    access.write_text("admins: [carol]\n")
    launcher = NoProcesses()
    settings = Settings(warm_engines=0, access_file=access)
    place = Placement(settings, old, launcher, "node-a", clock=lambda: NOW)
    session = old.sessions.add(SessionKind.INTERACTIVE, now=NOW)
    place.place(session)
    assert old.sessions.get(session.id).engine_id == launcher.launched[0].id
    assert place.stop_other_policies() == []
