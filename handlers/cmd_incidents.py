"""The commands about incidents: mute, ack (their logs are `logs incident <id>`)."""

from __future__ import annotations

from handlers.auth import audit_actor
from handlers.commands import Ack, Mute
from handlers.context import HandlerContext
from handlers.contract import ChatMessage, Reply
from handlers.grammar_render import render_ack, render_mute
from handlers.grammar_rules import parse_ack, parse_mute
from handlers.ports import IncidentsPort
from handlers.spec import command
from services.errors import NotFound

__all__ = ["do_ack", "do_mute"]


def _incidents(ctx: HandlerContext) -> IncidentsPort:
    if ctx.domain.incidents is None:
        raise NotFound("incidents are not being watched in this process")
    return ctx.domain.incidents


@command(Mute, words=("mute", "snooze"), usage="mute <incident> [for <30m | 2h | 1d>]", examples=("mute 7 for 2h",),
         parse=parse_mute, render=render_mute, role="operator")
async def do_mute(ctx: HandlerContext, msg: ChatMessage, cmd: Mute) -> Reply:
    """Stop alerts for an incident for a while (default 60 minutes)."""
    await _incidents(ctx).mute(cmd.incident_id, cmd.minutes, audit_actor(msg))
    return Reply(text=f"Incident {cmd.incident_id} muted for {cmd.minutes} min by {msg.actor.name}.")


@command(Ack, words=("ack", "acknowledge"), usage="ack <incident>", examples=("ack 7",), parse=parse_ack,
         render=render_ack, role="operator")
async def do_ack(ctx: HandlerContext, msg: ChatMessage, cmd: Ack) -> Reply:
    """Acknowledge an incident: someone is on it."""
    await _incidents(ctx).acknowledge(cmd.incident_id, audit_actor(msg))
    return Reply(text=f"Incident {cmd.incident_id} acknowledged by {msg.actor.name}.")
