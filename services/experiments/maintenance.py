"""Host maintenance jobs: bench (no deploy), rollback, kill-stale — and ending a process on a host.

Functions over an `Experiments` (like `services.experiments.sweeps`), called by its `pipeline` for those job kinds.
A rollback without a named revision restores the last known-good one, or — after an incident — the
revision that was live before pitcrew's last deploy.
"""

from __future__ import annotations

from typing import Any

from services.errors import Conflict, DeployFailed
from services.experiments.pipeline import Experiments
from services.jobs import JobContext, JobResultsReady
from services.store import AuditQuery
from services.units import Revision, config_label, read_exec_start, unit_engine


async def run_bench(exp: Experiments, ctx: JobContext) -> tuple[str, dict[str, Any]]:
    ops = exp.ops(ctx.job.host)
    levels = tuple(ctx.job.params.get("concurrency") or exp.bench_defaults.concurrency)
    rev = await exp.observe_live(ctx)
    await ops.prove_serving(deadline_s=60.0)
    argv = read_exec_start(rev.text).argv
    label = ctx.job.params.get("label") or config_label(argv, await exp.baseline_argv(ctx.job.host, ops.unit))
    run, crashed_at = await exp.benchmark(ctx, ops, levels, label=label, revision_id=rev.id, capacity={},
                                          engine=unit_engine(rev.text))
    prev = await exp.results.previous(ctx.job.host, run.model, before_id=run.id)
    v = await exp.verdict(run, prev)
    await exp.bus.publish(
        JobResultsReady(ctx.job.ref(), run.id, prev.id if prev else None, v, partial=crashed_at is not None)
    )
    if crashed_at is not None:
        raise DeployFailed(
            f"the server on {ctx.job.host} crashed under load at C={crashed_at}", result={"run_id": run.id}
        )
    return f"benchmark of {label}: {v}", {"run_id": run.id, "verdict": v}


async def run_rollback(exp: Experiments, ctx: JobContext) -> tuple[str, dict[str, Any]]:
    host = ctx.job.host
    ops = exp.ops(host)
    target_id = ctx.job.params.get("to_revision")
    if target_id is not None:
        target = await exp.revisions.get(int(target_id), host=host)
    else:
        good = await exp.revisions.last_known_good(host, ops.unit)
        before = await before_last_deploy(exp, host)
        # after an incident, undo pitcrew's last deploy; asked by a person, prefer the last known-good
        order = (before, good) if ctx.job.params.get("after_incident") else (good, before)
        found = next((r for r in order if r is not None), None)
        if found is None:
            raise Conflict(f"{host} has no known-good revision yet; name one with `rollback {host} to <id>`")
        target = found
    current_text = await ops.read_unit()
    await exp.revisions.observe(host, ops.unit, current_text)
    state = await ops.state()
    if current_text == target.text and state.active_state == "active":
        return f"{host} already runs revision {target.id}; nothing to roll back", {"revision": target.id}
    ctx.restoring = True  # a rollback is a restore: safe points (cancel, shutdown) never leave it half done
    await exp.deploy(
        ctx,
        ops,
        target.text,
        target,
        action="rollback",
        detail={"to_revision": target.id, "reason": ctx.job.params.get("reason", "requested")},
    )
    await exp.revisions.mark_known_good(target.id)
    return f"{host} rolled back to revision {target.id} and serving", {"revision": target.id}


async def before_last_deploy(exp: Experiments, host: str) -> Revision | None:
    """The revision that was live before pitcrew's most recent deploy on `host`."""
    recs = await exp.audit.query(AuditQuery(host=host, actions=("deploy",), newest_first=True, limit=1))
    rev_id = recs[0].detail.get("from_revision") if recs else None
    return await exp.revisions.get(int(rev_id), host=host) if isinstance(rev_id, int) else None


async def run_kill_stale(exp: Experiments, ctx: JobContext) -> tuple[str, dict[str, Any]]:
    host = ctx.job.host
    pid = int(ctx.job.params["pid"])
    ops = exp.ops(host)
    state = await ops.state()
    if state.main_pid == pid:
        raise Conflict(
            f"pid {pid} is the unit's own main process on {host}; use `rollback` or stop it, "
            "kill-stale only clears leftovers"
        )
    holders = {a.pid for a in await ops.gpu_apps()}
    if pid not in holders:
        raise Conflict(f"pid {pid} holds no GPU memory on {host}; nothing to clear")
    async with ctx.step("kill-stale") as d:
        await exp.kill_pid(ctx, host, pid)
        left = {a.pid for a in await ops.gpu_apps()}
        d["still_holding"] = sorted(left)
    if pid in left:
        raise DeployFailed(f"pid {pid} on {host} still holds GPU memory after SIGKILL")
    return f"pid {pid} on {host} ended; its GPU memory is free", {"pid": pid}


async def recover_host(exp: Experiments, ctx: JobContext) -> str:
    """After `ctx.job` was cut off (its process died or lost the host's lease), under this process's lease:
    read the host; when the unit does not serve, restore the last known-good revision and wait until it
    serves. Returns what was found and done, in words."""
    host = ctx.job.host
    ops = exp.ops(host)
    found = await exp.describe_host(host)
    state = await ops.state()
    if state.active_state in ("active", "activating", "reloading"):
        try:
            await ops.prove_serving(deadline_s=exp.policy.ready_deadline_s)
            return found
        except DeployFailed:
            pass
    good = await exp.revisions.last_known_good(host, ops.unit) or await before_last_deploy(exp, host)
    if good is None:
        return f"{found}; it does not serve and no known-good revision is recorded — check it with `status`"
    await exp.restore(ctx, ops, good, reason=f"job {ctx.job.id} was cut off and {host} did not serve")
    await ops.prove_serving(deadline_s=30.0)
    await exp.revisions.mark_known_good(good.id)
    return f"{found}; it did not serve, so the last known-good revision {good.id} was restored and serves"


async def restore_before(exp: Experiments, ctx: JobContext) -> str:
    """Put back the revision that was live before `ctx.job` (its first `read-unit` step) and wait until it
    serves; used when a shutdown cut the job short. Returns what was done, in words."""
    host = ctx.job.host
    ops = exp.ops(host)
    rev_id = await ctx.first_step_detail("read-unit", "revision")
    if not isinstance(rev_id, int):
        return await recover_host(exp, ctx)
    before = await exp.revisions.get(rev_id, host=host)
    await exp.restore(ctx, ops, before, reason="the bot is stopping")
    await ops.prove_serving(deadline_s=30.0)
    return f"{host} is back on revision {before.id}, the one live before the job, and serves"
