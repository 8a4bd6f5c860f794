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
from dataclasses import dataclass, field
from typing import Any, Protocol

from services.bench import BenchSpec, run_benchmark_isolated
from services.diagnosis import Diagnosis, SideEvidence, diagnose, gather_side_evidence
from services.errors import BenchmarkError, DeployFailed, JobCancelled, PitcrewError, UnitError, UserInputError
from services.events import EventBus
from services.experiments.forecast import CapacityPoint, Forecast, config_point, forecast, forecast_error
from services.experiments.host_checks import check_host
from services.experiments.preflight import (
    FAIL,
    OK,
    PREVIEW_FLAG_WAIT_S,
    WARN,
    Check,
    EngineFlagCache,
    PreflightReport,
    check_flags,
)
from services.experiments.ramp import ramp
from services.experiments.results import Results, RunSummary
from services.experiments.verdicts import verdict
from services.hosts import Host, HostPool, check_guard, fenced
from services.jobs import JobContext, JobProgressed, JobResultsReady
from services.store import AuditActor, AuditLog, AuditQuery
from services.units import (
    FlagPlan,
    ReadyReport,
    Revision,
    Revisions,
    StartFailed,
    UnitOps,
    UnitState,
    apply_changes,
    changes_label,
    config_label,
    format_change,
    get_flag,
    knob_of,
    lookup_flag,
    read_exec_start,
    rewrite_exec_start,
    schema_engine,
    unit_engine,
)

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class ExperimentPolicy:
    """Plain policy values the composition root passes down."""

    auto_rollback: bool = True
    kill_stale_automatically: bool = False
    ready_timeout_s: float = 900.0
    stop_timeout_s: float = 180.0
    sweep_end: str = "best"  # "best" or "start"
    time_scale: float = 1.0
    ramp: bool = True  # after a start, load up to the top benchmark level in steps before the benchmark
    ramp_tokens: int = 64


@dataclass(frozen=True)
class BenchDefaults:
    concurrency: tuple[int, ...] = (1, 4, 16)
    requests_per_level: int = 32
    warmup: int = 2
    input_len: int = 256
    output_len: int = 256
    max_duration_s: float = 1800.0


@dataclass(frozen=True)
class Preview:
    host: str
    unit_path: str
    diff: tuple[str, ...]
    notes: tuple[str, ...]
    changed: bool
    checks: tuple[str, ...] = ()  # preflight lines (✓ / ⚠ / ✗)
    refused: bool = False  # a ✗: the configuration cannot start; nothing may be changed
    forecast: dict[str, Any] | None = None

    def to_json(self) -> dict[str, Any]:
        return {"host": self.host, "unit_path": self.unit_path, "diff": list(self.diff),
                "notes": list(self.notes), "changed": self.changed, "checks": list(self.checks),
                "refused": self.refused, "forecast": self.forecast}


@dataclass
class TrialOutcome:
    """What one deploy-and-benchmark produced."""

    label: str
    run: RunSummary | None = None
    previous: RunSummary | None = None
    verdict: str = ""
    capacity: dict[str, Any] = field(default_factory=dict)
    crashed_at: int | None = None
    revision_after: int | None = None
    forecast: dict[str, Any] | None = None  # the capacity forecast and its error against the logged capacity


def label_for(changes: dict[str, str]) -> str:
    """What a try asked for, in words (`services.units.changes_label`): ``steps 4 · mem 0.85``."""
    return changes_label(changes)


class RestartNotices(Protocol):
    """Tells the incident watch which failures are pitcrew's own (a deploy's stop and start)."""

    def expect(self, host: str, kind: str, *, until: float) -> None: ...

    def clear_expected(self, host: str) -> None: ...


