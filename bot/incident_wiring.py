"""Wiring of the incident watch: the fleet's journal followers and incident monitor, and their notifier.

Built by the composition root when hosts are configured: `services.incidents.watch` follows each host
whose `journal:<host>` lease this process holds (so several bot processes share a fleet, and one
takes over when another dies) and turns entries into incidents; the `IncidentNotifier` sends alerts,
their thread updates and resolutions through the outbox to the alert channel.
"""

from __future__ import annotations

import asyncio
import contextlib
from contextlib import AsyncExitStack
from typing import Any

from bot.settings import Settings
from handlers.incident_view import IncidentNotifier
from services.incidents import IncidentPolicy, IncidentWatch, build_incident_watch


async def start_incident_watch(settings: Settings, stack: AsyncExitStack, *, db: Any, bus: Any, audit: Any,
                               hosts: Any, outbox: Any, holder: str, time_scale: float) -> IncidentWatch:
    p = settings.policy
    policy = IncidentPolicy(threshold=p.restart_loop_threshold, window_s=p.restart_loop_window_s,
                            stable_window_s=p.incident_stable_window_s,
                            auto_rollback=p.auto_rollback).scaled(time_scale)
    watch = build_incident_watch(db, bus, hosts, holder=holder, policy=policy, audit=audit)
    IncidentNotifier(outbox, channel=settings.slack.alert_channel or "alerts",
                     timeline=watch.monitor.store.events).subscribe(bus)
    task = asyncio.create_task(watch.run(), name="incident-watch")

    async def stop() -> None:
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError, Exception):
            await task

    stack.push_async_callback(stop)
    return watch
