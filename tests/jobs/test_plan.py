"""The deploy planner over a table of (stored, declared, running) cases."""

from __future__ import annotations

import pytest

from sparkgate.jobs.plan import Action, Current, Declared, plan
from sparkgate.states import ActionKind


def declared(
    query: str = "q1", config: str = "c1", supervision: str = "s1", batch: bool = False
) -> Declared:
    return Declared("job", batch, query, config, supervision)


def current(
    query: str = "q1",
    config: str = "c1",
    supervision: str = "s1",
    *,
    running: bool = True,
    started: bool = True,
    checkpoint: bool = True,
    version: int = 3,
    batch: bool = False,
    removed: bool = False,
) -> Current:
    return Current(
        "job", version, batch, query, config, supervision, running, started, checkpoint, removed
    )


CASES = [
    # (name, stored, declared, expected kind, expected version)
    ("new job", None, declared(), ActionKind.START_CLEAN, 1),
    ("running, unchanged", current(), declared(), ActionKind.NOTHING, 3),
    ("running, description only", current(), declared(supervision="s2"), ActionKind.UPDATE, 3),
    ("running, config", current(), declared(config="c2"), ActionKind.RESTART_RESUME, 3),
    ("running, query", current(), declared(query="q2"), ActionKind.RESTART_CLEAN, 4),
    ("running, query and config", current(), declared("q2", "c2"), ActionKind.RESTART_CLEAN, 4),
    ("stopped, unchanged", current(running=False), declared(), ActionKind.RESUME, 3),
    ("stopped, config", current(running=False), declared(config="c2"), ActionKind.RESUME, 3),
    (
        "stopped, description",
        current(running=False),
        declared(supervision="x"),
        ActionKind.RESUME,
        3,
    ),
    ("stopped, query", current(running=False), declared(query="q2"), ActionKind.START_CLEAN, 4),
    (
        "stopped, checkpoint gone",
        current(running=False, checkpoint=False),
        declared(),
        ActionKind.ERROR,
        3,
    ),
    (
        "stopped, query changed, checkpoint gone",
        current(running=False, checkpoint=False),
        declared(query="q2"),
        ActionKind.START_CLEAN,
        4,
    ),
    (
        "never started",
        current(running=False, started=False, checkpoint=False),
        declared(),
        ActionKind.START_CLEAN,
        3,
    ),
    ("batch, new", None, declared(batch=True), ActionKind.REGISTER, 1),
    (
        "batch, unchanged",
        current(batch=True, running=False),
        declared(batch=True),
        ActionKind.NOTHING,
        3,
    ),
    (
        "batch, query",
        current(batch=True, running=False),
        declared(query="q2", batch=True),
        ActionKind.REGISTER,
        4,
    ),
    (
        "batch, config",
        current(batch=True, running=False),
        declared(config="c2", batch=True),
        ActionKind.REGISTER,
        3,
    ),
    ("streaming -> batch, running", current(), declared(batch=True), ActionKind.REGISTER, 4),
    (
        "streaming -> batch, stopped",
        current(running=False),
        declared(batch=True),
        ActionKind.REGISTER,
        4,
    ),
    (
        "removed, declared again",
        current(running=False, removed=True),
        declared(),
        ActionKind.START_CLEAN,
        4,
    ),
    (
        "removed batch job, declared again",
        current(batch=True, running=False, removed=True),
        declared(batch=True),
        ActionKind.REGISTER,
        4,
    ),
    (
        "running, config and description",
        current(),
        declared("q1", "c2", "s2"),
        ActionKind.RESTART_RESUME,
        3,
    ),
    (
        "batch, description only",
        current(batch=True, running=False),
        declared(supervision="s2", batch=True),
        ActionKind.REGISTER,
        3,
    ),
    (
        "batch -> streaming",
        current(batch=True, running=False),
        declared(),
        ActionKind.START_CLEAN,
        4,
    ),
]


@pytest.mark.parametrize(
    ("stored", "wanted", "kind", "version"), [c[1:] for c in CASES], ids=[c[0] for c in CASES]
)
def test_decision_table(
    stored: Current | None, wanted: Declared, kind: ActionKind, version: int
) -> None:
    [action] = plan([wanted], {} if stored is None else {"job": stored})
    assert (action.kind, action.version) == (kind, version), action.reason
    assert action.reason


def test_what_an_action_does() -> None:
    assert Action("j", ActionKind.RESTART_CLEAN, 2, "").stops
    assert Action("j", ActionKind.RESTART_CLEAN, 2, "").starts
    assert Action("j", ActionKind.RESTART_CLEAN, 2, "").clean_state
    assert (
        Action("j", ActionKind.RESUME, 2, "").starts
        and not Action("j", ActionKind.RESUME, 2, "").clean_state
    )
    assert (
        not Action("j", ActionKind.UPDATE, 2, "").stops
        and not Action("j", ActionKind.UPDATE, 2, "").starts
    )


def test_a_stream_stopped_by_a_mode_change_says_so() -> None:
    [action] = plan([declared(batch=True)], {"job": current()})
    assert "the stream job is stopped and removed" in action.reason
    [action] = plan([declared()], {"job": current(running=False, removed=True, version=7)})
    assert "after its removal at version 7" in action.reason and action.clean_state


def test_removed_jobs_are_not_orphans() -> None:
    assert plan([], {"job": current(running=False, removed=True)}, prune=True) == []


def test_orphans_are_listed_and_removed_only_when_pruning() -> None:
    stored = {"gone": Current("gone", 2, False, "q", "c", "s", True, True, True)}
    [kept] = plan([], stored)
    assert kept.kind is ActionKind.ORPHANED and "--prune" in kept.reason
    [removed] = plan([], stored, prune=True)
    assert removed.kind is ActionKind.REMOVE and removed.stops


def test_declared_order_then_orphans_by_name() -> None:
    stored = {n: Current(n, 1, False, "q", "c", "s", True, True, True) for n in ("z", "b", "a")}
    wanted = [Declared(n, False, "q", "c", "s") for n in ("b", "new")]
    assert [a.name for a in plan(wanted, stored)] == ["b", "new", "a", "z"]
