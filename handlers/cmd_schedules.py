"""The commands about schedules: every, schedules, unschedule."""

from __future__ import annotations

from dataclasses import asdict

from handlers.auth import audit_actor
from handlers.commands import Schedule, Schedules, Unschedule
from handlers.context import HandlerContext
from handlers.contract import ChatMessage, Reply, Table
from handlers.grammar_render import render_schedule, render_schedules, render_unschedule
from handlers.grammar_rules import parse_schedule, parse_schedules, parse_unschedule
from handlers.ports import SchedulesPort
from handlers.spec import command
from services.errors import NotFound

__all__ = ["do_schedule", "do_schedules", "do_unschedule"]


def _schedules(ctx: HandlerContext) -> SchedulesPort:
    if ctx.domain.schedules is None:
        raise NotFound("the scheduler is not running in this process")
    return ctx.domain.schedules


@command(Schedule, words=("every", "daily", "hourly"),
         usage="every <day | monday | weekday | 6h | 30m> [at HH:MM] <command>",
         examples=("every day at 02:00 sweep steps 1..5 on gpu-1", "every monday at 09:30 bench on gpu-1",
                   "every 6h bench"),
         parse=parse_schedule, render=render_schedule, role="operator")
async def do_schedule(ctx: HandlerContext, msg: ChatMessage, cmd: Schedule) -> Reply:
    """Run try, sweep, bench or status on a schedule; missed runs are reported, not dropped."""
    schedules = _schedules(ctx)
    host = getattr(cmd.command, "host", None)
    if host is not None:
        ctx.resolve_host(msg, host)
    sid = await schedules.add(trigger=asdict(cmd.cron), spec=cmd.cron.describe(), command_text=cmd.command_text,
                              actor=audit_actor(msg))
    return Reply(text=f"Schedule {sid}: {cmd.cron.describe()} → `{cmd.command_text}`.")


@command(Schedules, words=("schedules",), usage="schedules", examples=("schedules",), parse=parse_schedules,
         render=render_schedules, role="viewer")
async def do_schedules(ctx: HandlerContext, msg: ChatMessage, cmd: Schedules) -> Reply:
    """List the schedules with their next run."""
    items = await _schedules(ctx).list()
    if not items:
        return Reply(text="No schedules.")
    return Reply(text="Schedules", tables=(Table(columns=("id", "when", "command", "by", "last run"),
                                                 rows=tuple(items)),))


@command(Unschedule, words=("unschedule",), usage="unschedule <schedule>", examples=("unschedule 3",),
         parse=parse_unschedule, render=render_unschedule, role="operator")
async def do_unschedule(ctx: HandlerContext, msg: ChatMessage, cmd: Unschedule) -> Reply:
    """Remove a schedule."""
    await _schedules(ctx).remove(cmd.schedule_id, audit_actor(msg))
    return Reply(text=f"Schedule {cmd.schedule_id} removed.")
