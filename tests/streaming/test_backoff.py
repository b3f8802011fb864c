"""The exponential backoff against the seed's tables, and when to give up."""

from __future__ import annotations

import pytest

from sparkgate.stream_spec import RetryPolicy
from sparkgate.streaming.backoff import after_failure, backoff_delay, is_stable

# The seed's tables (PSTL sinks, "Exponential Backoff"): failures in a row -> delay in ms.
NO_RANDOM = [(0, 1000), (1, 2000), (2, 4000), (3, 8000), (4, 16000)]
RANDOM_0_1 = [(0, 1023), (1, 2064), (2, 4094), (3, 8495), (4, 16062)]


@pytest.mark.parametrize(("failures", "delay_ms"), NO_RANDOM)
def test_defaults_give_the_seeds_delays_exactly(failures: int, delay_ms: int) -> None:
    assert backoff_delay(failures, RetryPolicy()) * 1000 == delay_ms


@pytest.mark.parametrize(("failures", "delay_ms"), RANDOM_0_1)
def test_a_random_factor_stretches_within_its_bounds(failures: int, delay_ms: int) -> None:
    policy = RetryPolicy(random_factor=0.1)
    base = 1000 * 2**failures
    # The seed's sample delays lie in [base, base * 1.1), as ours do for every draw...
    assert base <= delay_ms < base * 1.1
    assert backoff_delay(failures, policy, rand=lambda: 0.0) * 1000 == base
    assert backoff_delay(failures, policy, rand=lambda: 0.999999) * 1000 < base * 1.1
    # ...and the draw that gives the seed's delay gives exactly it.
    draw = (delay_ms / base - 1) / 0.1
    assert backoff_delay(failures, policy, rand=lambda: draw) * 1000 == pytest.approx(delay_ms)


def test_max_backoff_caps_the_delay_even_after_many_failures() -> None:
    policy = RetryPolicy(min_backoff=1.0, max_backoff=60.0)
    assert [backoff_delay(n, policy) for n in (5, 6, 7, 50, 5000)] == [32.0, 60.0, 60.0, 60.0, 60.0]


def test_small_backoffs() -> None:
    policy = RetryPolicy(min_backoff=0.00025, max_backoff=0.1)  # 250us .. 100ms
    assert [backoff_delay(n, policy) for n in range(4)] == [0.00025, 0.0005, 0.001, 0.002]


def test_policy_rejects_nonsense() -> None:
    with pytest.raises(ValueError, match="more than"):
        RetryPolicy(min_backoff=10, max_backoff=1)
    with pytest.raises(ValueError, match=r"random\.factor"):
        RetryPolicy(random_factor=-0.1)
    with pytest.raises(ValueError, match=r"max\.attempts"):
        RetryPolicy(max_attempts=-1)
    assert RetryPolicy.from_json(RetryPolicy(max_attempts=3).to_json()) == RetryPolicy(
        max_attempts=3
    )


def test_restarts_until_max_attempts_then_gives_up() -> None:
    policy = RetryPolicy(max_attempts=2, min_backoff=1.0)
    first = after_failure(policy, 0, ran_for=0.5, made_progress=False)
    second = after_failure(policy, first.failures, ran_for=0.5, made_progress=False)
    third = after_failure(policy, second.failures, ran_for=0.5, made_progress=False)
    assert (first.restart, first.delay, first.failures) == (True, 1.0, 1)
    assert (second.restart, second.delay, second.failures) == (True, 2.0, 2)
    assert (third.restart, third.failures) == (False, 3)
    assert "gave up after 2 restarts in a row (retry.max.attempts = 2)" in third.reason


def test_retries_disabled_give_up_at_once() -> None:
    decision = after_failure(RetryPolicy(enabled=False), 0, ran_for=100, made_progress=True)
    assert not decision.restart and "retry.enabled = false" in decision.reason


def test_a_stable_run_resets_the_failure_count() -> None:
    policy = RetryPolicy(stable_period=30.0)
    unstable = after_failure(policy, 4, ran_for=29.0, made_progress=True)
    idle = after_failure(policy, 4, ran_for=300.0, made_progress=False)
    stable = after_failure(policy, 4, ran_for=30.0, made_progress=True)
    assert (unstable.failures, unstable.delay) == (5, 16.0)
    assert (idle.failures, idle.delay) == (5, 16.0)  # up but doing nothing is not healthy
    assert (stable.failures, stable.delay) == (1, 1.0)
    assert is_stable(policy, running_for=30.0, made_progress=True)
    assert not is_stable(policy, running_for=30.0, made_progress=False)
