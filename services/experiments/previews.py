"""Reading a host on the `Experiments` service, without changing it: the preview (the flag diff of a change, the
engine's own flag check, the host checks and the capacity forecast — everything that can be known before the
working server is stopped), the same checks again right before a deploy (`preflight_gate`), what is live on a host
(`describe_host`) and a diagnosis of its journal now (`diagnose_now`)."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable, Sequence

from services.diagnosis import Diagnosis, SideEvidence, diagnose, gather_side_evidence
from services.engines import apply_changes, engine_for, format_change, get_flag
from services.errors import DeployFailed, PitcrewError, UnitError, UserInputError
from services.experiments.forecast import CapacityPoint, Forecast, config_point, forecast
from services.experiments.host_checks import check_host
from services.experiments.plans import BenchDefaults, Preview, with_flags
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
from services.experiments.results import Results
from services.hosts import Host, HostPool, fenced
from services.jobs import JobContext
from services.journal import JournalEntry, SystemdEvent, classify
from services.store import AuditLog, AuditQuery
from services.units import (
    Revision,
    Revisions,
    UnitOps,
    config_label,
    flag_diff,
    read_exec_start,
)


class Previews:
    """The preview side of `Experiments` (a base class: the pipeline builds on it)."""

    hosts: HostPool
    revisions: Revisions
    results: Results
    bench_defaults: BenchDefaults
    engine_flags: EngineFlagCache
    time_scale: float
    audit: AuditLog

    def ops(self, host: str) -> UnitOps:
        return UnitOps(self.host(host), time_scale=self.time_scale)

    def host(self, name: str) -> Host:
        """The host, with every action behind the running job's fence (see `services.hosts.fence`)."""
        return fenced(self.hosts.get(name))

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
                      levels: tuple[int, ...] | None = None,
                      host_busy: Callable[[], Awaitable[bool]] | None = None) -> Preview:
        """The flag diff and the preflight (engine flags, host, capacity forecast); nothing on the host changes.
        `host_busy` (asked after the checks, only when one failed) says whether another job of the host is running
        or queued: then what runs on the host now (port and GPU holders) will change before this job starts, and
        those failures become warnings that the job's own preflight gate checks again."""
        ops = self.ops(host)
        text = await ops.read_unit()
        argv = read_exec_start(text).argv
        engine = engine_for(argv).name
        try:
            plan = apply_changes(argv, changes)
        except UserInputError:
            # pitcrew's schema refuses it; when the engine's own parser does too, its wording is the answer
            checks = await check_flags(self.engine_flags, ops.host, with_flags(argv, changes),
                                       wait_s=PREVIEW_FLAG_WAIT_S)
            if any(c.status == FAIL for c in checks):
                diff = tuple(f"{k} {get_flag(argv, k) or '(unset)'} -> {v}" for k, v in changes.items())
                return Preview(host, ops.unit_path, diff, (), True, tuple(c.line() for c in checks), refused=True,
                               engine=engine)
            raise
        diff = tuple(format_change(c) for c in plan.diff)
        if not plan.changed:
            return Preview(host, ops.unit_path, diff, plan.notes, False, engine=engine)
        report, drift = await asyncio.gather(
            self.preflight(ops, text, plan.new_argv, levels or self.bench_defaults.concurrency),
            self.drift_check(ops, text))
        if drift is not None:
            report.checks.insert(0, drift)
        if report.refused and host_busy is not None and await host_busy():
            report.checks = [c.softened("another job on this host is running or queued; checked again when this "
                                        "job starts") for c in report.checks]
        return Preview(host, ops.unit_path, diff, plan.notes, plan.changed, report.lines(), report.refused,
                       report.forecast, engine=engine)

    async def drift_check(self, ops: UnitOps, text: str) -> Check | None:
        """A warning when the live unit file was changed outside pitcrew (no revision it wrote or saw; against the
        one it last ran there), and when systemd has not reloaded the file the server runs from."""
        reference, state = await asyncio.gather(self.revisions.drift(ops.spec.name, ops.unit, text), ops.state())
        parts = []
        if reference is not None:
            changes = "; ".join(format_change(c) for c in flag_diff(reference.text, text))
            parts.append(f"unit file: changed outside pitcrew since revision {reference.id} "
                         f"({changes or 'lines outside ExecStart='}); this try starts from the file as it is now")
        if state.raw.get("NeedDaemonReload") == "yes":
            parts.append("systemd has not reloaded the unit file (NeedDaemonReload=yes): the server runs an older "
                         "version of it until the deploy's daemon-reload")
        return Check(WARN, "; ".join(parts)) if parts else None

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

    async def describe_host(self, host: str) -> str:
        """What is live on `host` now: unit state and the recorded revision it runs (for interrupted jobs)."""
        ops = self.ops(host)
        st = await ops.state()
        text = await ops.read_unit()
        rev = await self.revisions.observe(host, ops.unit, text)
        label = config_label(read_exec_start(text).argv, await self.baseline_argv(host, ops.unit))
        return (f"{ops.unit} is {st.active_state}/{st.sub_state} (restarts {st.n_restarts}) on revision {rev.id} "
                f"({label}); nothing was re-run")

    async def diagnose_now(self, ctx: JobContext, ops: UnitOps, *, settle_s: float = 5.0) -> Diagnosis:
        """Diagnose the unit's last start from its journal. systemd's state can run ahead of the journal on a busy
        host: when the newest start has no end in the journal yet (no exit, failure or restart line from
        systemd), read again for up to `settle_s` seconds, so the diagnosis does not judge a start by the stop
        that came before it. The start judged is that start: the automatic restarts after it are left out
        (`judged_start`), so a job's diagnosis does not depend on how many of them ran before it was read."""
        entries = await ops.recent_entries(400)
        deadline = time.monotonic() + settle_s
        while not start_has_ended(entries, ops.unit) and time.monotonic() < deadline:
            await asyncio.sleep(0.25)
            entries = await ops.recent_entries(400)
        entries = judged_start(entries, ops.unit)
        side = await gather_side_evidence(ops.host, ops.unit)
        actions = await self.audit.query(AuditQuery(host=ctx.job.host, newest_first=True, limit=50,
                                                    actions=("deploy", "start", "stop", "restart", "rollback",
                                                             "kill")))
        side["actions"] = [{"at": a.at.isoformat(), "who": a.actor_name or a.actor_id, "action": a.action,
                            "detail": str(a.detail.get("changes") or a.detail)} for a in reversed(actions)]
        return diagnose(entries, SideEvidence.from_json(side), unit=ops.unit)



