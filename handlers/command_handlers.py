"""Command handlers: one async function per command type, called by the router after authorization.

Each takes (router, message, command, role) and returns a `Reply`. Long work is never done here:
jobs are submitted to the job runner, and their messages arrive later through the outbox.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any

from handlers import views
from handlers.auth import at_least, audit_actor, check_channel_host
from handlers.commands import (
    Ack,
    Again,
    Bench,
    Cancel,
    Command,
    Compare,
    Confirm,
    Deny,
    Diff,
    Help,
    History,
    KillStale,
    Logs,
    Mute,
    Queue,
    Rollback,
    Schedule,
    Schedules,
    Show,
    Status,
    Sweep,
    Try,
    Unschedule,
)
from handlers.contract import ChatMessage, Reply, Table
from services.errors import Conflict, HostError, NotAuthorized, NotFound, UserInputError

if TYPE_CHECKING:
    from handlers.router import Router

Handler = Callable[["Router", ChatMessage, Any, str], Awaitable[Reply]]


async def _submit(r: Router, msg: ChatMessage, *, kind: str, host: str, params: dict[str, Any], what: str,
                  command_text: str, diff: tuple[str, ...] = (), notes: tuple[str, ...] = ()) -> Reply:
    d = r.domain
    needs = kind in r.policy.confirm
    job = await d.jobs.submit(kind=kind, host=host, params=params, actor=audit_actor(msg), command_text=command_text,
                              needs_confirmation=needs)
    position = await d.jobs.position(job.id)
    eta = await d.jobs.eta_s(host, kind, position)
    preview = views.preview_reply(job.id, host, what, diff, notes, position, eta, needs)
    await d.outbox.send(f"job:{job.id}", preview, channel=msg.channel)
    if needs:
        return Reply(text=f"Job {job.id} is ready to run on {host}: confirm it on its message (or say `yes`).",
                     ephemeral=True)
    return Reply(text=f"Job {job.id} queued on {host}.", ephemeral=True)


async def do_try(r: Router, msg: ChatMessage, cmd: Try, role: str) -> Reply:
    host = r.resolve_host(msg, cmd.host)
    changes = dict(cmd.changes)
    preview = await r.domain.experiments.preview(host, changes)
    if not preview.changed:
        raise Conflict(f"{host} already runs that configuration; use `bench on {host}` to measure it")
    from services.experiments import label_for

    params = {"changes": changes, "concurrency": list(cmd.concurrency) if cmd.concurrency else None}
    return await _submit(r, msg, kind="try", host=host, params=params, what=f"try {label_for(changes)}",
                         command_text=msg.text, diff=preview.diff, notes=preview.notes)


async def do_again(r: Router, msg: ChatMessage, cmd: Again, role: str) -> Reply:
    key = msg.thread_key or ""
    if not key.startswith("job:"):
        raise UserInputError("`again` works in the thread of a job: reply there, e.g. `again with 12`")
    job = await r.domain.jobs.get(int(key.split(":")[1]))
    if job.kind != "try":
        raise UserInputError(f"job {job.id} is a {job.kind}; `again` repeats a try")
    changes = dict(job.params.get("changes", {}))
    if cmd.value is not None:
        if len(changes) != 1:
            raise UserInputError("that job changed several flags; say which: `again steps=12`")
        flag = next(iter(changes))
        from services.units import parse_value, resolve_flag

        changes = {flag: parse_value(resolve_flag(flag), cmd.value)}
    else:
        changes.update(dict(cmd.changes))
    return await do_try(r, msg, Try(changes=tuple(changes.items()), host=job.host), role)


async def do_sweep(r: Router, msg: ChatMessage, cmd: Sweep, role: str) -> Reply:
    host = r.resolve_host(msg, cmd.host)
    from services.units import resolve_flag

    flag = resolve_flag(cmd.flag)
    params = {"flag": flag.name, "values": list(cmd.values),
              "concurrency": list(cmd.concurrency) if cmd.concurrency else None}
    what = f"sweep {flag.short} over {', '.join(cmd.values)}"
    return await _submit(r, msg, kind="sweep", host=host, params=params, what=what, command_text=msg.text,
                         notes=(f"{len(cmd.values)} trials, each a deploy and a benchmark",))


async def do_bench(r: Router, msg: ChatMessage, cmd: Bench, role: str) -> Reply:
    host = r.resolve_host(msg, cmd.host)
    params = {"concurrency": list(cmd.concurrency) if cmd.concurrency else None}
    return await _submit(r, msg, kind="bench", host=host, params=params, what="benchmark the current config",
                         command_text=msg.text)


async def do_rollback(r: Router, msg: ChatMessage, cmd: Rollback, role: str) -> Reply:
    host = await _host_from_thread(r, msg, cmd.host)
    params = {"to_revision": cmd.to_revision}
    target = f"revision {cmd.to_revision}" if cmd.to_revision else "the last known-good revision"
    return await _submit(r, msg, kind="rollback", host=host, params=params, what=f"roll back to {target}",
                         command_text=msg.text)


async def do_kill_stale(r: Router, msg: ChatMessage, cmd: KillStale, role: str) -> Reply:
    host = r.resolve_host(msg, cmd.host)
    return await _submit(r, msg, kind="kill-stale", host=host, params={"pid": cmd.pid},
                         what=f"end pid {cmd.pid}, which holds GPU memory", command_text=msg.text)


async def _host_from_thread(r: Router, msg: ChatMessage, host: str | None) -> str:
    if host is None and msg.thread_key and msg.thread_key.startswith("incident:") and r.domain.incidents:
        inc = await r.domain.incidents.get(int(msg.thread_key.split(":")[1]))
        return r.resolve_host(msg, inc.host)
    if host is None and msg.thread_key and msg.thread_key.startswith("job:"):
        job = await r.domain.jobs.get(int(msg.thread_key.split(":")[1]))
        return r.resolve_host(msg, job.host)
    return r.resolve_host(msg, host)


async def _pending(r: Router, msg: ChatMessage, token: str | None) -> Any:
    if token is not None:
        if not token.isdigit():
            raise UserInputError("say `yes` or `yes <job number>`")
        return await r.domain.jobs.get(int(token))
    job = await r.domain.jobs.pending_confirmation(msg.actor.user_id, msg.channel)
    if job is None:
        raise NotFound("nothing of yours is waiting for a confirmation here")
    return job


async def do_confirm(r: Router, msg: ChatMessage, cmd: Confirm, role: str) -> Reply:
    job = await _pending(r, msg, cmd.token)
    if job.requested_by != msg.actor.user_id and not at_least(role, "operator"):
        raise NotAuthorized(f"only {job.requested_by_name or job.requested_by} or an operator can confirm job {job.id}")
    check_channel_host(msg.channel, job.host, r.policy)
    job = await r.domain.jobs.confirm(job.id, audit_actor(msg))
    position = await r.domain.jobs.position(job.id)
    where = "starting now" if position == 0 else f"queue position {position + 1}"
    await r.domain.outbox.send(f"job:{job.id}", Reply(
        text=f"*Job {job.id}* on *{job.host}*: {job.command_text} — confirmed by {msg.actor.name}, {where}",
        tone="progress"), channel=job.channel or msg.channel)
    return Reply(text=f"Job {job.id} confirmed ({where}).", ephemeral=True)


async def do_deny(r: Router, msg: ChatMessage, cmd: Deny, role: str) -> Reply:
    job = await _pending(r, msg, cmd.token)
    said = await r.domain.jobs.cancel(job.id, audit_actor(msg), may_cancel_others=at_least(role, "operator"))
    return Reply(text=said[0].upper() + said[1:] + ".", ephemeral=True)


async def do_cancel(r: Router, msg: ChatMessage, cmd: Cancel, role: str) -> Reply:
    said = await r.domain.jobs.cancel(cmd.job_id, audit_actor(msg), may_cancel_others=at_least(role, "operator"))
    return Reply(text=said[0].upper() + said[1:] + ".")


async def do_queue(r: Router, msg: ChatMessage, cmd: Queue, role: str) -> Reply:
    jobs = await r.domain.jobs.queue()
    if not jobs:
        return Reply(text="No jobs are queued or running.")
    return Reply(text="\n".join(views.job_line(j) for j in jobs))


async def do_status(r: Router, msg: ChatMessage, cmd: Status, role: str) -> Reply:
    names = [r.resolve_host(msg, cmd.host)] if cmd.host else list(r.domain.host_names)
    if not names:
        return Reply(text="No hosts are configured. Add one under `hosts` in the settings.", tone="warning")
    rows = await asyncio.gather(*(_status_row(r, h) for h in names))
    table = Table(columns=("host", "unit", "state", "restarts", "config", "job", "incidents", "last result"),
                  rows=tuple(rows))
    text = "Status"
    if r.domain.health is not None:
        text += " · " + r.domain.health()
    return Reply(text=text, tables=(table,))


STATUS_HOST_TTL_S = 1.0  # a host's unit state is read over SSH at most once a second, however many ask


async def _host_state(r: Router, host: str) -> tuple[str, str, str]:
    ops = r.domain.experiments.ops(host)
    st = await asyncio.wait_for(ops.state(), 15)
    from services.experiments import config_label
    from services.units import read_exec_start

    config = config_label(read_exec_start(await asyncio.wait_for(ops.read_unit(), 15)).argv)
    return f"{st.active_state}/{st.sub_state}", str(st.n_restarts), config


async def _host_state_shared(r: Router, host: str) -> tuple[str, str, str]:
    """`_host_state`, shared by concurrent callers and reused for `STATUS_HOST_TTL_S` when it succeeded
    (200 `status` commands a second must not become 400 SSH commands a second)."""
    cache = r.host_states
    now = time.monotonic()
    hit = cache.get(host)
    if hit is None or now - hit[0] > STATUS_HOST_TTL_S or (hit[1].done() and hit[1].exception() is not None):
        fut = asyncio.ensure_future(_host_state(r, host))
        cache[host] = hit = (now, fut)
    return await asyncio.shield(hit[1])


async def _status_row(r: Router, host: str) -> tuple[str, ...]:
    ops = r.domain.experiments.ops(host)
    state, config = "unreachable", "—"
    restarts = "—"
    try:
        state, restarts, config = await _host_state_shared(r, host)
    except (HostError, TimeoutError, OSError) as e:
        state = f"unreachable ({str(e)[:60]})"
    running = r.domain.jobs.running_job(host)
    queued = [j for j in await r.domain.jobs.queue(host) if j.state != "running"]
    job = (f"#{running} running" if running else "—") + (f", {len(queued)} queued" if queued else "")
    incidents = "—"
    if r.domain.incidents is not None:
        open_ = await r.domain.incidents.open_incidents(host)
        incidents = ", ".join(f"#{i.id} {i.cause}" for i in open_) or "—"
    last = await r.domain.results.recent(host, 1)
    last_txt = f"{last[0].label}: run {last[0].id}" if last else "—"
    return (host, ops.unit, state, restarts, config, job, incidents, last_txt)


async def do_show(r: Router, msg: ChatMessage, cmd: Show, role: str) -> Reply:
    job = await r.domain.jobs.get(cmd.job_id)
    lines = [views.job_line(job)]
    if job.summary:
        lines.append(job.summary)
    tables = []
    for run in await r.domain.results.for_job(job.id):
        prev = await r.domain.results.previous(run.host, run.model, before_id=run.id)
        tables.append(views.results_table(run, prev))
    if job.kind == "sweep" and job.result.get("rows"):
        tables.append(views.sweep_table(job.result))
    return Reply(text="\n".join(lines), tables=tuple(tables[:5]))


async def do_compare(r: Router, msg: ChatMessage, cmd: Compare, role: str) -> Reply:
    runs = []
    for jid in (cmd.a, cmd.b):
        found = await r.domain.results.for_job(jid)
        if not found:
            raise NotFound(f"job {jid} has no benchmark results")
        runs.append(found[-1])
    return Reply(text=f"job {cmd.b} against job {cmd.a}", tables=(views.results_table(runs[1], runs[0]),))


async def do_history(r: Router, msg: ChatMessage, cmd: History, role: str) -> Reply:
    host = r.resolve_host(msg, cmd.host) if cmd.host else None
    jobs = await r.domain.jobs.recent(host, cmd.n or 10)
    if not jobs:
        return Reply(text="No jobs yet.")
    return Reply(text="\n".join(views.job_line(j) for j in jobs))


async def do_diff(r: Router, msg: ChatMessage, cmd: Diff, role: str) -> Reply:
    import difflib

    host = r.resolve_host(msg, cmd.host)
    ops = r.domain.experiments.ops(host)
    current = await ops.read_unit()
    good = await r.domain.revisions.last_known_good(host, ops.unit)
    if good is None:
        return Reply(text=f"{host} has no known-good revision yet to compare with.")
    if good.text == current:
        return Reply(text=f"{host} runs its last known-good revision ({good.id}); no difference.")
    diff = "".join(difflib.unified_diff(good.text.splitlines(True), current.splitlines(True),
                                        f"known-good (revision {good.id})", "live"))
    return Reply(text=f"{host}: live unit against the last known-good revision {good.id}", code=diff[:2800])


async def do_logs(r: Router, msg: ChatMessage, cmd: Logs, role: str) -> Reply:
    if cmd.incident_id is not None:
        if r.domain.incidents is None:
            raise NotFound("incidents are not being watched in this process")
        lines = await r.domain.incidents.recent_lines(cmd.incident_id, cmd.n or 30)
        return Reply(text=f"incident {cmd.incident_id}: last journal lines", code="\n".join(lines)[-2800:])
    host = r.resolve_host(msg, cmd.host)
    entries = await r.domain.experiments.ops(host).recent_entries(cmd.n or 30)
    from services.redact import redact

    # redact the lines together: a private key printed to stdout spans several journal entries
    text = "\n".join(line[:300] for line in redact("\n".join(e.message for e in entries)).split("\n"))
    return Reply(text=f"{host}: last {len(entries)} journal lines", code=text[-2800:] or "(empty)")


async def do_mute(r: Router, msg: ChatMessage, cmd: Mute, role: str) -> Reply:
    if r.domain.incidents is None:
        raise NotFound("incidents are not being watched in this process")
    await r.domain.incidents.mute(cmd.incident_id, cmd.minutes, audit_actor(msg))
    return Reply(text=f"Incident {cmd.incident_id} muted for {cmd.minutes} min by {msg.actor.name}.")


async def do_ack(r: Router, msg: ChatMessage, cmd: Ack, role: str) -> Reply:
    if r.domain.incidents is None:
        raise NotFound("incidents are not being watched in this process")
    await r.domain.incidents.acknowledge(cmd.incident_id, audit_actor(msg))
    return Reply(text=f"Incident {cmd.incident_id} acknowledged by {msg.actor.name}.")


async def do_help(r: Router, msg: ChatMessage, cmd: Help, role: str) -> Reply:
    from handlers.help import help_text

    return Reply(text=help_text(cmd.topic), ephemeral=True)


async def do_schedule(r: Router, msg: ChatMessage, cmd: Schedule, role: str) -> Reply:
    if r.domain.schedules is None:
        raise NotFound("the scheduler is not running in this process")
    host = getattr(cmd.command, "host", None)
    if host is not None:
        r.resolve_host(msg, host)
    from dataclasses import asdict

    sid = await r.domain.schedules.add(trigger=asdict(cmd.cron), spec=cmd.cron.describe(),
                                       command_text=cmd.command_text, actor=audit_actor(msg))
    return Reply(text=f"Schedule {sid}: {cmd.cron.describe()} → `{cmd.command_text}`.")


async def do_schedules(r: Router, msg: ChatMessage, cmd: Schedules, role: str) -> Reply:
    if r.domain.schedules is None:
        raise NotFound("the scheduler is not running in this process")
    items = await r.domain.schedules.list()
    if not items:
        return Reply(text="No schedules.")
    return Reply(text="Schedules", tables=(Table(columns=("id", "when", "command", "by", "last run"),
                                                 rows=tuple(items)),))


async def do_unschedule(r: Router, msg: ChatMessage, cmd: Unschedule, role: str) -> Reply:
    if r.domain.schedules is None:
        raise NotFound("the scheduler is not running in this process")
    await r.domain.schedules.remove(cmd.schedule_id, audit_actor(msg))
    return Reply(text=f"Schedule {cmd.schedule_id} removed.")


HANDLERS: dict[type[Command], Handler] = {
    Try: do_try, Again: do_again, Sweep: do_sweep, Bench: do_bench, Rollback: do_rollback,
    KillStale: do_kill_stale, Confirm: do_confirm, Deny: do_deny, Cancel: do_cancel, Queue: do_queue,
    Status: do_status, Show: do_show, Compare: do_compare, History: do_history, Diff: do_diff, Logs: do_logs,
    Mute: do_mute, Ack: do_ack, Help: do_help, Schedule: do_schedule, Schedules: do_schedules,
    Unschedule: do_unschedule,
}

__all__ = ["HANDLERS"]
