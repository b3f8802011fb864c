"""Backing off after NO_EXECUTORS: when engines of one placement fail one after another because
the cluster gave them no executor in time, the next is launched only after an exponential,
capped delay, so a warm pool or a shared engine does not start, wait and fail in a loop. Pure.

A placement is an engine kind and its share key (``dedicated``/None: the warm pool and the
engines of batches; ``shared``/``user:alice``; ``streaming``/...): the engines it launches ask
the same cluster for the same resources. Its history, newest first, decides:

- a ``failed`` engine whose error is ``NO_EXECUTORS`` counts one more attempt;
- a ``starting`` engine is still trying: skipped;
- anything else (an engine that started, whatever came later, or one that failed otherwise)
  ends the run of failures: the count starts again from zero.

After ``n`` such failures in a row the next launch waits ``backoff_delay(n - 1)`` (the stream
restarts' function) from the last failure: ``min, 2 min, 4 min, ...`` up to ``max``.

    backoff = no_executors_backoff(history, minimum=10, maximum=600)
    if backoff is not None and not backoff.allows(now): ...  # wait until backoff.next_at
"""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Sequence
from dataclasses import dataclass, replace

from sparkgate.recorded import ErrorCode, RecordedError
from sparkgate.states import EngineState
from sparkgate.store.records import EngineRecord
from sparkgate.stream_spec import RetryPolicy
from sparkgate.streaming.backoff import backoff_delay

HISTORY = 32  # engines of a placement read back; the delay is at its cap long before


@dataclass(frozen=True)
class Backoff:
    attempt: int  # NO_EXECUTORS failures in a row
    last_failed_at: float
    next_at: float  # when the placement may launch an engine again

    def allows(self, now: float) -> bool:
        return now >= self.next_at

    def to_json(self) -> dict[str, float | int]:
        return {"attempt": self.attempt, "next_attempt_at": self.next_at}


def failed_for_no_executors(engine: EngineRecord) -> bool:
    return (
        engine.state is EngineState.FAILED
        and engine.error is not None
        and engine.error.code == ErrorCode.NO_EXECUTORS
    )


def no_executors_backoff(
    history: Sequence[EngineRecord], *, minimum: float, maximum: float
) -> Backoff | None:
    """The backoff a placement is in, from its engines newest first; None: launch freely."""
    failures: list[EngineRecord] = []
    for engine in history:
        if engine.state is EngineState.STARTING:
            continue
        if not failed_for_no_executors(engine):
            break
        failures.append(engine)
    if not failures:
        return None
    last = failures[0]
    failed_at = last.finished_at if last.finished_at is not None else last.updated_at
    policy = RetryPolicy(min_backoff=minimum, max_backoff=max(minimum, maximum))
    delay = backoff_delay(len(failures) - 1, policy)
    return Backoff(len(failures), failed_at, failed_at + delay)


def no_executors_error(
    error: RecordedError,
    engine: EngineRecord,
    earlier: Sequence[EngineRecord],
    *,
    now: float,
    minimum: float,
    maximum: float,
) -> RecordedError:
    """The error an engine failing NO_EXECUTORS records: ``error`` with the attempt it was
    (``earlier``: the placement's older engines, newest first) and when the next engine of its
    placement may start, so its record (``sparkgate engines``, ``GET /v1/engines``) says it."""
    failed = dataclasses.replace(
        engine, state=EngineState.FAILED, error=error, finished_at=now, updated_at=now
    )
    backoff = no_executors_backoff([failed, *earlier], minimum=minimum, maximum=maximum)
    assert backoff is not None
    when = time.strftime("%H:%M:%S UTC", time.gmtime(backoff.next_at))
    message = (
        f"{error.message} Attempt {backoff.attempt} in a row for this placement; "
        f"the next engine may start at {when}."
    ).strip()
    return replace(error.with_params(**backoff.to_json()), message=message)
