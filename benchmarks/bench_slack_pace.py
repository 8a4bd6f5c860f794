"""Slack etiquette, measured (issue 13): chat.update calls per minute while 10 jobs report progress.

Ten jobs each report a new phase every `--every` seconds (the review saw about one progress edit per
second per job) for `--seconds`. The events go through the real path: `handlers.job_notifier.JobNotifier`
-> the SQLite outbox -> `bot.slack.SlackBot`'s delivery loop -> `bot.slack_pacer.PacedWebClient` -> the
fake Slack Web API (`tests/support/fake_slack.py`), which records every call. Reported: the most
chat.update calls in any 60-second window (Slack's Tier 3 allows 50+ per minute per workspace:
https://docs.slack.dev/apis/web-api/rate-limits), whether each job's last state was delivered, and the
same figures for the peer — the previous behaviour (one edit per job per second, no budget) — in the
same run. No faults are injected.

    .venv/bin/python benchmarks/bench_slack_pace.py [--jobs 10] [--seconds 75] [--every 0.5]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.append(str(ROOT / "tests"))

from support.fake_slack import FakeSlack  # noqa: E402

from bot.slack import SlackBot  # noqa: E402
from bot.slack_client import build_web_client  # noqa: E402
from bot.slack_pacer import BUDGETS, SlackPacer  # noqa: E402
from handlers.job_notifier import JobNotifier  # noqa: E402
from services.events import EventBus  # noqa: E402
from services.jobs import JobFinished, JobProgressed, JobRef, JobStarted  # noqa: E402
from services.store import Database, OutboxStore  # noqa: E402

WINDOW_S = 60.0


def worst_window(times: list[float], window: float = WINDOW_S) -> int:
    times = sorted(times)
    best, j = 0, 0
    for i, t in enumerate(times):
        while times[j] < t - window + 1e-9:
            j += 1
        best = max(best, i - j + 1)
    return best


async def run(*, jobs: int, seconds: float, every: float, paced: bool, workdir: Path) -> dict[str, Any]:
    fake = await FakeSlack().start()
    fake.add_channel("C1", "gpu-ops")
    db = Database(f"sqlite+aiosqlite:///{workdir / ('paced' if paced else 'peer')}.db")
    await db.migrate()
    store = OutboxStore(db)
    pacer = SlackPacer() if paced else SlackPacer.unlimited()
    bot = SlackBot(client=build_web_client(fake.token, base_url=fake.base_url, pacer=pacer), dispatch=_nothing,
                   store=store)
    await bot.start()
    bus = EventBus()
    notifier = JobNotifier(bus, bot.outbox, results=None, min_interval_s=3.0 if paced else 1.0)
    refs = [JobRef(i, "try", f"gpu-{i}", "slack", "C1", "U1", "alice", f"try {i} steps")
            for i in range(1, jobs + 1)]
    t0 = time.monotonic()
    try:
        for ref in refs:
            await bus.publish(JobStarted(ref))
        n = 0
        while time.monotonic() - t0 < seconds:
            n += 1
            for ref in refs:
                await bus.publish(JobProgressed(ref, f"phase {n}"))
            await asyncio.sleep(every)
        for ref in refs:
            await bus.publish(JobFinished(ref, "succeeded", f"done after phase {n}"))
        ended = time.monotonic()
        deadline = ended + 120
        while await store.depth("slack") and time.monotonic() < deadline:
            await asyncio.sleep(0.2)
        drained_s = time.monotonic() - ended
    finally:
        await notifier.aclose()
        await bot.aclose()
        await db.close()
        await fake.stop()
    updates = [c.at for c in fake.calls_to("chat.update") if c.status == 200]
    finals = sum(1 for m in fake.messages if "succeeded" in m.text + json.dumps(m.blocks))
    span = (max(updates) - min(updates)) if updates else 0.0
    return {"updates": len(updates), "worst_60s": worst_window(updates), "span_s": span,
            "finals": finals, "drained_s": drained_s, "early": len(fake.early_calls()),
            "duplicates": len(fake.duplicates()), "events": n * jobs}


async def _nothing(_msg: Any) -> Any:
    raise AssertionError("no commands in this benchmark")


async def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--jobs", type=int, default=10)
    ap.add_argument("--seconds", type=float, default=75.0)
    ap.add_argument("--every", type=float, default=0.5, help="seconds between progress events of a job")
    args = ap.parse_args()
    limit = BUDGETS["chat.update"].per_minute
    ok = True
    with tempfile.TemporaryDirectory() as tmp:
        for paced in (True, False):
            r = await run(jobs=args.jobs, seconds=args.seconds, every=args.every, paced=paced, workdir=Path(tmp))
            name = "pitcrew (coalesced 3 s + Tier 3 budget)" if paced else "peer (1 edit/s per job, no budget)"
            print(f"{name}: {r['events']} progress events from {args.jobs} jobs over {args.seconds:.0f}s -> "
                  f"{r['updates']} chat.update calls; most in any 60 s window: {r['worst_60s']} "
                  f"(Tier 3 floor {limit:.0f}/min); final states delivered {r['finals']}/{args.jobs} "
                  f"({r['drained_s']:.1f}s after the last event); duplicates {r['duplicates']}")
            if paced:
                ok = r["worst_60s"] <= limit and r["finals"] == args.jobs and r["duplicates"] == 0
    print("PASS" if ok else "FAIL")
    return 0 if ok else 1


if __name__ == "__main__":
    raise SystemExit(asyncio.run(main()))
