"""The job message (issue 13): progress edits coalesced with the last state always delivered, the record
(diff and confirmation) kept in every edit, one warning icon on an interrupted job."""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime
from types import SimpleNamespace
from typing import Any

from router_kit import RecordingOutbox

from bot.render import render_reply
from handlers.job_notifier import JobNotifier
from services.events import EventBus
from services.jobs import JobFinished, JobProgressed, JobRef, JobStarted
from services.store import AuditRecord

JOB = JobRef(7, "try", "gpu-1", "slack", "C1", "U1", "alice", "try 4 steps")
DIFF = ["--speculative-num-steps 3 -> 4"]


class Jobs:
    async def get(self, job_id: int) -> Any:
        return SimpleNamespace(params={"changes": {"steps": "4"}, "diff": DIFF})


class Audit:
    def __init__(self) -> None:
        self.asked = 0

    async def query(self, q: Any) -> list[AuditRecord]:
        self.asked += 1
        at = datetime(2026, 12, 1, 14, 2, tzinfo=UTC)
        return [AuditRecord(1, at, "U2", "bob", "slack", "C1", "yes 7", {}, "confirm", "gpu-1", {"job": 7}, "ok")]


def _notifier(interval: float = 0.3) -> tuple[EventBus, RecordingOutbox, Audit, JobNotifier]:
    bus, out, audit = EventBus(), RecordingOutbox(), Audit()
    n = JobNotifier(bus, out, results=None, min_interval_s=interval, jobs=Jobs(), audit=audit)
    return bus, out, audit, n


def test_the_default_is_one_progress_edit_per_job_every_3_s() -> None:
    _, _, _, n = _notifier()
    assert JobNotifier(EventBus(), RecordingOutbox(), None).min_interval_s == 3.0
    assert n.min_interval_s == 0.3


async def test_progress_edits_are_coalesced_and_the_last_state_is_delivered() -> None:
    bus, out, _, _ = _notifier(0.3)
    await bus.publish(JobStarted(JOB))
    for i in range(20):  # 20 phases in 1 s
        await bus.publish(JobProgressed(JOB, f"phase {i}"))
        await asyncio.sleep(0.05)
    await asyncio.sleep(0.5)  # the trailing edit
    edits = [r for k, r, _, _ in out.sent if k == "job:7"]
    assert 2 <= len(edits) <= 1 + 1.0 / 0.3 + 2, [e.text for e in edits]
    assert "phase 19" in edits[-1].text  # the last state is shown, not a stale one


async def test_every_edit_keeps_the_diff_and_who_confirmed_it() -> None:
    bus, out, audit, _ = _notifier(0.0)
    await bus.publish(JobStarted(JOB))
    await bus.publish(JobProgressed(JOB, "loading"))
    await bus.publish(JobFinished(JOB, "succeeded", "steps 4: +12% decode tok/s"))
    edits = [r for k, r, _, _ in out.sent if k == "job:7"]
    assert len(edits) == 3
    for e in edits:
        assert e.code == "\n".join(DIFF)
        assert "confirmed by @bob at 14:02 UTC" in e.text
    assert "succeeded" in edits[-1].text
    assert audit.asked == 1  # read once per job, not per edit


async def test_an_interrupted_job_shows_one_warning_icon() -> None:
    bus, out, _, _ = _notifier(0.0)
    await bus.publish(JobFinished(JOB, "interrupted", "the bot stopped while this job ran"))
    for key, reply, _, _ in out.sent:
        shown = "".join(b.get("text", {}).get("text", "") if isinstance(b.get("text"), dict) else ""
                        for m in render_reply(reply) for b in m.blocks)
        icons = shown.count(":warning:") + shown.count("⚠")
        assert icons == 1, (key, shown)
