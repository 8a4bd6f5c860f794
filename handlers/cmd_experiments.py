"""The commands that change or measure a host through a job: try, again, sweep, tune, bench, rollback, kill-stale.

Each handler checks what it can at once (the host, the flag, whether anything would change),
submits a job to the job runner and posts the job's preview through the outbox; the long work
runs later and reports through the job notifier.
"""

from __future__ import annotations

from typing import Any

from handlers import views
from handlers.auth import audit_actor
from handlers.commands import Again, Bench, KillStale, Rollback, Sweep, Try, Tune
from handlers.context import HandlerContext
from handlers.contract import ChatMessage, Reply
from handlers.grammar_render import (
    render_again,
    render_bench,
    render_kill_stale,
    render_rollback,
    render_sweep,
    render_try,
    render_tune,
)
from handlers.grammar_rules import (
    parse_again,
    parse_bench,
    parse_kill_stale,
    parse_rollback,
    parse_sweep,
    parse_try,
    parse_tune,
)
from handlers.spec import command
from services.engines import lookup_flag, parse_value, resolve_flag
from services.errors import Conflict, UserInputError
from services.experiments import TuneKnob, default_budget, grid_size, label_for
from services.units import flag_label

__all__ = ["do_again", "do_bench", "do_kill_stale", "do_rollback", "do_sweep", "do_try", "do_tune"]

TRIAL_STEPS = ("stop", "start", "ramp", "benchmark")  # what one tune trial costs, from the host's recorded steps


async def _submit(ctx: HandlerContext, msg: ChatMessage, *, kind: str, host: str, params: dict[str, Any],
                  what: str, diff: tuple[str, ...] = (), notes: tuple[str, ...] = (),
                  checks: tuple[str, ...] = (), check_only: str | None = None) -> Reply:
    d = ctx.domain
    if diff:
        params = {**params, "diff": list(diff)}  # the job message shows it for good (`JobRecord`)
    job = await d.jobs.submit(kind=kind, host=host, params=params, actor=audit_actor(msg), command_text=msg.text,
                              needs_confirmation=ctx.confirm)
    position = await d.jobs.position(job.id)
    eta = await d.jobs.eta_s(host, kind, position)
    preview = views.preview_reply(job.id, host, what, diff, notes, position, eta, ctx.confirm, checks, check_only)
    await d.outbox.send(f"job:{job.id}", preview, channel=msg.channel)
    if ctx.confirm:
        return Reply(text=f"Job {job.id} is ready to run on {host}: confirm it on its message (or say `yes`).",
                     ephemeral=True)
    return Reply(text=f"Job {job.id} queued on {host}.", ephemeral=True)


def _levels(levels: tuple[int, ...] | None) -> list[int] | None:
    return list(levels) if levels else None


@command(Try, words=("try", "set"),
         usage="try <flag> <value> [<flag>=<value> ...] [c=1,4,16] [on <host>] [--dry-run]",
         examples=("try 10 steps", "try steps=10 mem=0.85 on gpu-2", "try --speculative-num-steps 10",
                   "try 10 steps --dry-run"),
         parse=parse_try, render=render_try, role="experimenter", confirm="try", schedulable=True)
async def do_try(ctx: HandlerContext, msg: ChatMessage, cmd: Try) -> Reply:
    """Deploy a flag change, wait until the server is ready, benchmark it and compare with the previous run."""
    host = ctx.resolve_host(msg, cmd.host)
    changes = dict(cmd.changes)
    async def host_busy() -> bool:
        return bool(await ctx.domain.jobs.queue(host))

    preview = await ctx.domain.experiments.preview(host, changes, levels=cmd.concurrency, host_busy=host_busy)
    if not preview.changed:
        raise Conflict(f"{host} already runs that configuration; use `bench on {host}` to measure it")
    if preview.refused or cmd.dry_run:
        # stops at the preflight: a refusal (the configuration cannot start) or a dry run; audited, no job
        what = "try " + ", ".join(f"{k} {v}" for k, v in changes.items())
        await ctx.domain.audit.record(None, actor=audit_actor(msg), action="dry-run" if cmd.dry_run else "preflight",
                                      host=host, command_text=msg.text[:2000],
                                      detail={"changes": changes, "refused": preview.refused,
                                              "checks": list(preview.checks), "forecast": preview.forecast},
                                      outcome="refused" if preview.refused else "ok")
        return views.preflight_reply(host, what, preview.diff, preview.checks, refused=preview.refused,
                                     dry_run=cmd.dry_run)
    params = {"changes": changes, "concurrency": _levels(cmd.concurrency)}
    check_only = render_try(Try(changes=cmd.changes, host=host, concurrency=cmd.concurrency, dry_run=True))
    return await _submit(ctx, msg, kind="try", host=host, params=params, what=f"try {label_for(changes)}",
                         diff=preview.diff, notes=preview.notes, checks=preview.checks, check_only=check_only)