class Experiments:
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

    def ops(self, host: str) -> UnitOps:
        return UnitOps(self.host(host), time_scale=self.policy.time_scale)

    def host(self, name: str) -> Host:
        """The host, with every action behind the running job's fence (see `services.hosts.fence`)."""
        return fenced(self.hosts.get(name))

    async def describe_host(self, host: str) -> str:
        """What is live on `host` now: unit state and the recorded revision it runs (for interrupted jobs)."""
        ops = self.ops(host)
        st = await ops.state()
        text = await ops.read_unit()
        rev = await self.revisions.observe(host, ops.unit, text)
        label = config_label(read_exec_start(text).argv, await self.baseline_argv(host, ops.unit))
        return (f"{ops.unit} is {st.active_state}/{st.sub_state} (restarts {st.n_restarts}) on revision {rev.id} "
                f"({label}); nothing was re-run")

    async def baseline_argv(self, host: str, unit: str) -> tuple[str, ...] | None:
        """The ExecStart= words of the host's baseline revision (the first pitcrew recorded), for labels."""
        base = await self.revisions.baseline(host, unit)
        if base is None:
            return None
        try:
            return read_exec_start(base.text).argv
        except UnitError:
            return None

    # ---- previews ---------------------------------------------------------------------------
    async def preview(self, host: str, changes: dict[str, str], *,
                      levels: tuple[int, ...] | None = None) -> Preview:
        """The flag diff and the preflight (engine flags, host, capacity forecast); nothing on the host changes."""
        ops = self.ops(host)
        text = await ops.read_unit()
        argv = read_exec_start(text).argv
        try:
            plan = apply_changes(argv, changes)
        except UserInputError:
            # pitcrew's schema refuses it; when the engine's own parser does too, its wording is the answer
            checks = await check_flags(self.engine_flags, ops.host, with_flags(argv, changes),
                                       wait_s=PREVIEW_FLAG_WAIT_S)
            if any(c.status == FAIL for c in checks):
                diff = tuple(f"{k} {get_flag(argv, k) or '(unset)'} -> {v}" for k, v in changes.items())
                return Preview(host, ops.unit_path, diff, (), True, tuple(c.line() for c in checks), refused=True)
            raise
        diff = tuple(format_change(c) for c in plan.diff)
        if not plan.changed:
            return Preview(host, ops.unit_path, diff, plan.notes, False)
        report = await self.preflight(ops, text, plan.new_argv, levels or self.bench_defaults.concurrency)
        return Preview(host, ops.unit_path, diff, plan.notes, plan.changed, report.lines(), report.refused,
                       report.forecast)

    async def preflight(self, ops: UnitOps, text: str, new_argv: tuple[str, ...],
                        levels: tuple[int, ...]) -> PreflightReport:
        """Flags by the engine's parser, host checks (one exec each, concurrently) and the capacity forecast."""
        t0 = time.monotonic()
        flags, hostc, fc = await asyncio.gather(
            check_flags(self.engine_flags, ops.host, new_argv, wait_s=PREVIEW_FLAG_WAIT_S),
            check_host(ops.host, ops.unit, text, new_argv),
            self.forecast_for(ops.spec.name, new_argv))
        report = PreflightReport(checks=[*flags, *hostc])
        if fc is not None:
            report.forecast = fc.to_json()
            top = max(levels) if levels else 0
            low = fc.max_running is not None and fc.max_running < top
            status = WARN if (fc.extrapolated or low or fc.notes) else OK
            report.checks.append(Check(status, fc.line()))
            report.checks.extend(Check(WARN, n) for n in fc.notes)
            if low:
                report.checks.append(Check(WARN, f"forecast max running requests ~{fc.max_running} is below the "
                                                 f"benchmark's highest concurrency {top}: requests will queue"))
        else:
            report.checks.append(Check(WARN, "forecast: no recorded start on this host to forecast from"))
        report.seconds = time.monotonic() - t0
        return report

    async def preflight_gate(self, ctx: JobContext, ops: UnitOps, before: Revision,
                             new_argv: tuple[str, ...]) -> None:
        """Right before a deploy (the host may have changed since the preview; sweeps have no per-value preview):
        the engine's flag check and the host checks again; a ✗ fails the trial with the host untouched."""
        async with ctx.step("preflight") as d:
            checks = [*await check_flags(self.engine_flags, ops.host, new_argv),
                      *await check_host(ops.host, ops.unit, before.text, new_argv)]
            d["checks"] = [c.line() for c in checks]
        failed = [c.text for c in checks if c.status == FAIL]
        if failed:
            raise DeployFailed(f"preflight refused the new configuration on {ctx.job.host}: {'; '.join(failed)}. "
                               "Nothing on the host was changed.",
                               result={"preflight": [c.line() for c in checks], "host_untouched": True})

    async def capacity_history(self, host: str, limit: int = 60) -> list[CapacityPoint]:
        """This host's recorded configurations with the capacity their start logged (oldest first)."""
        points: list[CapacityPoint] = []
        texts: dict[int, str] = {}
        for run in reversed(await self.results.recent(host, limit)):
            if not run.capacity or run.revision_id is None:
                continue
            if run.revision_id not in texts:
                try:
                    texts[run.revision_id] = (await self.revisions.get(run.revision_id)).text
                except PitcrewError:
                    continue
            argv = read_exec_start(texts[run.revision_id]).argv
            points.append(config_point(argv, run.capacity, label=config_label(argv)))
        return points

    async def forecast_for(self, host: str, argv: tuple[str, ...]) -> Forecast | None:
        return forecast(config_point(argv, label=config_label(argv)), await self.capacity_history(host))

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
            outcome.capacity = _capacity_json(ready, unit_engine(new_text))
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
                res = await ramp(ops.spec.server_url, top, max_tokens=self.policy.ramp_tokens,
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
            ready = await ops.start_and_wait(deadline_s=self.policy.ready_timeout_s * self.policy.time_scale,
                                             engine=unit_engine(text),
                                             progress=lambda p: self.progress(ctx, p))
            d["seconds"] = round(ready.seconds, 2)
            d["ready_line_s"] = ready.ready_line_seconds
            d["capacity"] = _capacity_json(ready, unit_engine(text))
        return ready

    async def benchmark(self, ctx: JobContext, ops: UnitOps, levels: tuple[int, ...], *, label: str,
                        engine: str = "sglang",
                        revision_id: int | None, capacity: dict[str, Any]) -> tuple[RunSummary, int | None]:
        """Benchmark the live server; returns the stored run and the level it crashed at, if any."""
        host = ctx.job.host
        b = self.bench_defaults
        spec = BenchSpec(url=ops.spec.server_url, concurrency=levels, requests_per_level=b.requests_per_level,
                         warmup=b.warmup, input_len=b.input_len, output_len=b.output_len,
                         timeout_s=min(b.max_duration_s, 600.0))
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
                probe = "vllm" if engine == "vllm" else "sglang"  # each engine's own counters
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

    async def diagnose_now(self, ctx: JobContext, ops: UnitOps) -> Diagnosis:
        entries = await ops.recent_entries(400)
        side = await gather_side_evidence(ops.host, ops.unit)
        actions = await self.audit.query(AuditQuery(host=ctx.job.host, newest_first=True, limit=50,
                                                    actions=("deploy", "start", "stop", "restart", "rollback",
                                                             "kill")))
        side["actions"] = [{"at": a.at.isoformat(), "who": a.actor_name or a.actor_id, "action": a.action,
                            "detail": str(a.detail.get("changes") or a.detail)} for a in reversed(actions)]
        return diagnose(entries, SideEvidence.from_json(side), unit=ops.unit)

    # ---- bench, rollback, kill-stale -------------------------------------------------------------
def _capacity_json(ready: ReadyReport | None, engine: str) -> dict[str, Any]:
    if ready is None:
        return {}
    out: dict[str, Any] = {"engine": engine}
    if ready.engine_version:
        out["engine_version"] = ready.engine_version
    if ready.capacity is None:
        return out
    c = ready.capacity
    vllm = {"max_concurrency": c.max_concurrency, "concurrency_tokens": c.concurrency_tokens,
            "kv_cache_gib": c.kv_cache_gib} if engine == "vllm" else {}
    return {"max_total_num_tokens": c.max_total_num_tokens, "max_running_requests": c.max_running_requests,
            "context_len": c.context_len, "available_gpu_mem_gb": c.available_gpu_mem_gb, **vllm, **out}


def with_flags(argv: tuple[str, ...], changes: dict[str, str]) -> tuple[str, ...]:
    """``argv`` with each changed flag set as typed (for the engine's parser to judge values pitcrew refuses)."""
    names = {}
    engine = schema_engine(argv)
    for word, value in changes.items():
        fdef = lookup_flag(word)
        knob = knob_of(fdef.name) if fdef else None
        name = knob.flag(engine) if knob else fdef.name if fdef else word if word.startswith("--") else f"--{word}"
        if name == "--num-speculative-tokens" and get_flag(argv, name) is None:
            continue  # vLLM's spec tokens live in --speculative-config: not a flag its parser would see
        names[name] = value
    out: list[str] = []
    i = 0
    while i < len(argv):
        w = argv[i]
        name = w.partition("=")[0]
        if name in names and i > 0:
            i += 1 if "=" in w or i + 1 >= len(argv) or argv[i + 1].startswith("--") else 2
            continue
        out.append(w)
        i += 1
    for name, value in names.items():
        out.extend([name] if value == "true" else [name, value])
    return tuple(out)
