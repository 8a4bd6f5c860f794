"""The experiment pipelines: try (deploy a flag change, then benchmark), bench, rollback, kill-stale.

`services.experiments.dispatch.job_pipeline` is what the job runner calls for each job. A try reads the live unit
(stored as a revision), rewrites only the `ExecStart=` flags, uploads it atomically and reloads,
stops with care (inactive and GPU memory released), starts and waits until it serves, records the
capacity lines, benchmarks, stores and compares the results, and marks the revision known-good.
A failure while loading is diagnosed from the journal and, by policy, rolled back automatically.
Cancelling restores the revision that was live before the job. Sweeps live in `services.experiments.sweeps`.
"""

from __future__ import annotations

import asyncio
import logging
import time
from typing import Any

from services.bench import BenchSpec, run_benchmark_isolated
from services.engines import FlagPlan, apply_changes, engine_named, format_change
from services.errors import BenchmarkError, DeployFailed, JobCancelled
from services.events import EventBus
from services.experiments.forecast import forecast_error
from services.experiments.plans import (
    BenchDefaults,
    ExperimentPolicy,
    RestartNotices,
    TrialOutcome,
    capacity_json,
)
from services.experiments.preflight import (
    EngineFlagCache,
)
from services.experiments.previews import Previews
from services.experiments.ramp import ramp
from services.experiments.results import Results, RunSummary
from services.experiments.verdicts import verdict
from services.hosts import HostPool, check_guard
from services.jobs import JobContext, JobProgressed, JobResultsReady
from services.store import AuditActor, AuditLog
from services.units import (
    ReadyReport,
    Revision,
    Revisions,
    StartFailed,
    UnitOps,
    UnitState,
    config_label,
    read_exec_start,
    rewrite_exec_start,
    unit_engine,
)

log = logging.getLogger(__name__)


