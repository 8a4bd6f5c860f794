"""The scheduler: fires the commands of the `schedules` table through the router (APScheduler 3.x).

Behind `start_scheduler` so a move to APScheduler 4 touches one place. Only one bot process runs
it (the `scheduler` lease). The table is re-read every `sync_s` seconds, so schedules added or
removed by any process take effect. At start, runs missed while no bot was running are reported
in the schedule's channel — never silently dropped, and not replayed on their own.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from datetime import datetime
from typing import Any

from apscheduler.schedulers.asyncio import AsyncIOScheduler

from handlers.contract import Actor, ChatMessage, Reply
from services.store import Leases, ScheduleInfo, Schedules, build_trigger, missed_runs, utcnow

log = logging.getLogger(__name__)


class SchedulerService:
    """Owns the APScheduler instance and keeps it in line with the table."""

    def __init__(self, schedules: Schedules, leases: Leases, *, dispatch: Any, outbox: Any, holder: str,
                 sync_s: float = 30.0) -> None:
        self.schedules = schedules
        self.leases = leases
        self.dispatch = dispatch
        self.outbox = outbox
        self.holder = holder
        self.sync_s = sync_s
        self.scheduler = AsyncIOScheduler(timezone="UTC")
        self._known: dict[int, str] = {}
        self._task: asyncio.Task[None] | None = None
        self._leader = False

    async def start(self) -> None:
        self.scheduler.start()
        self._task = asyncio.create_task(self._loop(), name="scheduler-sync")

    async def stop(self) -> None:
        if self._task:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await self._task
        self.scheduler.shutdown(wait=False)
        if self._leader:
            await self.leases.release("scheduler", self.holder)

    async def _loop(self) -> None:
        while True:
            try:
                leader = await self.leases.acquire("scheduler", self.holder)
                if leader and not self._leader:
                    await self._report_missed()
                self._leader = leader
                if leader:
                    await self.sync()
                else:
                    self._clear()
            except asyncio.CancelledError:
                raise
            except Exception:
                log.exception("scheduler sync failed; retrying")
            await asyncio.sleep(self.sync_s)

    def _clear(self) -> None:
        for sid in list(self._known):
            with contextlib.suppress(Exception):
                self.scheduler.remove_job(f"schedule-{sid}")
            self._known.pop(sid)

    async def sync(self) -> None:
        active = {s.id: s for s in await self.schedules.active()}
        for sid in list(self._known):
            if sid not in active:
                with contextlib.suppress(Exception):
                    self.scheduler.remove_job(f"schedule-{sid}")
                self._known.pop(sid)
        for sid, s in active.items():
            if sid in self._known:
                continue
            self.scheduler.add_job(self.fire, build_trigger(s.trigger), args=[s], id=f"schedule-{sid}",
                                   misfire_grace_time=3600, coalesce=True, max_instances=1)
            self._known[sid] = s.spec

    async def _report_missed(self) -> None:
        now = utcnow()
        for s in await self.schedules.active():
            if s.last_fired_at is None:
                continue
            missed = missed_runs(s.trigger, s.last_fired_at, now)
            if not missed:
                continue
            when = ", ".join(m.strftime("%Y-%m-%d %H:%M UTC") for m in missed[:5])
            more = f" and {len(missed) - 5} more" if len(missed) > 5 else ""
            await self.outbox.send(f"schedule:{s.id}:missed:{int(now.timestamp())}", Reply(
                text=f"Schedule {s.id} ({s.spec}: `{s.command_text}`) missed {len(missed)} run(s) while no bot "
                     f"was running: {when}{more}. They were not replayed; the next run is on schedule.",
                tone="warning"), channel=s.channel or "console")
            await self.schedules.fired(s.id, now)

    async def fire(self, s: ScheduleInfo) -> None:
        at: datetime = utcnow()
        await self.schedules.fired(s.id, at)
        msg = ChatMessage(text=s.command_text, actor=Actor(s.created_by, f"schedule {s.id}", s.transport),
                          channel=s.channel or "console")
        reply: Reply = await self.dispatch(msg)
        await self.outbox.send(f"schedule:{s.id}:{int(at.timestamp())}",
                               Reply(text=f"⏰ schedule {s.id} ({s.spec}) ran `{s.command_text}`: {reply.text}",
                                     tables=reply.tables, tone=reply.tone), channel=s.channel or "console")
