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

from sparkgate.stream_spec import RetryPolicy


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
