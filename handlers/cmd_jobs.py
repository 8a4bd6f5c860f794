"""The commands about jobs already submitted: yes, no, cancel, queue, show, compare, history."""

from __future__ import annotations

import asyncio

from handlers import views
from handlers.auth import at_least, audit_actor, check_channel_host
from handlers.commands import Cancel, Compare, Confirm, Deny, History, Queue, Show
from handlers.context import HandlerContext
from handlers.contract import Button, ChatMessage, Reply, Table
from handlers.grammar_render import (
    render_cancel,
    render_compare,
    render_confirm,
    render_deny,
    render_history,
    render_queue,
    render_show,
)
from handlers.grammar_rules import (
    parse_cancel,
    parse_compare,
    parse_confirm,
    parse_deny,
    parse_history,
    parse_queue,
    parse_show,
)
from handlers.job_notifier import JobRecord, confirmed_line, job_message
from handlers.ports import JobView
from handlers.spec import command
from services.errors import NotAuthorized, NotFound, UserInputError
from services.experiments import compare_runs
from services.store import utcnow

__all__ = ["do_cancel", "do_compare", "do_confirm", "do_deny", "do_history", "do_queue", "do_show"]


async def _pending(ctx: HandlerContext, msg: ChatMessage, token: str | None) -> JobView:
    if token is not None:
        if not token.isdigit():
            raise UserInputError("say `yes` or `yes <job number>`")
        return await ctx.domain.jobs.get(int(token))
    job = await ctx.domain.jobs.pending_confirmation(msg.actor.user_id, msg.channel)
    if job is None:
        raise NotFound("nothing of yours is waiting for a confirmation here")
    return job


@command(Confirm, words=("yes", "y", "confirm", "ok"), usage="yes [token]", examples=("yes",), parse=parse_confirm,
         render=render_confirm, role="experimenter")
async def do_confirm(ctx: HandlerContext, msg: ChatMessage, cmd: Confirm) -> Reply:
    """Confirm the action pitcrew asked about (a token picks one when several are pending)."""
    job = await _pending(ctx, msg, cmd.token)
    if job.requested_by != msg.actor.user_id and not at_least(ctx.role, "operator"):
        raise NotAuthorized(f"only {job.requested_by_name or job.requested_by} or an operator can confirm job {job.id}")
    check_channel_host(msg.channel, job.host, ctx.policy)
    job = await ctx.domain.jobs.confirm(job.id, audit_actor(msg))
    position = await ctx.domain.jobs.position(job.id)
    where = "starting now" if position == 0 else f"queue position {position + 1}"
    record = JobRecord(diff=tuple(str(x) for x in job.params.get("diff") or ()),
                       confirmed=confirmed_line(msg.actor.name, utcnow()))
    await ctx.domain.outbox.send(f"job:{job.id}", job_message(
        job, record, f"🔧 {where}", buttons=(Button("Cancel", f"cancel {job.id}", "danger"),)),
        channel=job.channel or msg.channel)
    return Reply(text=f"Job {job.id} confirmed ({where}).", ephemeral=True)


@command(Deny, words=("no", "n", "deny", "nope"), usage="no [token]", examples=("no",), parse=parse_deny,
         render=render_deny, role="experimenter")
async def do_deny(ctx: HandlerContext, msg: ChatMessage, cmd: Deny) -> Reply:
    """Decline the action pitcrew asked about."""
    job = await _pending(ctx, msg, cmd.token)
    said = await ctx.domain.jobs.cancel(job.id, audit_actor(msg), may_cancel_others=at_least(ctx.role, "operator"))
    return Reply(text=said[0].upper() + said[1:] + ".", ephemeral=True)


@command(Cancel, words=("cancel", "abort"), usage="cancel <job>", examples=("cancel 42",), parse=parse_cancel,
         render=render_cancel, role="experimenter")
async def do_cancel(ctx: HandlerContext, msg: ChatMessage, cmd: Cancel) -> Reply:
    """Stop a job at its next safe point and restore the unit that was live before it."""
    said = await ctx.domain.jobs.cancel(cmd.job_id, audit_actor(msg), may_cancel_others=at_least(ctx.role, "operator"))
    return Reply(text=said[0].upper() + said[1:] + ".")


@command(Queue, words=("queue", "jobs"), usage="queue", examples=("queue",), parse=parse_queue, render=render_queue,
         role="viewer")
async def do_queue(ctx: HandlerContext, msg: ChatMessage, cmd: Queue) -> Reply:
    """List running and queued jobs with their positions."""
    jobs = await ctx.domain.jobs.queue()
    if not jobs:
        return Reply(text="No jobs are queued or running.")
    return Reply(text="\n".join(views.job_line(j) for j in jobs))


@command(Show, words=("show",), usage="show <job>", examples=("show 42",), parse=parse_show, render=render_show,
         role="viewer")
async def do_show(ctx: HandlerContext, msg: ChatMessage, cmd: Show) -> Reply:
    """Show a job: its steps, timings, flag diff and results."""
    job = await ctx.domain.jobs.get(cmd.job_id)
    lines = [views.job_line(job)]
    if job.summary:
        lines.append(job.summary)
    tables: list[Table] = []
    if job.kind == "tune" and job.result.get("points"):  # the whole search first, then its runs
        tables.append(views.tune_table(job.result))
        lines.extend(views.tune_confirmation(job.result))
        lines.extend(views.tune_failures(job.result, limit=50))
    for run in await ctx.domain.results.for_job(job.id):
        prev = await ctx.domain.results.previous(run.host, run.model, before_id=run.id)
        tables.append(views.results_table(run, prev))
    if job.kind == "sweep" and job.result.get("rows"):
        tables.append(views.sweep_table(job.result))
    lines.extend(views.forecast_lines(job.result))
    return Reply(text="\n".join(lines), tables=tuple(tables[:5]))


@command(Compare, words=("compare",), usage="compare <job> <job>", examples=("compare 41 42",), parse=parse_compare,
         render=render_compare, role="viewer")
async def do_compare(ctx: HandlerContext, msg: ChatMessage, cmd: Compare) -> Reply:
    """Compare the results of two jobs: one verdict per level with its 95 % noise band."""
    runs = []
    for jid in (cmd.a, cmd.b):
        found = await ctx.domain.results.for_job(jid)
        if not found:
            raise NotFound(f"job {jid} has no benchmark results")
        runs.append(found[-1])
    old, new = runs
    repeats = await ctx.domain.results.repeats(new.host, new.model)
    comparisons = await asyncio.to_thread(compare_runs, new, old, repeats)
    return views.compare_reply(new, old, comparisons, f"job {cmd.b} against job {cmd.a}")


@command(History, words=("history",), usage="history [host] [n]", examples=("history", "history gpu-1 20"),
         parse=parse_history, render=render_history, role="viewer")
async def do_history(ctx: HandlerContext, msg: ChatMessage, cmd: History) -> Reply:
    """List the last jobs on a host with their headline results."""
    host = ctx.resolve_host(msg, cmd.host) if cmd.host else None
    jobs = await ctx.domain.jobs.recent(host, cmd.n or 10)
    if not jobs:
        return Reply(text="No jobs yet.")
    return Reply(text="\n".join(views.job_line(j) for j in jobs))
