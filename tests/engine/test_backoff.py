"""Backing off after NO_EXECUTORS: the pure decision, with times as arguments."""

from __future__ import annotations

from typing import Any

from sparkgate.engine.backoff import no_executors_backoff, no_executors_error
from sparkgate.recorded import RecordedError
from sparkgate.states import EngineKind, EngineState
from sparkgate.store.records import EngineRecord

T = 1_800_000_000.0


def _engine(engine_id: int, state: EngineState, code: str | None = None, at: float = T) -> Any:
    error = None if code is None else RecordedError(code, "...")
    return EngineRecord(
        engine_id, EngineKind.DEDICATED, state, None, {}, None, None, None, None, None, error, 1,
        at - 60, None, None, at if state.value in ("failed", "stopped", "lost") else None, at,
    )  # fmt: skip


def _failed(engine_id: int, at: float) -> Any:
    return _engine(engine_id, EngineState.FAILED, "NO_EXECUTORS", at)


def test_no_failure_no_backoff() -> None:
    assert no_executors_backoff([], minimum=10, maximum=600) is None
    history = [_engine(3, EngineState.RUNNING), _failed(2, T - 100)]
    assert no_executors_backoff(history, minimum=10, maximum=600) is None  # reset by a start


def test_each_failure_in_a_row_doubles_the_wait_up_to_the_cap() -> None:
    waits = []
    for count in range(1, 9):
        history = [_failed(100 - n, T - 1000 * n) for n in range(count)]
        backoff = no_executors_backoff(history, minimum=10, maximum=600)
        assert backoff is not None and backoff.attempt == count
        assert backoff.last_failed_at == T
        waits.append(backoff.next_at - T)
    assert waits == [10, 20, 40, 80, 160, 320, 600, 600]


def test_the_next_attempt_is_allowed_once_its_time_comes() -> None:
    backoff = no_executors_backoff([_failed(2, T), _failed(1, T - 5)], minimum=10, maximum=600)
    assert backoff is not None and backoff.next_at == T + 20
    assert not backoff.allows(T + 19.9) and backoff.allows(T + 20)


def test_starting_engines_are_skipped_and_other_failures_end_the_run() -> None:
    history = [
        _engine(5, EngineState.STARTING),
        _failed(4, T),
        _engine(3, EngineState.FAILED, "ENGINE_START_FAILED"),
        _failed(2, T - 10),
    ]
    backoff = no_executors_backoff(history, minimum=10, maximum=600)
    assert backoff is not None and backoff.attempt == 1 and backoff.next_at == T + 10


def test_a_failing_engine_records_its_attempt_and_the_next_ones_time() -> None:
    earlier = [_failed(2, T - 30), _engine(1, EngineState.STOPPED)]
    error = no_executors_error(
        RecordedError("NO_EXECUTORS", "No executor in 120s."),
        _engine(3, EngineState.STARTING),
        earlier,
        now=T + 5,
        minimum=10,
        maximum=600,
    )
    assert error.code == "NO_EXECUTORS"
    assert (error.param("attempt"), error.param("next_attempt_at")) == (2, T + 25)
    assert error.message.startswith("No executor in 120s. Attempt 2 in a row")
