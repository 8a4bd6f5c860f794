"""The composition helper end to end over SSH: two hosts followed by one watch, a restart loop written into
one host's journal becomes one alert on that host; stopping releases the journal leases. And the
host-contact messages."""

from __future__ import annotations

import asyncio
import os
import sys
from datetime import UTC, datetime, timedelta
from pathlib import Path

from incidents_kit import RecordingOutbox, start_journal_host, stop_journal_host, wait_for

from handlers.incident_view import IncidentNotifier
from services.events import EventBus
from services.hosts.pool import HostPool
from services.incidents.types import IncidentPolicy
from services.incidents.watch import build_incident_watch
from services.journal.follower import HostContactLost, HostContactRestored
from services.store.db import Database
from services.store.leases import Leases

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks"))
from bench_fleet import _loop_entries


async def test_watch_follows_every_host_and_alerts_on_the_looping_one(tmp_path: Path, sqlite_db: Database) -> None:
    hosts = [await start_journal_host(tmp_path / f"h{i}", f"gpu-{i}") for i in range(2)]
    pool = HostPool(jh.host for jh in hosts)
    bus = EventBus()
    outbox = RecordingOutbox()
    IncidentNotifier(outbox, "C-alerts").subscribe(bus)
    watch = build_incident_watch(sqlite_db, bus, pool, holder="bot-1", heartbeat_s=0.3,
                                 policy=IncidentPolicy(window_s=60, stable_window_s=600, tick_s=0.2))
    task = asyncio.create_task(watch.run())
    try:
        await wait_for(lambda: watch.supervisor.owned() == {"gpu-0", "gpu-1"}, 15, "both hosts followed")

        def following() -> bool:
            return all(s.entries > 0 for s in watch.supervisor.statuses())

        for _ in range(100):
            if following():
                break
            for jh in hosts:
                jh.writer.append({"_SYSTEMD_UNIT": "sglang.service", "MESSAGE": "warm-up"})
            await asyncio.sleep(0.1)
        assert following()
        for n in (1, 2):
            for fields in _loop_entries(os.urandom(16).hex(), n):
                hosts[1].writer.append(fields)
        await wait_for(lambda: bool(outbox.main_keys()), 15, "the alert")
        (key,) = outbox.main_keys()
        first = next(s for s in outbox.sent if s.key == key).reply
        assert "gpu-1" in first.text and "kv_cache_oom" in first.text
        assert [i.host for i in await watch.monitor.open_incidents()] == ["gpu-1"]
    finally:
        task.cancel()
        await asyncio.gather(task, return_exceptions=True)
        for jh in hosts:
            await stop_journal_host(jh)
    leases = Leases(sqlite_db)
    assert await leases.held_by("bot-1") == [], "leases are released on the way out"


async def test_contact_lost_and_restored_messages_edit_one_key() -> None:
    outbox = RecordingOutbox()
    notifier = IncidentNotifier(outbox, "C-alerts")
    since = datetime(2026, 11, 29, 14, 2, tzinfo=UTC)
    await notifier.on_contact_lost(HostContactLost("gpu-2", since, "Cannot reach host 'gpu-2'"))
    await notifier.on_contact_restored(HostContactRestored("gpu-2", since, since + timedelta(minutes=7)))
    assert [s.key for s in outbox.sent] == ["contact:gpu-2", "contact:gpu-2"]
    assert "Lost contact with gpu-2 since 14:02 UTC" in outbox.sent[0].reply.text
    assert "restored at 14:09 UTC" in outbox.sent[1].reply.text and "7 min" in outbox.sent[1].reply.text
