"""The in-process event bus: services publish past-tense facts, subscribers react.

Events are frozen dataclasses (``JobProgressed``, ``IncidentOpened``...). `publish` awaits every
subscriber of the event's type in order. A subscriber that raises is retried through the one retry
helper (`services.retry`; a short backoff: most failures are a database or a chat service briefly away);
one that still fails does not stop the others or the publisher, and is never dropped silently: it is
logged as an error and handed to the bus's `on_failure` hook, which the composition root points at the audit log.

Each subscriber runs in a context of its own (an empty `contextvars.Context`), not the publisher's: a job that
publishes while it holds its host's lease must not lend that lease's guard (`services.hosts.fence`) to a
subscriber, nor to the tasks a subscriber starts (a Home-tab refresh reading the host after the job ended).
"""

from __future__ import annotations

import asyncio
import contextvars
import logging
from collections import defaultdict
from collections.abc import Awaitable, Callable
from typing import Any, TypeVar

from services.retry import Backoff, retry_async

log = logging.getLogger(__name__)

E = TypeVar("E")
Handler = Callable[[Any], Awaitable[None]]
FailureHook = Callable[[object, str, BaseException], Awaitable[None]]


class EventBus:
    """Type-keyed publish/subscribe within one process."""

    def __init__(self, *, retries: int = 2, backoff: Backoff = Backoff(initial_s=0.1, max_s=0.4, jitter=0.0)) -> None:
        self._subs: dict[type, list[Handler]] = defaultdict(list)
        self.retries = retries
        self.backoff = backoff
        self.on_failure: FailureHook | None = None
        self.failures = 0

    def subscribe(self, event_type: type[E], handler: Callable[[E], Awaitable[None]]) -> None:
        self._subs[event_type].append(handler)

    async def publish(self, event: object) -> None:
        for handler in list(self._subs.get(type(event), ())):
            await self._deliver(handler, event)

    async def _deliver(self, handler: Handler, event: object) -> None:
        name = getattr(handler, "__qualname__", repr(handler))

        async def isolated() -> None:
            await asyncio.get_running_loop().create_task(_call(handler, event), context=contextvars.Context())

        try:
            await retry_async(isolated, retry_on=(Exception,), attempts=self.retries + 1, backoff=self.backoff,
                              what=f"event subscriber {name} for {type(event).__name__}")
        except Exception as e:
            self.failures += 1
            log.error("event subscriber %s failed for %s after %d attempts", name, type(event).__name__,
                      self.retries + 1, exc_info=e)
            if self.on_failure is not None:
                try:
                    await self.on_failure(event, name, e)
                except Exception as hook_error:
                    log.error("could not record the failed %s for %s either (%s)", type(event).__name__,
                              name, type(hook_error).__name__)


async def _call(handler: Handler, event: object) -> None:
    await handler(event)
