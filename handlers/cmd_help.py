"""The help command; its text comes from `handlers.help` through the handler context."""

from __future__ import annotations

from handlers.commands import Help
from handlers.context import HandlerContext
from handlers.contract import ChatMessage, Reply
from handlers.grammar_render import render_help
from handlers.grammar_rules import parse_help
from handlers.spec import command

__all__ = ["do_help"]


@command(Help, words=("help", "?", "usage"), usage="help [command | flags | <flag>]",
         examples=("help", "help sweep", "help flags"), parse=parse_help, render=render_help, role="viewer")
async def do_help(ctx: HandlerContext, msg: ChatMessage, cmd: Help) -> Reply:
    """Show the commands, one command's usage, or the flags pitcrew can change."""
    return Reply(text=ctx.help(cmd.topic), ephemeral=True)
