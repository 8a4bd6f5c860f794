"""The scripted demo's end: an incident counts as settled only once its resolution has reached the outbox (the
notifier's handler ran), not when the database says resolved (the demo finished in between once, session 13)."""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime

from bot.demo import IncidentsTold
from services.events import EventBus
from services.incidents import IncidentInfo, IncidentOpened, IncidentResolved


def _info(incident_id: int) -> IncidentInfo:
    now = datetime.now(UTC)
    return IncidentInfo(id=incident_id, host="gpu-1", unit="sglang.service", cause="kv_cache_oom", config_hash="h",
                        state="open", summary="", confidence=0.9, evidence=(), recommendation="", config_change=None,
                        ran_before=None, stale_pids=(), restarts=2, opened_at=now, last_event_at=now,
                        resolved_at=None, muted_until=None, acknowledged_by=None, resolution="")


async def test_an_incident_is_untold_until_the_notifier_has_handled_its_resolution() -> None:
    bus = EventBus()
    enqueued: list[int] = []
    release = asyncio.Event()

    async def notifier(ev: IncidentResolved) -> None:  # subscribed first, as build_core's notifier is
        await release.wait()
        enqueued.append(ev.incident.id)

    bus.subscribe(IncidentResolved, notifier)
    told = IncidentsTold(bus)
    await bus.publish(IncidentOpened(_info(1)))
    await bus.publish(IncidentOpened(_info(2)))
    assert told.untold == {1, 2}
    resolving = asyncio.create_task(bus.publish(IncidentResolved(_info(1), 3.0, "fixed by rollback")))
    await asyncio.sleep(0.05)
    assert told.untold == {1, 2} and enqueued == []  # resolved in the database, its message not yet in the outbox
    release.set()
    await resolving
    assert enqueued == [1] and told.untold == {2}
