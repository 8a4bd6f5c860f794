"""The one way pitcrew waits out a passing fault: exponential backoff (with full jitter by default) and
`retry_async`, which retries an awaitable on named exceptions (built on tenacity).

Loops that keep their own state between tries (journal following, outbox delivery) take their delays from
`Backoff.delay(attempt)`; one-shot operations that must get through (a job's final state, the answer to a
command, the bot's first call to Slack) use `retry_async`. Nothing else in pitcrew computes a backoff.
"""

from __future__ import annotations

import logging
import random
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import TypeVar

from tenacity import AsyncRetrying, RetryCallState, retry_if_exception_type, stop_after_attempt, stop_after_delay
from tenacity.stop import stop_base, stop_never
from tenacity.wait import wait_base

T = TypeVar("T")
log = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True)
class Backoff:
    """``initial_s * 2**attempt`` capped at ``max_s``; ``jitter`` is the fraction of it drawn at random (1: full
    jitter, a uniform draw below the bound; 0: the bound itself)."""

    initial_s: float = 0.25
    max_s: float = 5.0
    jitter: float = 1.0

    def delay(self, attempt: int, *, at_least: float = 0.0) -> float:
        """The wait before retry number ``attempt`` (0 for the first retry), never below ``at_least``."""
        raw = min(self.max_s, self.initial_s * float(2 ** min(max(attempt, 0), 30)))
        return max(raw * (1.0 - self.jitter) + raw * self.jitter * random.random(), at_least)


class _BackoffWait(wait_base):
    def __init__(self, backoff: Backoff) -> None:
        self.backoff = backoff

    def __call__(self, retry_state: RetryCallState) -> float:
        return self.backoff.delay(retry_state.attempt_number - 1)


async def retry_async(fn: Callable[[], Awaitable[T]], *, retry_on: tuple[type[BaseException], ...],
                      backoff: Backoff = Backoff(), attempts: int | None = None,
                      give_up_after_s: float | None = None, what: str = "") -> T:
    """Await ``fn()`` until it succeeds, retrying on ``retry_on`` with ``backoff``; after ``attempts`` tries or
    ``give_up_after_s`` seconds (whichever comes first; neither: forever) the last exception is raised."""
    stop: stop_base = stop_never
    if attempts is not None:
        stop = stop_after_attempt(attempts)
    if give_up_after_s is not None:
        stop = stop | stop_after_delay(give_up_after_s) if attempts is not None else stop_after_delay(give_up_after_s)

    def before_sleep(state: RetryCallState) -> None:
        exc = state.outcome.exception() if state.outcome is not None else None
        wait = state.next_action.sleep if state.next_action is not None else 0.0
        log.warning("%s failed (%s); retrying in %.2f s", what or getattr(fn, "__name__", "call"),
                    type(exc).__name__, wait)

    async for attempt in AsyncRetrying(stop=stop, wait=_BackoffWait(backoff), retry=retry_if_exception_type(retry_on),
                                       reraise=True, before_sleep=before_sleep):
        with attempt:
            return await fn()
    raise AssertionError("unreachable: tenacity either returns or re-raises")  # pragma: no cover