@command(Again, words=("again", "rerun"), usage="again [with <value> | <flag> <value> ...]",
         examples=("again with 12", "again steps=6 mem=0.85"), parse=parse_again, render=render_again,
         role="experimenter", confirm="try")
async def do_again(ctx: HandlerContext, msg: ChatMessage, cmd: Again) -> Reply:
    """In a job's thread: run it again, with a new value for the same flag or with other changes."""
    key = msg.thread_key or ""
    if not key.startswith("job:"):
        raise UserInputError("`again` works in the thread of a job: reply there, e.g. `again with 12`")
    job = await ctx.domain.jobs.get(int(key.split(":")[1]))
    if job.kind != "try":
        raise UserInputError(f"job {job.id} is a {job.kind}; `again` repeats a try")
    changes = dict(job.params.get("changes", {}))
    if cmd.value is not None:
        if len(changes) != 1:
            raise UserInputError("that job changed several flags; say which: `again steps=12`")
        flag = next(iter(changes))
        changes = {flag: parse_value(resolve_flag(flag), cmd.value)}
    else:
        changes.update(dict(cmd.changes))
    return await do_try.handler(ctx, msg, Try(changes=tuple(changes.items()), host=job.host))


@command(Sweep, words=("sweep",), usage="sweep <flag> <a>..<b> | <v1>,<v2>,... [c=1,8] [on <host>]",
         examples=("sweep steps 1..5", "sweep steps 1,2,4,8 c=1,8"), parse=parse_sweep, render=render_sweep,
         role="experimenter", confirm="sweep", schedulable=True)
async def do_sweep(ctx: HandlerContext, msg: ChatMessage, cmd: Sweep) -> Reply:
    """Try several values of one flag in order, then post one summary table and a chart."""
    host = ctx.resolve_host(msg, cmd.host)
    flag = resolve_flag(cmd.flag)
    params = {"flag": flag.name, "values": list(cmd.values), "concurrency": _levels(cmd.concurrency)}
    what = f"sweep {flag.short} over {', '.join(cmd.values)}"
    return await _submit(ctx, msg, kind="sweep", host=host, params=params, what=what,
                         notes=(f"{len(cmd.values)} trials, each a deploy and a benchmark",))


@command(Tune, words=("tune", "optimize", "optimise"),
         usage="tune <flag> <a>..<b> | <v1>,<v2>,...[, <flag> ...] for throughput at <C> "
               "[with ttft p95 under <N>ms] [in <N> restarts] [on <host>] | tune resume <job>",
         examples=("tune steps 1..8, mem 0.80,0.84,0.88,0.92 for throughput at 16 with ttft p95 under 500ms",
                   "tune steps 2..6, max running 16,24,32 for throughput at 16 in 8 restarts", "tune resume 12"),
         parse=parse_tune, render=render_tune, role="experimenter", confirm="tune")