class Experiments(Previews):
    """The pipelines behind try, bench, rollback and kill-stale jobs."""

    def __init__(self, *, hosts: HostPool, revisions: Revisions, results: Results, audit: AuditLog,
                 bus: EventBus, policy: ExperimentPolicy, bench: BenchDefaults,
                 notices: RestartNotices | None = None) -> None:
        self.hosts = hosts
        self.revisions = revisions
        self.results = results
        self.audit = audit
        self.bus = bus
        self.policy = policy
        self.bench_defaults = bench
        self.notices = notices
        self.engine_flags = EngineFlagCache()
        self.time_scale = policy.time_scale

    async def progress(self, ctx: JobContext, phase: str, detail: str = "") -> None:
        await self.bus.publish(JobProgressed(ctx.job.ref(), phase, detail, tuple(ctx.steps_done)))

    async def kill_pid(self, ctx: JobContext, host: str, pid: int) -> None:
        """End `pid` on `host` (TERM, then KILL after 5 s), audited as the job's requester."""
        h = self.host(host)
        await self.audit.record(
            None, actor=self.actor(ctx), action="kill", host=host, detail={"pid": pid, "job": ctx.job.id}
        )
        await h.run(["kill", "-TERM", str(pid)], timeout=10.0, sudo=h.spec.sudo)
        for _ in range(20):
            res = await h.run(["kill", "-0", str(pid)], timeout=10.0, sudo=h.spec.sudo)
            if not res.ok:
                return
            await asyncio.sleep(0.25)
        await h.run(["kill", "-KILL", str(pid)], timeout=10.0, sudo=h.spec.sudo)

    def actor(self, ctx: JobContext) -> AuditActor:
        j = ctx.job
        return AuditActor(j.requested_by, j.requested_by_name, j.transport, j.channel)

    # ---- try ---------------------------------------------------------------------------------
    async def run_try(self, ctx: JobContext) -> tuple[str, dict[str, Any]]:
        changes = dict(ctx.job.params.get("changes", {}))
        levels = tuple(ctx.job.params.get("concurrency") or self.bench_defaults.concurrency)
        before = await self.observe_live(ctx)
        outcome = await self.trial(ctx, before, changes, levels)
        result = {"run_id": outcome.run.id if outcome.run else None, "verdict": outcome.verdict,
                  "label": outcome.label, "capacity": outcome.capacity,
                  "revision_before": before.id, "revision_after": outcome.revision_after,
                  "forecast": outcome.forecast}
        return f"{outcome.label}: {outcome.verdict}", result

    async def verdict(self, run: RunSummary, prev: RunSummary | None) -> str:
        """The noise-aware verdict of `run` against `prev` (the bootstrap runs in a thread)."""
        repeats = await self.results.repeats(run.host, run.model)
        return await asyncio.to_thread(verdict, run, prev, repeats)

    async def observe_live(self, ctx: JobContext) -> Revision:
        ops = self.ops(ctx.job.host)
        async with ctx.step("read-unit") as d:
            text = await ops.read_unit()
            rev = await self.revisions.observe(ctx.job.host, ops.unit, text, by="observed")
            d["revision"] = rev.id
        return rev

    async def trial(self, ctx: JobContext, before: Revision, changes: dict[str, str],
                    levels: tuple[int, ...], *, restore_on_failure: bool = True) -> TrialOutcome:
        """Deploy `changes` on top of `before`, wait until serving, benchmark; roll back on failure."""
        host = ctx.job.host
        ops = self.ops(host)
        plan: FlagPlan = apply_changes(read_exec_start(before.text).argv, changes)
        label = config_label(plan.new_argv, await self.baseline_argv(host, ops.unit))
        outcome = TrialOutcome(label=label)
        await ctx.checkpoint()
        predicted = await self.forecast_for(host, plan.new_argv) if plan.changed else None
        if plan.changed:
            await self.preflight_gate(ctx, ops, before, plan.new_argv)
            new_text = rewrite_exec_start(before.text, plan.new_argv)
            after = await self.revisions.observe(host, ops.unit, new_text, source="deployed",
                                                 by=ctx.job.requested_by_name or ctx.job.requested_by)
            outcome.revision_after = after.id
            try:
                ready = await self.deploy(ctx, ops, new_text, after, action="deploy",
                                          detail={"changes": [format_change(c) for c in plan.diff],
                                                  "from_revision": before.id,
                                                  "summary": f"{label} (revision {before.id} -> {after.id})"})
            except (StartFailed, DeployFailed) as e:
                await self._fail_and_restore(ctx, ops, before, e, restore_on_failure)
                raise
            except JobCancelled:
                await self.restore(ctx, ops, before, reason="cancelled")
                raise JobCancelled(f"job {ctx.job.id} was cancelled; {host} is back on revision {before.id}") \
                    from None
            outcome.capacity = capacity_json(ready, unit_engine(new_text))
            if predicted is not None and outcome.capacity:
                outcome.forecast = {**predicted.to_json(),
                                    "error": forecast_error(predicted.to_json(), outcome.capacity)}
            if self.policy.ramp:
                await self.ramp_up(ctx, ops, before, levels, label=label, restore_on_failure=restore_on_failure,
                                   outcome=outcome)
        else:
            outcome.revision_after = before.id
            await self.progress(ctx, "no change to deploy", f"{host} already runs {label}")
            await ops.prove_serving(deadline_s=60.0)
        try:
            run, crashed_at = await self.benchmark(ctx, ops, levels, label=label,
                                                   engine=unit_engine(before.text),  # flag edits keep the engine
                                                   revision_id=outcome.revision_after, capacity=outcome.capacity)
        except JobCancelled:
            await self.restore(ctx, ops, before, reason="cancelled")
            raise JobCancelled(f"job {ctx.job.id} was cancelled; {host} is back on revision {before.id}") from None
        outcome.run = run
        outcome.previous = await self.results.previous(host, run.model, before_id=run.id)
        outcome.verdict = await self.verdict(run, outcome.previous)
        await self.bus.publish(JobResultsReady(ctx.job.ref(), run.id, outcome.previous.id if outcome.previous
                                               else None, outcome.verdict, partial=crashed_at is not None))
        if crashed_at is not None:
            outcome.crashed_at = crashed_at
            message = (f"{label} on {host}: the server crashed under load at C={crashed_at} "
                       f"(it served lower levels; results above)")
            err = DeployFailed(message, result={"run_id": run.id, "crashed_at": crashed_at})
            # A crash after the server was ready is the server's own failure: when the incident watch is
            # running it follows the restarts, diagnoses the loop from all of them, alerts once and (policy
            # auto_rollback) rolls back; without it, this job restores the previous revision itself.
            watched = self.notices is not None
            await self._fail_and_restore(ctx, ops, before, err, restore_on_failure and not watched)
            if watched and restore_on_failure:
                err.fields["result"]["handed_to_incidents"] = True
            raise err
        if outcome.revision_after is not None:
            await self.revisions.mark_known_good(outcome.revision_after)
        return outcome

    async def ramp_up(self, ctx: JobContext, ops: UnitOps, before: Revision, levels: tuple[int, ...], *,
                      label: str, restore_on_failure: bool, outcome: TrialOutcome) -> None:
        """Load the new server up to the top benchmark level in steps; at the first error, roll back and raise."""
        host = ctx.job.host
        top = max(levels) if levels else 1
        state_before = await ops.state()
        try:
            async with ctx.step("ramp") as d:
                # requests no longer than the benchmark's own: a ramp is a probe of the load to come, not more of it
                # (at the suite's 24-token benchmarks the 64-token ramp was most of a real llama.cpp trial's decoding)
                res = await ramp(ops.spec.server_url, top,
                                 max_tokens=min(self.policy.ramp_tokens, self.bench_defaults.output_len),
                                 timeout_s=min(self.bench_defaults.max_duration_s, 120.0),
                                 progress=lambda c: self.progress(ctx, f"ramp C={c}", f"up to C={top}"))
                d.update({"levels_ok": res.levels_ok, "failed_at": res.failed_at, "seconds": round(res.seconds, 2),
                          "tok_s": {str(k): round(v, 1) for k, v in res.tok_s.items()}})
        except JobCancelled:
            await self.restore(ctx, ops, before, reason="cancelled")
            raise JobCancelled(f"job {ctx.job.id} was cancelled; {host} is back on revision {before.id}") from None
        if res.failed_at is None:
            return
        crashed = await self._settled_crash(ops, state_before)
        held = f"C={res.levels_ok[-1]} held" if res.levels_ok else "no level held"
        what = "crashed" if crashed else "answered errors"
        outcome.crashed_at = res.failed_at
        err = DeployFailed(f"{label} on {host}: the server {what} under the ramp at C={res.failed_at} ({held}; "
                           f"{res.error}); the full benchmark was not run",
                           result={"ramp_failed_at": res.failed_at, "ramp_levels_ok": res.levels_ok,
                                   "ramp_tok_s": {str(k): round(v, 1) for k, v in res.tok_s.items()},
                                   "crashed": crashed, "capacity": outcome.capacity, "forecast": outcome.forecast})
        # a crash is the server's own failure: with the incident watch on, it follows the restarts and rolls back
        watched = self.notices is not None and crashed
        await self._fail_and_restore(ctx, ops, before, err, restore_on_failure and not watched)
        if watched and restore_on_failure:
            err.fields["result"]["handed_to_incidents"] = True
        raise err

    async def _settled_crash(self, ops: UnitOps, before: UnitState) -> bool:
        """Whether the server died (restarted, or left active); waits until systemd has dealt with the dead
        instance (a restart or an inactive unit), so the diagnosis does not see its dying processes."""
        deadline = time.monotonic() + 2.0 + 30.0 * self.policy.time_scale
        seen_dead = False
        while True:
            st = await ops.state()
            if st.n_restarts > before.n_restarts or st.inactive:
                return True
            if st.main_pid != before.main_pid or st.active_state != "active":
                seen_dead = True
            if time.monotonic() > deadline:
                return seen_dead
            await asyncio.sleep(max(0.05, 0.5 * self.policy.time_scale))

    async def deploy(self, ctx: JobContext, ops: UnitOps, text: str, rev: Revision, *, action: str,
                     detail: dict[str, Any]) -> ReadyReport:
        """Write `text`, reload, stop with care, start and wait until serving."""
        host = ctx.job.host
        if self.notices is not None:
            window = (self.policy.stop_timeout_s + self.policy.ready_timeout_s) * self.policy.time_scale + 30
            self.notices.expect(host, action, until=window)
        try:
            return await self._deploy(ctx, ops, text, rev, action=action, detail=detail)
        finally:
            # from here on a failure is the server's own: the incident watch judges it
            if self.notices is not None:
                self.notices.clear_expected(host)

    async def _deploy(self, ctx: JobContext, ops: UnitOps, text: str, rev: Revision, *, action: str,
                      detail: dict[str, Any]) -> ReadyReport:
        host = ctx.job.host
        actor = self.actor(ctx)
        async with ctx.step("write-unit") as d:
            await self.progress(ctx, "writing the unit", "")
            await ops.write_unit(text)
            await self.audit.record(None, actor=actor, action=action, host=host,
                                    command_text=ctx.job.command_text,
                                    detail={"job": ctx.job.id, "revision": rev.id, **detail})
            d["revision"] = rev.id
        await ctx.checkpoint()
        async with ctx.step("stop") as d:
            await self.audit.record(None, actor=actor, action="stop", host=host, detail={"job": ctx.job.id})
            report = await ops.stop(deadline_s=self.policy.stop_timeout_s,
                                    progress=lambda p: self.progress(ctx, p))
            d["seconds"] = round(report.seconds, 2)
            if report.result == "timeout":  # the field notes' incident 1: not a crash, and pitcrew's own stop
                d["sigkill"] = True
                await self.audit.record(None, actor=actor, action="stop-timeout", host=host,
                                        detail={"job": ctx.job.id, "seconds": d["seconds"],
                                                "summary": "the server did not exit within TimeoutStopSec; "
                                                           "systemd sent SIGKILL (requests were still in flight)"})
            if report.holders:
                holders = ", ".join(f"pid {h.pid} ({h.name}, {h.used_mib} MiB)" for h in report.holders)
                d["holders"] = [h.pid for h in report.holders]
                if not self.policy.kill_stale_automatically:
                    raise DeployFailed(
                        f"GPU memory on {host} is still held after the stop by {holders}. It blocks the new "
                        f"start; clear it with `kill-stale {host} {report.holders[0].pid}` (confirmed and audited)")
                for h in report.holders:
                    await self.kill_pid(ctx, host, h.pid)
        await ctx.checkpoint()
        async with ctx.step("start") as d:
            await self.audit.record(None, actor=actor, action="start", host=host, detail={"job": ctx.job.id})
            ready = await ops.start_and_wait(deadline_s=self.policy.ready_deadline_s,
                                             engine=unit_engine(text),
                                             progress=lambda p: self.progress(ctx, p))
            d["seconds"] = round(ready.seconds, 2)
            d["ready_line_s"] = ready.ready_line_seconds
            d["capacity"] = capacity_json(ready, unit_engine(text))
        return ready

    async def benchmark(self, ctx: JobContext, ops: UnitOps, levels: tuple[int, ...], *, label: str,
                        engine: str = "sglang",
                        revision_id: int | None, capacity: dict[str, Any]) -> tuple[RunSummary, int | None]:
        """Benchmark the live server; returns the stored run and the level it crashed at, if any."""
        host = ctx.job.host
        b = self.bench_defaults
        # prompts of their own for each run (the job and how far it got): a server's prompt cache keeps what an
        # earlier run of the same prompts computed (llama-server's slots and its RAM cache), so a second identical
        # run skips the prefill the first paid for and reads faster than a run right after a restart
        spec = BenchSpec(url=ops.spec.server_url, concurrency=levels, requests_per_level=b.requests_per_level,
                         warmup=b.warmup, input_len=b.input_len, output_len=b.output_len,
                         timeout_s=min(b.max_duration_s, 600.0), seed=ctx.job.id * 1000 + len(ctx.steps_done))
        cancel = asyncio.Event()
        before_state = await ops.state()

        async def on_progress(p: dict[str, Any]) -> None:
            phase = " (warmup)" if p.get("phase") == "warmup" else ""
            await self.progress(ctx, f"benchmark C={p.get('concurrency')}{phase}",
                                f"{p.get('done')}/{p.get('total')} requests")
            if await ctx.cancel_requested():
                cancel.set()

        over_limit = asyncio.Event()

        async def limit() -> None:  # BenchSpec.timeout_s bounds each request; this bounds the whole run
            await asyncio.sleep(b.max_duration_s)
            over_limit.set()
            cancel.set()

        await check_guard()  # the benchmark loads the host's server: only while this job holds the host
        limiter = asyncio.create_task(limit())
        try:
            async with ctx.step("benchmark") as d:
                probe = engine_named(engine).name  # each engine's own counters (an unknown one reads as the default)
                result = await run_benchmark_isolated(spec, progress=on_progress, probe=probe, cancel=cancel)
                data = result.doc
                d["levels"] = [lv["concurrency"] for lv in data["levels"]]
        finally:
            limiter.cancel()
        attempted = sum(int(lv.get("requests") or 0) for lv in result.levels)
        answered = attempted - sum(int(lv.get("failed") or 0) for lv in result.levels)
        if over_limit.is_set():
            if answered <= 0:
                raise BenchmarkError(f"the server on {host} answered none of the benchmark's requests within its "
                                     f"limit of {b.max_duration_s:g} s (bench.max_duration_s): it accepts "
                                     "connections but does not answer; nothing was recorded")
            raise BenchmarkError(f"the benchmark on {host} was stopped at its limit of {b.max_duration_s:g} s "
                                 f"(bench.max_duration_s) after {answered} answered requests; ask for fewer levels "
                                 "or raise the limit")
        if result.cancelled:
            raise JobCancelled(f"job {ctx.job.id} was cancelled during the benchmark")
        crashed_at = None
        for lv in result.levels:
            failed, done = int(lv.get("failed") or 0), int(lv.get("requests") or 0)
            if failed and (done == 0 or failed >= max(1, done // 4)):
                st = await ops.state()
                if st.n_restarts > before_state.n_restarts or st.main_pid != before_state.main_pid \
                        or st.active_state != "active":
                    crashed_at = int(lv["concurrency"])
                    break
        if crashed_at is None and attempted and answered <= 0:
            raise BenchmarkError(f"the server on {host} accepted the benchmark's connections but answered none of "
                                 f"its {attempted} requests (each waited {spec.timeout_s:g} s); nothing was recorded")
        model = result.model or ""
        kept = {**data, "levels": [lv for lv in data["levels"]
                                   if crashed_at is None or lv["concurrency"] < crashed_at]}
        run = await self.results.save(host=host, model=model, label=label, result=kept,
                                      ok=crashed_at is None, job_id=ctx.job.id, revision_id=revision_id,
                                      capacity=capacity)
        await self.audit.record(None, actor=self.actor(ctx), action="benchmark", host=host,
                                detail={"job": ctx.job.id, "run": run.id, "crashed_at": crashed_at})
        return run, crashed_at

    async def restore(self, ctx: JobContext, ops: UnitOps, rev: Revision, *, reason: str) -> ReadyReport | None:
        """Put `rev` back and start it (used on cancel and on failure)."""
        was, ctx.restoring = ctx.restoring, True  # safe points do not interrupt putting the unit back
        try:
            current = await ops.read_unit()
            state = await ops.state()
            if current == rev.text and state.active_state == "active":
                return None
            await self.progress(ctx, f"restoring revision {rev.id}", reason)
            detail: dict[str, Any] = {"reason": reason, "to_revision": rev.id}
            if ctx.step_prefix:  # a repair after the job was cut off, not the job's own work
                detail["recovery"] = ctx.step_prefix.rstrip(":")
            return await self.deploy(ctx, ops, rev.text, rev, action="rollback", detail=detail)
        finally:
            ctx.restoring = was

    async def _fail_and_restore(self, ctx: JobContext, ops: UnitOps, before: Revision, err: Exception,
                                restore: bool) -> None:
        diag = await self.diagnose_now(ctx, ops)
        err_fields = getattr(err, "fields", {})
        err_fields["diagnosis"] = diag.to_json()
        if restore and self.policy.auto_rollback:
            try:
                await self.restore(ctx, ops, before, reason=f"automatic rollback after {diag.cause}")
                err_fields["rolled_back_to"] = before.id
            except Exception as e:  # the rollback itself failed: say so, keep the first error
                log.warning("automatic rollback on %s failed: %s", ctx.job.host, e)
                err_fields["rollback_failed"] = str(e)
        if isinstance(err, DeployFailed):
            err.fields.setdefault("result", {}).update(
                {"diagnosis": diag.to_json(), "rolled_back_to": err_fields.get("rolled_back_to"),
                 "rollback_failed": err_fields.get("rollback_failed")})
