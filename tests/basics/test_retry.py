"""The one retry helper: delays grow and cap, jitter stays below the cap, retries stop when told."""

from __future__ import annotations

import time

import pytest

from services.retry import Backoff, retry_async


def test_delays_double_then_cap_without_jitter() -> None:
    b = Backoff(initial_s=0.1, max_s=1.0, jitter=0.0)
    assert [b.delay(n) for n in range(6)] == [0.1, 0.2, 0.4, 0.8, 1.0, 1.0]
    assert b.delay(10_000) == 1.0  # no overflow on long outages
    assert b.delay(0, at_least=3.0) == 3.0  # a server's Retry-After wins


def test_full_jitter_stays_under_the_exponential_bound() -> None:
    b = Backoff(initial_s=0.1, max_s=1.0)
    draws = [b.delay(3) for _ in range(500)]
    assert all(0.0 <= d <= 0.8 for d in draws)
    assert max(draws) - min(draws) > 0.3  # really spread, not a constant


async def test_retries_named_errors_until_success() -> None:
    calls: list[float] = []

    async def flaky() -> str:
        calls.append(time.monotonic())
        if len(calls) < 3:
            raise ConnectionError("down")
        return "ok"

    assert await retry_async(flaky, retry_on=(ConnectionError,), backoff=Backoff(0.01, 0.05, jitter=0.0)) == "ok"
    assert len(calls) == 3
    assert calls[2] - calls[1] >= 0.015  # waited the doubled delay


async def test_other_errors_are_not_retried() -> None:
    calls = 0

    async def broken() -> None:
        nonlocal calls
        calls += 1
        raise ValueError("a bug, not a fault")

    with pytest.raises(ValueError):
        await retry_async(broken, retry_on=(ConnectionError,))
    assert calls == 1


async def test_gives_up_after_attempts_with_the_last_error() -> None:
    calls = 0

    async def down() -> None:
        nonlocal calls
        calls += 1
        raise ConnectionError(f"try {calls}")

    with pytest.raises(ConnectionError, match="try 4"):
        await retry_async(down, retry_on=(ConnectionError,), attempts=4, backoff=Backoff(0.001, 0.002))
    assert calls == 4


async def test_gives_up_after_a_deadline() -> None:
    t0 = time.monotonic()

    async def down() -> None:
        raise ConnectionError("down")

    with pytest.raises(ConnectionError):
        await retry_async(down, retry_on=(ConnectionError,), give_up_after_s=0.2, backoff=Backoff(0.02, 0.05))
    assert 0.15 < time.monotonic() - t0 < 1.0