async def do_tune(ctx: HandlerContext, msg: ChatMessage, cmd: Tune) -> Reply:
    """Search several flags at once for the best throughput at a concurrency (under a TTFT limit), in a fraction
    of a grid's restarts; the best is confirmed by one more restart before the verdict, and the answer is that
    configuration (or keep the start), the Pareto front and an Apply button. `tune resume <job>` continues a
    cancelled or interrupted tune without restarting for what it measured."""
    host = ctx.resolve_host(msg, cmd.host)
    known: list[dict[str, Any]] = []
    confirmed: list[dict[str, Any]] = []
    if cmd.resume is not None:
        old = await ctx.domain.jobs.get(cmd.resume)
        if old.kind != "tune":
            raise UserInputError(f"job {old.id} is a {old.kind}; `tune resume` continues a tune")
        if old.state not in ("cancelled", "interrupted", "failed"):
            raise UserInputError(f"job {old.id} is {old.state}; only a cancelled, interrupted or failed tune can "
                                 "be resumed")
        host = ctx.resolve_host(msg, cmd.host or old.host)
        if host != old.host:
            raise UserInputError(f"job {old.id} tuned {old.host}; its measurements say nothing about {host}")
        p = old.params
        cmd = Tune(knobs=tuple((str(k["flag"]), tuple(str(v) for v in k["values"])) for k in p["knobs"]),
                   concurrency=int(p["concurrency"]), ttft_p95_ms=p.get("ttft_p95_ms"), budget=p.get("budget"),
                   host=host, resume=old.id)
        known = [d["point"] for d in await ctx.domain.jobs.step_details(old.id, "tune-point") if "point" in d]
        confirmed = [d["point"] for d in await ctx.domain.jobs.step_details(old.id, "tune-confirm") if "point" in d]
    knobs = tuple(TuneKnob(flag, values) for flag, values in cmd.knobs)
    grid = grid_size(knobs)
    budget = min(cmd.budget or default_budget(knobs), grid)

    async def host_busy() -> bool:
        return bool(await ctx.domain.jobs.queue(host))

    # the engine's parser and the host checks on the two corners of the grid (every flag at its first values,
    # then at its last): a flag or value the engine refuses stops the tune here, before any job
    corners = [{f: v[0] for f, v in cmd.knobs}, {f: v[-1] for f, v in cmd.knobs}]
    checks: list[str] = []
    engine = ""  # the unit's engine, as the preview read it: the knobs are named in its words
    for corner in corners:
        preview = await ctx.domain.experiments.preview(host, corner, levels=(cmd.concurrency,), host_busy=host_busy)
        if preview.refused:
            what = "tune corner " + label_for(corner)
            return views.preflight_reply(host, what, preview.diff, preview.checks, refused=True, dry_run=False)
        checks.extend(c for c in preview.checks if c not in checks and not c.lstrip().startswith(("✓ forecast",
                                                                                                   "⚠ forecast")))
        engine = engine or preview.engine
    steps = await ctx.domain.jobs.step_seconds(host, TRIAL_STEPS)
    trial_s = sum(steps.values()) if set(steps) >= {"stop", "start", "benchmark"} else None
    shorts = ", ".join(f"{_short(f, engine)} {_values_text(v)}" for f, v in cmd.knobs)
    limit = f" with TTFT p95 under {cmd.ttft_p95_ms:g} ms" if cmd.ttft_p95_ms is not None else ""
    notes = [f"knobs: {shorts} ({grid} configurations in the grid)",
             f"goal: the highest output throughput at C={cmd.concurrency}{limit}",
             f"budget: at most {budget} restarts ({100.0 * budget / grid:.0f} % of the grid's {grid}); the search "
             "stops sooner when its last restarts find nothing measurably better",
             "then 1 more restart confirms the best before the verdict (a fresh start and new prompts: the search's "
             "figure for the fastest of many runs reads high); 2 if that one fails"]
    if trial_s is not None:
        notes.append(f"estimated time: up to ~{_minutes((budget + 3) * trial_s)} ({budget} trials, 1-2 confirming "
                     "runs and the restore, "
                     f"each ~{trial_s:.0f} s from this host's recorded " +
                     ", ".join(f"{n} {steps[n]:.0f} s" for n in TRIAL_STEPS if n in steps) + ")")
    else:
        notes.append("estimated time: no recorded restart and benchmark on this host yet to estimate from")
    notes.append("the host is put back on its current configuration at the end; Apply runs the best as a try")
    if cmd.resume is not None:
        notes.append(f"resumes job {cmd.resume}: the {len(known)} configurations it measured are not restarted "
                     f"again (their {sum(1 for k in known if k.get('restarted'))} restarts count against the budget)"
                     + (f", nor the {len(confirmed)} it confirmed" if confirmed else ""))
    params: dict[str, Any] = {"knobs": [{"flag": f, "values": list(v)} for f, v in cmd.knobs],
                              "concurrency": cmd.concurrency, "ttft_p95_ms": cmd.ttft_p95_ms, "budget": budget}
    if cmd.resume is not None:
        params.update(resumes=cmd.resume, known=known, confirmed=confirmed)
    what = f"tune {shorts} for throughput at C={cmd.concurrency}{limit}"
    reply = await _submit(ctx, msg, kind="tune", host=host, params=params, what=what, notes=tuple(notes),
                          checks=tuple(checks))
    return reply


