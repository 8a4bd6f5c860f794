"""The in-process event bus: services publish past-tense facts, subscribers react.

Events are frozen dataclasses (``JobProgressed``, ``IncidentOpened``...). `publish` awaits every
subscriber of the event's type in order; a subscriber that raises is logged and does not stop
the others or the publisher.
"""

from __future__ import annotations

import logging
from collections import defaultdict
from collections.abc import Awaitable, Callable
from typing import Any, TypeVar

log = logging.getLogger(__name__)

E = TypeVar("E")
Handler = Callable[[Any], Awaitable[None]]


class EventBus:
    """Type-keyed publish/subscribe within one process."""

    def __init__(self) -> None:
        self._subs: dict[type, list[Handler]] = defaultdict(list)

    def subscribe(self, event_type: type[E], handler: Callable[[E], Awaitable[None]]) -> None:
        self._subs[event_type].append(handler)

    async def publish(self, event: object) -> None:
        for handler in list(self._subs.get(type(event), ())):
            try:
                await handler(event)
            except Exception:
                log.exception("event subscriber failed for %s", type(event).__name__)
