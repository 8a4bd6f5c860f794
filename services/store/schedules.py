"""Schedules: recurring commands kept in the `schedules` table, and the catch-up rule for missed runs.

The table is the source of truth; the scheduler (APScheduler 3.x, in `bot.scheduler`) only fires
triggers built from it. A trigger is stored as plain values: ``{"kind": "cron", "hour": 2,
"minute": 0, "day_of_week": null}`` or ``{"kind": "interval", "every_seconds": 21600}``. Runs
missed while no bot was running are found by `missed_runs` and reported, never silently dropped.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from apscheduler.triggers.cron import CronTrigger
from apscheduler.triggers.interval import IntervalTrigger
from sqlalchemy import select, update

from services.errors import NotFound, UserInputError
from services.store.audit import AuditActor, AuditLog
from services.store.db import Database
from services.store.models import Schedule, utcnow

MAX_SCHEDULES = 50
MIN_INTERVAL_S = 600


@dataclass(frozen=True)
class ScheduleInfo:
    id: int
    spec: str
    trigger: dict[str, Any]
    command_text: str
    channel: str
    transport: str
    created_by: str
    created_at: datetime
    last_fired_at: datetime | None


def _info(s: Schedule) -> ScheduleInfo:
    return ScheduleInfo(s.id, s.spec, dict(s.trigger or {}), s.command_text, s.channel, s.transport, s.created_by,
                        s.created_at, s.last_fired_at)


def build_trigger(trigger: dict[str, Any]) -> Any:
    """An APScheduler 3.x trigger (UTC) from the stored plain values."""
    if trigger.get("kind") == "interval":
        return IntervalTrigger(seconds=int(trigger["every_seconds"]), timezone="UTC")
    kwargs: dict[str, Any] = {"hour": int(trigger.get("hour") or 0), "minute": int(trigger.get("minute") or 0)}
    if trigger.get("day_of_week"):
        kwargs["day_of_week"] = str(trigger["day_of_week"])
    return CronTrigger(timezone="UTC", **kwargs)


def missed_runs(trigger: dict[str, Any], since: datetime, now: datetime, limit: int = 100) -> list[datetime]:
    """Fire times strictly after `since` and before `now` (what a stopped bot missed)."""
    if trigger.get("kind") == "interval":
        step = timedelta(seconds=int(trigger["every_seconds"]))
        times: list[datetime] = []
        t = since + step
        while t < now and len(times) < limit:
            times.append(t)
            t += step
        return times
    trig = build_trigger(trigger)
    out: list[datetime] = []
    prev: datetime | None = None
    t = since
    while len(out) < limit:
        nxt = trig.get_next_fire_time(prev, t)
        if nxt is None or nxt >= now:
            break
        if nxt > since:
            out.append(nxt)
        prev, t = nxt, nxt + timedelta(microseconds=1)
    return out


class Schedules:
    """Add, list, remove schedules; record firings."""

    def __init__(self, db: Database, audit: AuditLog) -> None:
        self._db = db
        self._audit = audit

    async def add(self, *, trigger: dict[str, Any], spec: str, command_text: str, actor: AuditActor) -> int:
        if trigger.get("kind") == "interval" and int(trigger.get("every_seconds") or 0) < MIN_INTERVAL_S:
            raise UserInputError(f"schedules run at most every {MIN_INTERVAL_S // 60} minutes")
        build_trigger(trigger)
        async with self._db.session() as s:
            count = len((await s.execute(select(Schedule.id).where(Schedule.enabled.is_(True)))).all())
            if count >= MAX_SCHEDULES:
                raise UserInputError(f"there are already {count} schedules (the limit is {MAX_SCHEDULES})")
            row = Schedule(spec=spec, trigger=trigger, command_text=command_text, channel=actor.channel,
                           transport=actor.transport, created_by=actor.id, created_at=utcnow(), enabled=True,
                           last_fired_at=utcnow())
            s.add(row)
            await s.flush()
            await self._audit.record(s, actor=actor, action="schedule-add", command_text=command_text,
                                     detail={"schedule": row.id, "spec": spec})
            return row.id

    async def remove(self, schedule_id: int, actor: AuditActor) -> None:
        async with self._db.session() as s:
            res = await s.execute(update(Schedule).where(Schedule.id == schedule_id, Schedule.enabled.is_(True))
                                  .values(enabled=False))
            if res.rowcount != 1:  # type: ignore[attr-defined]
                raise NotFound(f"there is no schedule {schedule_id}")
            await self._audit.record(s, actor=actor, action="schedule-remove", detail={"schedule": schedule_id})

    async def active(self) -> list[ScheduleInfo]:
        async with self._db.sessions() as s:
            rows = (await s.execute(select(Schedule).where(Schedule.enabled.is_(True))
                                    .order_by(Schedule.id))).scalars().all()
            return [_info(r) for r in rows]

    async def list(self) -> list[tuple[str, ...]]:
        return [(str(i.id), i.spec, i.command_text, i.created_by,
                 i.last_fired_at.strftime("%Y-%m-%d %H:%M UTC") if i.last_fired_at else "—")
                for i in await self.active()]

    async def fired(self, schedule_id: int, at: datetime) -> None:
        async with self._db.session() as s:
            await s.execute(update(Schedule).where(Schedule.id == schedule_id).values(last_fired_at=at))