def _short(flag: str, engine: str) -> str:
    """How the unit's engine names ``flag`` (``steps`` is ``spec tokens`` on vLLM, ``draft tokens`` on llama.cpp)."""
    if engine:
        return flag_label(flag, engine)
    fdef = lookup_flag(flag)
    return fdef.short if fdef else flag


def _values_text(values: tuple[str, ...]) -> str:
    ints = [int(v) for v in values if v.lstrip("-").isdigit()]
    if len(ints) == len(values) and len(values) > 2 and ints == list(range(ints[0], ints[0] + len(ints))):
        return f"{values[0]}..{values[-1]}"
    return ",".join(values)


def _minutes(seconds: float) -> str:
    m = max(1, round(seconds / 60))
    return f"{m // 60} h {m % 60} min" if m >= 60 else f"{m} min"


@command(Bench, words=("bench", "benchmark"), usage="bench [c=1,4,16] [on <host>]",
         examples=("bench", "bench c=1,4,16"), parse=parse_bench, render=render_bench, role="experimenter",
         confirm="bench", schedulable=True)
async def do_bench(ctx: HandlerContext, msg: ChatMessage, cmd: Bench) -> Reply:
    """Benchmark the current configuration as it is (no deploy)."""
    host = ctx.resolve_host(msg, cmd.host)
    return await _submit(ctx, msg, kind="bench", host=host, params={"concurrency": _levels(cmd.concurrency)},
                         what="benchmark the current config")


async def _host_from_thread(ctx: HandlerContext, msg: ChatMessage, host: str | None) -> str:
    key = msg.thread_key or ""
    incidents = ctx.domain.incidents
    if host is None and key.startswith("incident:") and incidents is not None:
        inc = await incidents.get(int(key.split(":")[1]))
        return ctx.resolve_host(msg, inc.host)
    if host is None and key.startswith("job:"):
        job = await ctx.domain.jobs.get(int(key.split(":")[1]))
        return ctx.resolve_host(msg, job.host)
    return ctx.resolve_host(msg, host)


@command(Rollback, words=("rollback", "revert"), usage="rollback [host] [to <revision>]",
         examples=("rollback", "rollback gpu-1 to 3"), parse=parse_rollback, render=render_rollback,
         role="operator", confirm="rollback")
async def do_rollback(ctx: HandlerContext, msg: ChatMessage, cmd: Rollback) -> Reply:
    """Restore the last known-good unit (or a named revision) through the careful stop/start path."""
    host = await _host_from_thread(ctx, msg, cmd.host)
    target = f"revision {cmd.to_revision}" if cmd.to_revision else "the last known-good revision"
    return await _submit(ctx, msg, kind="rollback", host=host, params={"to_revision": cmd.to_revision},
                         what=f"roll back to {target}")


@command(KillStale, words=("kill-stale", "killstale"), usage="kill-stale [host] <pid>",
         examples=("kill-stale gpu-1 48213",), parse=parse_kill_stale, render=render_kill_stale, role="operator",
         confirm="kill-stale")
async def do_kill_stale(ctx: HandlerContext, msg: ChatMessage, cmd: KillStale) -> Reply:
    """Kill a leftover process that still holds GPU memory (confirmed and audited)."""
    host = ctx.resolve_host(msg, cmd.host)
    return await _submit(ctx, msg, kind="kill-stale", host=host, params={"pid": cmd.pid},
                         what=f"end pid {cmd.pid}, which holds GPU memory")
