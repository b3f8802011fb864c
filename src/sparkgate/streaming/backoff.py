"""Exponential backoff for restarting failed streaming queries (and relaunching stream jobs).

A query that fails is restarted from its checkpoint after

    delay = min(max_backoff, min_backoff * 2 ** failures) * (1 + random_factor * r),  r in [0, 1)

where ``failures`` counts the failures in a row before this one. With the defaults (1s, 1h, 0)
the delays are exactly 1s, 2s, 4s, 8s, 16s, ... A query that then runs healthily (makes progress
for ``stable_period``) starts counting from zero again. After ``max_attempts`` restarts in a row
that did not last, the query fails for good.
"""

from __future__ import annotations

import random
from collections.abc import Callable
from dataclasses import dataclass

MAX_ATTEMPTS_DEFAULT = 2_147_483_647


@dataclass(frozen=True)
class RetryPolicy:
    enabled: bool = True
    max_attempts: int = MAX_ATTEMPTS_DEFAULT
    min_backoff: float = 1.0  # seconds
    max_backoff: float = 3600.0
    random_factor: float = 0.0
    stable_period: float = 60.0  # running this long with progress resets the failure count

    def __post_init__(self) -> None:
        if self.max_attempts < 0:
            raise ValueError("retry.max.attempts must be 0 or more")
        if self.min_backoff < 0 or self.max_backoff < 0:
            raise ValueError("backoffs must not be negative")
        if self.min_backoff > self.max_backoff:
            raise ValueError(
                f"retry.min.backoff ({self.min_backoff:g}s) is more than "
                f"retry.max.backoff ({self.max_backoff:g}s)"
            )
        if self.random_factor < 0:
            raise ValueError("retry.random.factor must be 0 or more")
        if self.stable_period < 0:
            raise ValueError("retry.stable.period must not be negative")

    def to_json(self) -> dict[str, object]:
        return {
            "enabled": self.enabled,
            "max_attempts": self.max_attempts,
            "min_backoff": self.min_backoff,
            "max_backoff": self.max_backoff,
            "random_factor": self.random_factor,
            "stable_period": self.stable_period,
        }

    @classmethod
    def from_json(cls, data: dict[str, object]) -> RetryPolicy:
        return cls(
            enabled=bool(data["enabled"]),
            max_attempts=int(str(data["max_attempts"])),
            min_backoff=float(str(data["min_backoff"])),
            max_backoff=float(str(data["max_backoff"])),
            random_factor=float(str(data["random_factor"])),
            stable_period=float(str(data["stable_period"])),
        )


def backoff_delay(
    failures: int, policy: RetryPolicy, rand: Callable[[], float] = random.random
) -> float:
    """Seconds to wait before the restart that follows ``failures`` earlier failures in a row.

    >>> [backoff_delay(n, RetryPolicy()) for n in range(5)]
    [1.0, 2.0, 4.0, 8.0, 16.0]
    """
    if failures < 0:
        raise ValueError("failures must be 0 or more")
    # 2 ** 1100 overflows a float; long before that the cap applies anyway.
    base = policy.max_backoff if failures >= 1024 else policy.min_backoff * 2.0**failures
    return min(policy.max_backoff, base) * (1.0 + policy.random_factor * rand())


@dataclass(frozen=True)
class Decision:
    """What to do about a failure: restart after ``delay``, or give up (``delay`` None)."""

    failures: int  # failures in a row, this one included
    delay: float | None
    reason: str = ""  # why not, when giving up

    @property
    def restart(self) -> bool:
        return self.delay is not None


def after_failure(
    policy: RetryPolicy,
    failures_before: int,
    *,
    ran_for: float,
    made_progress: bool,
    rand: Callable[[], float] = random.random,
) -> Decision:
    """Restart or give up, for a run that lasted ``ran_for`` seconds before failing.

    A run that made progress for at least the stable period wipes the earlier failures out.
    """
    if made_progress and ran_for >= policy.stable_period:
        failures_before = 0
    failures = failures_before + 1
    if not policy.enabled:
        return Decision(failures, None, "retries are disabled (retry.enabled = false)")
    if failures_before >= policy.max_attempts:
        return Decision(
            failures,
            None,
            f"gave up after {failures_before} restart{'s' if failures_before != 1 else ''} "
            f"in a row (retry.max.attempts = {policy.max_attempts})",
        )
    return Decision(failures, backoff_delay(failures_before, policy, rand))


def is_stable(policy: RetryPolicy, *, running_for: float, made_progress: bool) -> bool:
    """True once a run has lasted the stable period with progress: its failure count resets."""
    return made_progress and running_for >= policy.stable_period
