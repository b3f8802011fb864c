"""The deploy decision, as a pure function: ``plan(declared, current) -> [Action]``.

It follows flink-sql-runner's graph (see the seed) and fixes what it gets wrong:
- "query changed" compares fingerprints of the parsed query, target table, sources and output
  shape, not the text: whitespace, comments and keyword case keep the version and its state;
- a change that does not touch the running query (description, retry policy) is recorded
  without a restart;
- jobs whose manifest disappeared are listed, and removed only when pruning is asked for;
- a removed job declared again continues from its highest version, so old state is never
  loaded again.

    new job                               -> start clean, version 1 (after a removal: the next)
    running, nothing changed              -> nothing
    running, only description/retry       -> update (no restart)
    running, run config changed           -> stop gracefully; query changed ? new version,
                                             clean state : restart from the state just saved
    not running, nothing/config changed   -> start from the latest checkpoint of the version
                                             (error if it ran before and the checkpoint is gone)
    not running, query changed            -> new version, clean state
    batch job, new or changed             -> register (a query change: a new version)
    mode changed                          -> new version: start clean, or register (a stream
                                             job that ran is stopped and removed)
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from sparkgate.states import ActionKind


@dataclass(frozen=True)
class Declared:
    """A job as its manifest declares it, reduced to what the decision needs."""

    name: str
    batch: bool
    query: str  # fingerprint: SQL/code, target table, sources, output mode, partitioning
    run_config: str  # fingerprint: Spark properties, trigger, sink options
    supervision: str  # fingerprint: description, retry policy (no restart needed)


@dataclass(frozen=True)
class Current:
    """A job as the store knows it."""

    name: str
    version: int
    batch: bool
    query: str
    run_config: str
    supervision: str
    running: bool  # its stream job runs, or is on its way to (pending, starting, restarting)
    started_before: bool  # it has run at some point in this version
    has_checkpoint: bool  # the current version's checkpoint directory holds state
    removed: bool = False  # pruned: declaring it again starts its next version clean


@dataclass(frozen=True)
class Action:
    name: str
    kind: ActionKind
    version: int | None  # the version that will run (or be stored) afterwards
    reason: str

    @property
    def stops(self) -> bool:
        """It stops the running query first (a REGISTER may too: see ``decide``)."""
        return self.kind in {ActionKind.RESTART_CLEAN, ActionKind.RESTART_RESUME, ActionKind.REMOVE}

    @property
    def starts(self) -> bool:
        return self.kind in {
            ActionKind.START_CLEAN,
            ActionKind.RESUME,
            ActionKind.RESTART_CLEAN,
            ActionKind.RESTART_RESUME,
        }

    @property
    def clean_state(self) -> bool:
        return self.kind in {ActionKind.START_CLEAN, ActionKind.RESTART_CLEAN}


def plan(
    declared: Iterable[Declared], current: Mapping[str, Current], *, prune: bool = False
) -> list[Action]:
    """One action per job, declared ones first (in the order given), then orphans by name."""
    actions = []
    names = set()
    for job in declared:
        names.add(job.name)
        actions.append(decide(job, current.get(job.name)))
    for name in sorted(set(current) - names):
        orphan = current[name]
        if orphan.removed:
            continue
        if prune:
            reason = "its manifest is gone and --prune was given"
            actions.append(Action(name, ActionKind.REMOVE, None, reason))
        else:
            reason = "its manifest is gone; deploy with --prune to remove it"
            actions.append(Action(name, ActionKind.ORPHANED, orphan.version, reason))
    return actions


def decide(job: Declared, current: Current | None) -> Action:
    name = job.name
    if current is None or current.removed:
        kind = ActionKind.REGISTER if job.batch else ActionKind.START_CLEAN
        new = "new batch job" if job.batch else "new job"
        if current is None:
            return Action(name, kind, 1, new)
        why = f"{new}: declared again after its removal at version {current.version}"
        return Action(name, kind, current.version + 1, why)
    if job.batch != current.batch:
        if job.batch:
            why = "mode changed to batch"
            if current.running:
                why += ": the stream job is stopped and removed"
            return Action(name, ActionKind.REGISTER, current.version + 1, why)
        return Action(
            name, ActionKind.START_CLEAN, current.version + 1, "mode changed to streaming"
        )

    query_changed = job.query != current.query
    config_changed = job.run_config != current.run_config
    supervision_changed = job.supervision != current.supervision

    if job.batch:
        if query_changed:
            return Action(name, ActionKind.REGISTER, current.version + 1, "query changed")
        if config_changed or supervision_changed:
            return Action(name, ActionKind.REGISTER, current.version, "configuration changed")
        return Action(name, ActionKind.NOTHING, current.version, "unchanged")

    if current.running:
        if query_changed:
            return Action(
                name,
                ActionKind.RESTART_CLEAN,
                current.version + 1,
                "query changed: stop, then start a new version with clean state",
            )
        if config_changed:
            return Action(
                name,
                ActionKind.RESTART_RESUME,
                current.version,
                "configuration changed: stop, then resume from the saved state",
            )
        if supervision_changed:
            return Action(
                name, ActionKind.UPDATE, current.version, "description or retry policy changed"
            )
        return Action(name, ActionKind.NOTHING, current.version, "running and unchanged")

    if query_changed:
        return Action(
            name, ActionKind.START_CLEAN, current.version + 1, "query changed: new version"
        )
    if not current.has_checkpoint:
        if current.started_before:
            return Action(
                name,
                ActionKind.ERROR,
                current.version,
                f"version {current.version} ran before but its checkpoint is gone; "
                "change the query to start a new version, or restore the checkpoint",
            )
        return Action(name, ActionKind.START_CLEAN, current.version, "never started")
    why = "configuration changed: " if config_changed or supervision_changed else ""
    return Action(name, ActionKind.RESUME, current.version, f"{why}resume from the checkpoint")
