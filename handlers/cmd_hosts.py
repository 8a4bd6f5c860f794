"""The commands that read a host: status, diff, logs; `doctor`, the host set-up checks, and `health`, the bot's own
figures (both for admins)."""

from __future__ import annotations

import difflib

from handlers import views
from handlers.commands import Diff, Doctor, Health, Logs, Status
from handlers.context import HandlerContext
from handlers.contract import ChatMessage, Reply
from handlers.grammar_args import no_args, only_host
from handlers.grammar_render import render_diff, render_logs, render_status
from handlers.grammar_rules import parse_diff, parse_logs, parse_status
from handlers.spec import Said, command
from services.doctor import HOSTS_DOC
from services.errors import NotFound
from services.redact import redact

__all__ = ["do_diff", "do_doctor", "do_health", "do_logs", "do_status"]

_CODE_CHARS = 2800  # a Slack section holds 3,000 characters


@command(Status, words=("status",), usage="status [host]", examples=("status", "status gpu-1"), parse=parse_status,
         render=render_status, role="viewer", schedulable=True)
async def do_status(ctx: HandlerContext, msg: ChatMessage, cmd: Status) -> Reply:
    """Show a host's server state, current flags, running job and open incidents."""
    names = [ctx.resolve_host(msg, cmd.host)] if cmd.host else list(ctx.domain.host_names)
    if not names:
        return Reply(text="No hosts are configured. Add one under `hosts` in the settings.", tone="warning")
    if ctx.domain.status is None:
        raise NotFound("host status is not available in this process")
    table = views.status_table(await ctx.domain.status.hosts(names))
    jobs = [j for j in await ctx.domain.jobs.queue() if not cmd.host or j.host in names]
    running = sum(1 for j in jobs if j.state == "running")
    text = f"Status · jobs: {running} running, {len(jobs) - running} waiting"
    # The bot's own internals (loop lag, database, Slack pacing) are for admins: `health`.
    return Reply(text=text, tables=(table,), ephemeral=ctx.policy.status_ephemeral)


def parse_health(said: Said) -> Health:
    no_args(said.args, "health")
    return Health()


def render_health(cmd: Health) -> str:
    return "health"


@command(Health, words=("health",), usage="health", examples=("health",), parse=parse_health,
         render=render_health, role="admin")
async def do_health(ctx: HandlerContext, msg: ChatMessage, cmd: Health) -> Reply:
    """The bot's own figures: event-loop lag, database, chat delivery, Slack calls and rate limits."""
    figures = ctx.domain.health() if ctx.domain.health is not None else "no health figures in this process"
    return Reply(text=f"Health · {figures}", ephemeral=True)


def parse_doctor(said: Said) -> Doctor:
    return Doctor(host=only_host(said.args, "doctor"))


def render_doctor(cmd: Doctor) -> str:
    return f"doctor on {cmd.host}" if cmd.host else "doctor"


@command(Doctor, words=("doctor",), usage="doctor [host]", examples=("doctor", "doctor gpu-1"), parse=parse_doctor,
         render=render_doctor, role="admin")
async def do_doctor(ctx: HandlerContext, msg: ChatMessage, cmd: Doctor) -> Reply:
    """Check each host's set-up (SSH key, unit, engine flags, sudo rule, journal, GPUs, disk, /health); read-only."""
    names = [ctx.resolve_host(msg, cmd.host)] if cmd.host else list(ctx.domain.host_names)
    if not names:
        return Reply(text="No hosts are configured. Add one under `hosts` in the settings.", tone="warning")
    if ctx.domain.doctor is None:
        raise NotFound("the host checks are not available in this process")
    report = await ctx.domain.doctor.run(names)
    head, *body = report.lines()
    shown: list[str] = []
    for i, line in enumerate(body[:-1]):  # the last line is the link, which the text carries
        if sum(len(s) + 1 for s in shown) + len(line) > _CODE_CHARS:
            shown.append(f"… {len(body) - 1 - i} more lines: `pitcrew doctor` on the command line prints them all")
            break
        shown.append(line)
    return Reply(text=f"{head} · what each host needs: {HOSTS_DOC}", code="\n".join(shown),
                 tone="success" if report.ok else "warning", ephemeral=True)


@command(Diff, words=("diff",), usage="diff [host]", examples=("diff gpu-1",), parse=parse_diff, render=render_diff,
         role="viewer")
async def do_diff(ctx: HandlerContext, msg: ChatMessage, cmd: Diff) -> Reply:
    """Show the flag diff between the host's live unit and its last known-good revision."""
    host = ctx.resolve_host(msg, cmd.host)
    ops = ctx.domain.experiments.ops(host)
    current = await ops.read_unit()
    good = await ctx.domain.revisions.last_known_good(host, ops.unit)
    if good is None:
        return Reply(text=f"{host} has no known-good revision yet to compare with.")
    if good.text == current:
        return Reply(text=f"{host} runs its last known-good revision ({good.id}); no difference.")
    diff = "".join(difflib.unified_diff(good.text.splitlines(True), current.splitlines(True),
                                        f"known-good (revision {good.id})", "live"))
    return Reply(text=f"{host}: live unit against the last known-good revision {good.id}", code=diff[:2800])


@command(Logs, words=("logs", "log", "journal"), usage="logs [host | incident <id>] [n]",
         examples=("logs gpu-1 50", "logs incident 7"), parse=parse_logs, render=render_logs, role="viewer")
async def do_logs(ctx: HandlerContext, msg: ChatMessage, cmd: Logs) -> Reply:
    """Show the last journal lines of a host, or the evidence of an incident."""
    if cmd.incident_id is not None:
        if ctx.domain.incidents is None:
            raise NotFound("incidents are not being watched in this process")
        lines = await ctx.domain.incidents.recent_lines(cmd.incident_id, cmd.n or 30)
        return Reply(text=f"incident {cmd.incident_id}: last journal lines", code="\n".join(lines)[-2800:])
    host = ctx.resolve_host(msg, cmd.host)
    entries = await ctx.domain.experiments.ops(host).recent_entries(cmd.n or 30)
    # redact the lines together: a private key printed to stdout spans several journal entries
    text = "\n".join(line[:300] for line in redact("\n".join(e.message for e in entries)).split("\n"))
    return Reply(text=f"{host}: last {len(entries)} journal lines", code=text[-2800:] or "(empty)")