_ENDED = frozenset({"main_exited", "failed_result", "scheduled_restart", "oom_kill", "deactivated", "stopped",
                    "failed_to_start", "start_limit_hit"})


def judged_start(entries: Sequence[JournalEntry], unit: str) -> list[JournalEntry]:
    """The entries without those of the starts systemd made after the start `start_has_ended` judges (the first
    after the unit's last deliberate stop): a server that crashed under load and then died at every automatic
    restart is diagnosed by its crash, whether pitcrew read the journal before the first restart or after the
    third. Entries are told apart by their invocation id, so lines the crashed process flushed after systemd's
    exit line stay; entries without one stay too."""
    starts = [ev for ev in _after_last_stop(entries, unit) if ev.kind == "started"]
    later = {ev.invocation_id for ev in starts[1:] if ev.invocation_id} - {starts[0].invocation_id} if starts else set()
    return [e for e in entries if e.invocation_id not in later] if later else list(entries)


def start_has_ended(entries: Sequence[JournalEntry], unit: str) -> bool:
    """Whether systemd has written how the start after the unit's last deliberate stop ended (True when there is
    no such start to wait for): its exit, failure, OOM kill or scheduled restart after its `Started` line. The
    anchor is the last `Stopping` (a stop job: pitcrew's deploy; automatic restarts log none), so a start that
    served and crashed is judged, not the restart loop after it."""
    after = _after_last_stop(entries, unit)
    starts = [i for i, ev in enumerate(after) if ev.kind == "started"]
    return not starts or any(ev.kind in _ENDED for ev in after[starts[0] + 1:])


def _after_last_stop(entries: Sequence[JournalEntry], unit: str) -> list[SystemdEvent]:
    """systemd's events about the unit after its last `Stopping` (none when the window holds no stop)."""
    events = [ev for ev in (classify(e, unit) for e in entries) if ev is not None]
    stops = [i for i, ev in enumerate(events) if ev.kind == "stopping"]
    return events[stops[-1] + 1:] if stops else []
