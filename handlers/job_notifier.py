"""Tells the humans about jobs: turns job events into messages sent through the outbox.

A job has one parent message (key ``job:<id>``) edited in place as it progresses
(deploy → loading → warmup → C=1 → C=4 …); results tables, failures and sweep summaries go into
its thread. Progress edits are coalesced: at most one per job message every ``min_interval_s``
(3 s by default), and the latest state is always delivered when the interval ends, so a long
phase never shows a stale step (the transport's pacer then keeps all jobs together under the chat
service's limits).

The parent message keeps the job's record in every edit (`JobRecord`): the exact flag diff that
was previewed and who confirmed it when ("confirmed by @alice at 14:02 UTC"), read back from the
job's parameters and the audit log — so the channel never loses who approved which change.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Protocol

from handlers import charts, views
from handlers.commands import Try, Tune
from handlers.contract import Attachment, Button, Outbox, Reply
from handlers.grammar_render import render_try, render_tune
from services.events import EventBus
from services.experiments import NOISY
from services.jobs import JobFinished, JobProgressed, JobRef, JobResultsReady, JobStarted
from services.store import AuditQuery

log = logging.getLogger(__name__)

TERMINAL_TONE = {"succeeded": "success", "failed": "error", "cancelled": "warning", "interrupted": "warning"}
# Tones the transport marks with its own icon: the text then carries no second one.
TONED = frozenset({"success", "error", "warning"})


@dataclass(frozen=True)
class JobRecord:
    """What a job message must keep showing whatever its state: the diff and the confirmation."""

    diff: tuple[str, ...] = ()
    confirmed: str | None = None  # "confirmed by @alice at 14:02 UTC"


def confirmed_line(name: str, at: datetime) -> str:
    return f"confirmed by @{name} at {at:%H:%M} UTC"


class JobHead(Protocol):
    """What the head line of a job's message names (a `JobRef` or a handler's job view)."""

    @property
    def id(self) -> int: ...
    @property
    def host(self) -> str: ...
    @property
    def command_text(self) -> str: ...
    @property
    def requested_by_name(self) -> str: ...


def job_message(job: JobHead, record: JobRecord, status: str, *, tone: str = "progress",
                buttons: Sequence[Button] = ()) -> Reply:
    """The job's parent message: head, record, current status; the diff as a code block."""
    lines = [f"*Job {job.id}* on *{job.host}*: {job.command_text} — requested by {job.requested_by_name}"]
    if record.confirmed:
        lines.append(record.confirmed)
    lines.append(status)
    return Reply(text="\n".join(lines), code="\n".join(record.diff) or None, tone=tone,  # type: ignore[arg-type]
                 buttons=tuple(buttons))


def state_text(state: str, summary: str, tone: str) -> str:
    """``state: summary`` with the state's icon, unless the tone already puts one there."""
    icon = "" if tone in TONED else views.STATE_ICON.get(state, "")
    return f"{icon} {state}: {summary}".strip()


