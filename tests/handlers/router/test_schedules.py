"""Schedules: added and listed by command, fired through the router, missed runs reported not dropped."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

from router_kit import RecordingOutbox, make_router, msg
from sqlalchemy import update

from bot.scheduler import SchedulerService
from handlers.auth import Policy
from handlers.contract import ChatMessage, Reply
from services.store.audit import AuditActor, AuditLog
from services.store.db import Database
from services.store.leases import Leases
from services.store.models import Schedule
from services.store.schedules import Schedules, missed_runs

ADMIN = Policy(roles={"*": "admin"})  # roles fail closed; these tests act as an admin


def test_missed_runs_lists_the_fire_times_in_between() -> None:
    since = datetime(2026, 11, 27, 12, 0, tzinfo=UTC)
    now = datetime(2026, 11, 29, 12, 0, tzinfo=UTC)
    got = missed_runs({"kind": "cron", "hour": 2, "minute": 0}, since, now)
    assert got == [datetime(2026, 11, 28, 2, 0, tzinfo=UTC), datetime(2026, 11, 29, 2, 0, tzinfo=UTC)]
    assert missed_runs({"kind": "interval", "every_seconds": 21600}, since, since + timedelta(hours=13)) != []


async def test_schedule_commands_add_list_remove(db: Database) -> None:
    router, _, _ = await make_router(db, ADMIN)
    router.domain.schedules = Schedules(db, AuditLog(db))
    reply = await router.dispatch(msg("every day at 02:00 sweep steps 1..5 on gpu-1"))
    assert reply.text.startswith("Schedule 1:") and "every day at 02:00" in reply.text
    listed = await router.dispatch(msg("schedules"))
    assert listed.tables and listed.tables[0].rows[0][1] == "every day at 02:00"
    too_often = await router.dispatch(msg("every 1m bench on gpu-1"))
    assert too_often.tone in ("warning", "error")
    assert (await router.dispatch(msg("unschedule 1"))).text == "Schedule 1 removed."
    assert (await router.dispatch(msg("schedules"))).text == "No schedules."


async def test_scheduler_fires_through_dispatch_and_reports_missed_runs(db: Database) -> None:
    schedules = Schedules(db, AuditLog(db))
    sid = await schedules.add(trigger={"kind": "cron", "hour": 2, "minute": 0}, spec="every day at 02:00",
                              command_text="bench on gpu-1", actor=AuditActor("U1", "alice", "slack", "C9"))
    async with db.session() as s:  # the bot was down for three days
        await s.execute(update(Schedule).where(Schedule.id == sid)
                        .values(last_fired_at=datetime.now(UTC) - timedelta(days=3)))
    seen: list[ChatMessage] = []

    async def dispatch(m: ChatMessage) -> Reply:
        seen.append(m)
        return Reply(text="Job 5 queued on gpu-1.")

    outbox: Any = RecordingOutbox()
    svc = SchedulerService(schedules, Leases(db), dispatch=dispatch, outbox=outbox, holder="h", sync_s=0.05)
    await svc.start()
    try:
        import asyncio

        for _ in range(100):  # leadership: the missed runs are reported, then the schedule is registered
            if outbox.sent and svc.scheduler.get_job(f"schedule-{sid}") is not None:
                break
            await asyncio.sleep(0.05)
        (_key, reply, channel, _thread) = outbox.sent[0]
        assert channel == "C9" and "missed 3 run(s)" in reply.text and "not replayed" in reply.text
        assert svc.scheduler.get_job(f"schedule-{sid}") is not None
        (active,) = await schedules.active()
        await svc.fire(active)
        assert seen[-1].text == "bench on gpu-1" and seen[-1].actor.user_id == "U1" and seen[-1].channel == "C9"
        assert "ran `bench on gpu-1`" in outbox.sent[-1][1].text
    finally:
        await svc.stop()
