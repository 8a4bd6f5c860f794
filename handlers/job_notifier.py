"""Tells the humans about jobs: turns job events into messages sent through the outbox.

A job has one parent message (key ``job:<id>``) edited in place as it progresses
(deploy → loading → warmup → C=1 → C=4 …); results tables, failures and sweep summaries go into
its thread. Progress edits are throttled so a chat service's rate limits are respected.
"""

from __future__ import annotations

import time
from typing import Any

from handlers import charts, views
from handlers.contract import Attachment, Button, Outbox, Reply
from services.events import EventBus
from services.experiments import NOISY
from services.jobs import JobFinished, JobProgressed, JobRef, JobResultsReady, JobStarted

TERMINAL_TONE = {"succeeded": "success", "failed": "error", "cancelled": "warning", "interrupted": "warning"}


class JobNotifier:
    """Subscribes to job events and sends parent updates and thread messages."""

    def __init__(self, bus: EventBus, outbox: Outbox, results: Any, *, min_interval_s: float = 1.0,
                 describe_host: Any = None) -> None:
        self.outbox = outbox
        self.results = results
        self.min_interval_s = min_interval_s
        self.describe_host = describe_host
        self._last: dict[int, float] = {}
        bus.subscribe(JobStarted, self.on_started)
        bus.subscribe(JobProgressed, self.on_progress)
        bus.subscribe(JobResultsReady, self.on_results)
        bus.subscribe(JobFinished, self.on_finished)

    def _head(self, job: JobRef) -> str:
        return f"*Job {job.id}* on *{job.host}*: {job.command_text} — requested by {job.requested_by_name}"

    async def _parent(self, job: JobRef, status: str, *, tone: str = "progress", running: bool = True,
                      force: bool = False) -> None:
        now = time.monotonic()
        if not force and now - self._last.get(job.id, 0.0) < self.min_interval_s:
            return
        self._last[job.id] = now
        buttons = (Button("Cancel", f"cancel {job.id}", "danger"),) if running else ()
        await self.outbox.send(f"job:{job.id}", Reply(text=f"{self._head(job)}\n{status}", tone=tone,  # type: ignore[arg-type]
                                                      buttons=buttons), channel=job.channel)

    async def on_started(self, e: JobStarted) -> None:
        await self._parent(e.job, "🔧 started", force=True)

    async def on_progress(self, e: JobProgressed) -> None:
        done = " → ".join(e.steps_done[-6:])
        trail = f"done: {done}\n" if done else ""
        await self._parent(e.job, f"{trail}🔧 {e.phase}" + (f" ({e.detail})" if e.detail else ""))

    async def on_results(self, e: JobResultsReady) -> None:
        run = await self.results.get(e.run_id)
        prev = await self.results.get(e.previous_run_id) if e.previous_run_id else None
        note = views.failures_note(run)
        text = f"Results of job {e.job.id} ({run.label}): *{e.verdict}*" + (" — partial" if e.partial else "")
        if note:
            text += "\n" + note
        buttons = (Button("Bench again", f"bench on {e.job.host}"),) if NOISY in e.verdict else ()
        reply = Reply(text=text, tables=(views.results_table(run, prev),), buttons=buttons,
                      tone="success" if not e.partial else "warning")
        await self.outbox.send(f"job:{e.job.id}:run:{run.id}", reply, channel=e.job.channel,
                               thread_of=f"job:{e.job.id}")

    async def on_finished(self, e: JobFinished) -> None:
        icon = views.STATE_ICON.get(e.state, "")
        await self._parent(e.job, f"{icon} {e.state}: {e.summary}", tone=TERMINAL_TONE.get(e.state, "info"),
                           running=False, force=True)
        self._last.pop(e.job.id, None)
        detail = e.detail or {}
        if e.job.kind == "sweep" and detail.get("rows"):
            await self._sweep_summary(e, detail)
        diag = detail.get("diagnosis")
        if e.state == "failed" and diag:
            await self.outbox.send(f"job:{e.job.id}:failure", failure_reply(e, diag, detail),
                                   channel=e.job.channel, thread_of=f"job:{e.job.id}")
        elif e.state in ("failed", "interrupted", "cancelled"):
            await self.outbox.send(f"job:{e.job.id}:end", Reply(text=f"{icon} {e.summary}",
                                                                tone=TERMINAL_TONE.get(e.state, "info")),  # type: ignore[arg-type]
                                   channel=e.job.channel, thread_of=f"job:{e.job.id}")

    async def _sweep_summary(self, e: JobFinished, result: dict[str, Any]) -> None:
        text = (f"Sweep of {result.get('short')}: best *{result.get('best')}* — {result.get('criterion')}.\n"
                f"Host {result.get('left_on')}.")
        png = await charts.sweep_png(result)
        files = (Attachment(f"sweep-job{e.job.id}.png", png, "sweep chart", "image/png"),) if png else ()
        await self.outbox.send(f"job:{e.job.id}:sweep", Reply(text=text, tables=(views.sweep_table(result),),
                                                              attachments=files, tone="success"),
                               channel=e.job.channel, thread_of=f"job:{e.job.id}")


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