class JobNotifier:
    """Subscribes to job events and sends parent updates and thread messages.

    ``jobs`` (``get(id)``) and ``audit`` (``query``) give each job's record; without them the
    messages carry no diff or confirmation line."""

    def __init__(self, bus: EventBus, outbox: Outbox, results: Any, *, min_interval_s: float = 3.0,
                 describe_host: Any = None, jobs: Any = None, audit: Any = None, atomic_ends: bool = False) -> None:
        self.outbox = outbox
        self.results = results
        self.min_interval_s = min_interval_s
        self.describe_host = describe_host
        self.jobs = jobs
        self.audit = audit
        self._last: dict[int, float] = {}
        self._latest: dict[int, tuple[JobRef, str, str, bool]] = {}
        self._timers: dict[int, asyncio.Task[None]] = {}
        self._locks: dict[int, asyncio.Lock] = {}
        self._records: dict[int, JobRecord] = {}
        bus.subscribe(JobStarted, self.on_started)
        bus.subscribe(JobProgressed, self.on_progress)
        bus.subscribe(JobResultsReady, self.on_results)
        if not atomic_ends:  # else the job runner writes `end_messages` in the transaction of the end state
            bus.subscribe(JobFinished, self.on_finished)

    async def record(self, job: JobRef) -> JobRecord:
        """The job's diff (from its parameters) and confirmation (from the audit log), cached."""
        cached = self._records.get(job.id)
        if cached is not None:
            return cached
        diff: tuple[str, ...] = ()
        confirmed = None
        try:
            if self.jobs is not None:
                info = await self.jobs.get(job.id)
                diff = tuple(str(x) for x in (info.params.get("diff") or ()))
            if self.audit is not None:
                rows = await self.audit.query(AuditQuery(host=job.host, actions=("confirm",), newest_first=True,
                                                         limit=500))
                for r in rows:
                    if r.detail.get("job") == job.id:
                        confirmed = confirmed_line(r.actor_name or r.actor_id, r.at)
                        break
        except Exception as exc:  # the record is shown again on the next edit
            log.warning("could not read the record of job %d (%s)", job.id, type(exc).__name__)
            return JobRecord(diff, confirmed)
        rec = self._records[job.id] = JobRecord(diff, confirmed)
        return rec

    async def _parent(self, job: JobRef, status: str, *, tone: str = "progress", running: bool = True,
                      force: bool = False) -> None:
        self._latest[job.id] = (job, status, tone, running)
        due = self._last.get(job.id, -1e9) + self.min_interval_s
        # A forced state goes now; a timer still waiting then finds nothing left to send.
        if not force and time.monotonic() < due:
            if job.id not in self._timers:  # deliver the latest state when the interval ends
                self._timers[job.id] = asyncio.create_task(self._later(job.id, due))
            return
        await self._send_latest(job.id)

    async def _later(self, job_id: int, due: float) -> None:
        await asyncio.sleep(max(0.0, due - time.monotonic()))
        self._timers.pop(job_id, None)
        try:
            await self._send_latest(job_id)
        except Exception as exc:
            log.warning("progress edit of job %d failed (%s)", job_id, type(exc).__name__)

    async def _send_latest(self, job_id: int) -> None:
        lock = self._locks.setdefault(job_id, asyncio.Lock())
        async with lock:
            latest = self._latest.pop(job_id, None)
            if latest is None:
                return  # a newer call already sent it
            job, status, tone, running = latest
            self._last[job_id] = time.monotonic()
            buttons = (Button("Cancel", f"cancel {job.id}", "danger"),) if running else ()
            reply = job_message(job, await self.record(job), status, tone=tone, buttons=buttons)
            await self.outbox.send(f"job:{job.id}", reply, channel=job.channel)

    async def aclose(self) -> None:
        """Deliver every coalesced state still waiting for its interval."""
        timers = list(self._timers.values())
        for t in timers:
            t.cancel()
        for t in timers:
            with contextlib.suppress(asyncio.CancelledError):
                await t
        for job_id in list(self._latest):
            await self._send_latest(job_id)

    async def on_started(self, e: JobStarted) -> None:
        await self._parent(e.job, "🔧 started", force=True)

    async def on_progress(self, e: JobProgressed) -> None:
        done = " → ".join(e.steps_done[-6:])
        trail = f"done: {done}\n" if done else ""
        await self._parent(e.job, f"{trail}🔧 {e.phase}" + (f" ({e.detail})" if e.detail else ""))

    async def on_results(self, e: JobResultsReady) -> None:
        run = await self.results.get(e.run_id)
        prev = await self.results.get(e.previous_run_id) if e.previous_run_id else None
        note = "\n".join(n for n in (views.failures_note(run), views.engine_note(run)) if n)
        text = f"Results of job {e.job.id} ({run.label}): *{e.verdict}*" + (" — partial" if e.partial else "")
        if note:
            text += "\n" + note
        buttons = (Button("Bench again", f"bench on {e.job.host}"),) if NOISY in e.verdict else ()
        reply = Reply(text=text, tables=(views.results_table(run, prev),), buttons=buttons,
                      tone="success" if not e.partial else "warning")
        await self.outbox.send(f"job:{e.job.id}:run:{run.id}", reply, channel=e.job.channel,
                               thread_of=f"job:{e.job.id}")

    async def on_finished(self, e: JobFinished) -> None:
        for key, reply, thread_of in await self.end_messages(e):
            await self.outbox.send(key, reply, channel=e.job.channel, thread_of=thread_of)

    async def end_messages(self, e: JobFinished) -> list[tuple[str, Reply, str | None]]:
        """The messages that announce a job's end (key, reply, thread parent key): the parent's final edit,
        then the sweep summary, the failure diagnosis or the end note in its thread. With ``atomic_ends`` the
        job runner writes them in the transaction that records the end state."""
        tone = TERMINAL_TONE.get(e.state, "info")
        lock = self._locks.setdefault(e.job.id, asyncio.Lock())
        async with lock:  # a coalesced progress edit still waiting is dropped: the end is the last edit
            self._latest.pop(e.job.id, None)
            timer = self._timers.pop(e.job.id, None)
            if timer is not None:
                timer.cancel()
        record = await self.record(e.job)
        parent = f"job:{e.job.id}"
        out: list[tuple[str, Reply, str | None]] = [
            (parent, job_message(e.job, record, state_text(e.state, e.summary, tone), tone=tone, buttons=()), None)]
        self._last.pop(e.job.id, None)
        self._records.pop(e.job.id, None)
        self._locks.pop(e.job.id, None)
        detail = e.detail or {}
        if e.job.kind == "sweep" and detail.get("rows"):
            out.append((f"job:{e.job.id}:sweep", await _sweep_summary(e, detail), parent))
        if e.job.kind == "tune" and detail.get("points"):
            out.append((f"job:{e.job.id}:tune", await _tune_summary(e, detail), parent))
        diag = detail.get("diagnosis")
        if e.state == "failed" and diag:
            out.append((f"job:{e.job.id}:failure", failure_reply(e, diag, detail), parent))
        elif e.state in ("failed", "interrupted", "cancelled"):
            # the tone's icon marks it (one warning sign, not two)
            resume = (Button("Resume", render_tune(Tune(knobs=(), concurrency=0, resume=e.job.id))),) \
                if e.job.kind == "tune" else ()
            out.append((f"job:{e.job.id}:end", Reply(text=e.summary, tone=tone, buttons=resume),  # type: ignore[arg-type]
                        parent))
        return out


