"""The event bus: a subscriber runs outside the publisher's context, so a job's host guard (a context variable set
while it holds its lease) never follows an event into a subscriber or the tasks it starts."""

from __future__ import annotations

import asyncio
from dataclasses import dataclass

from services.events import EventBus
from services.hosts.fence import check_guard, guarded


@dataclass(frozen=True)
class Happened:
    n: int


async def test_a_subscriber_does_not_inherit_the_publishers_host_guard() -> None:
    bus = EventBus(retries=0)
    refused: list[str] = []
    later: list[asyncio.Task[None]] = []

    async def lapsed_lease() -> None:
        raise RuntimeError("lease lost")

    async def read_host_later() -> None:
        try:
            await check_guard()  # what every fenced host action does first
        except RuntimeError as e:
            refused.append(str(e))

    async def subscriber(_e: Happened) -> None:
        await read_host_later()
        later.append(asyncio.create_task(read_host_later()))

    bus.subscribe(Happened, subscriber)
    with guarded(lapsed_lease):
        await bus.publish(Happened(1))
        try:
            await check_guard()
        except RuntimeError:
            refused.append("publisher")
    await asyncio.gather(*later)
    assert refused == ["publisher"]