async def _sweep_summary(e: JobFinished, result: dict[str, Any]) -> Reply:
    text = (f"Sweep of {result.get('short')}: best *{result.get('best')}* — {result.get('criterion')}.\n"
            f"Host {result.get('left_on')}.")
    png = await charts.sweep_png(result)
    files = (Attachment(f"sweep-job{e.job.id}.png", png, "sweep chart", "image/png"),) if png else ()
    return Reply(text=text, tables=(views.sweep_table(result),), attachments=files, tone="success")


async def _tune_summary(e: JobFinished, result: dict[str, Any]) -> Reply:
    goal = (result.get("goal") or {}).get("text", "")
    best = result.get("best")
    grid, restarts = result.get("grid") or 0, result.get("restarts") or 0
    keep = bool(best and best.get("start"))  # the recommendation is the start: nothing to apply
    pick = "keep the start" if keep else "best"
    lines = [f"Tune for {goal}: {pick} *{best.get('label')}* — {result.get('verdict')}." if best else
             f"Tune for {goal}: no configuration met the goal."]
    lines.extend(views.tune_confirmation(result))
    if result.get("criterion") and best:
        lines.append(f"{result.get('criterion')}.")
    lines.append(f"{restarts} restarts of a {grid}-configuration grid ({100.0 * restarts / max(grid, 1):.0f} %); "
                 f"stopped: {result.get('stopped')}. Host {result.get('left_on')}.")
    lines.extend(views.tune_failures(result))
    png = await charts.tune_png(result)
    files = (Attachment(f"tune-job{e.job.id}.png", png, "Pareto front", "image/png"),) if png else ()
    buttons: tuple[Button, ...] = ()
    if best and not keep:
        apply = render_try(Try(changes=tuple((best.get("changes") or {}).items()), host=e.job.host))
        buttons = (Button("Apply", apply, "primary"),)
    return Reply(text="\n".join(lines), tables=(views.tune_table(result),), attachments=files, buttons=buttons,
                 tone="success" if best else "warning")


def failure_reply(e: JobFinished, diag: dict[str, Any], detail: dict[str, Any]) -> Reply:
    lines = [f"❌ *{diag.get('cause')}* (confidence {float(diag.get('confidence') or 0):.0%}): {diag.get('summary')}"]
    ran = diag.get("ran_before")
    if ran:
        lines.append(f"It ran before it died: accept len {ran.get('accept_len')}, "
                     f"{ran.get('gen_throughput_tok_s')} tok/s.")
    if detail.get("ramp_failed_at"):
        rates = detail.get("ramp_tok_s") or {}
        held = ", ".join(f"C={c}" + (f" ({float(rates[str(c)]):.0f} tok/s end to end per request)"
                                     if str(c) in rates else "")
                         for c in detail.get("ramp_levels_ok") or []) or "no level"
        lines.append(f"Ramp: {held} held; it failed at C={detail['ramp_failed_at']}, so the full benchmark "
                     "was not run.")
    if detail.get("rolled_back_to"):
        lines.append(f"Rolled back automatically to revision {detail['rolled_back_to']}.")
    elif detail.get("handed_to_incidents"):
        lines.append("The unit keeps restarting on its own; the incident watch follows it (see the alert).")
    elif detail.get("rollback_failed"):
        lines.append(f"The automatic rollback failed: {detail['rollback_failed']}")
    if diag.get("recommendation"):
        lines.append(f"Next: {diag['recommendation']}")
    evidence = "\n".join(diag.get("evidence") or [])
    return Reply(text="\n".join(lines), code=evidence or None, tone="error",
                 buttons=(Button("Roll back", f"rollback {e.job.host}", "danger"),
                          Button("Show logs", f"logs {e.job.host} 50")))
