"""Slack etiquette under a 429 storm (issue 13): every Web API method answers HTTP 429 with a
``Retry-After`` for a stretch of time while five jobs run on five simulated hosts.

The fake Slack remembers each ``Retry-After`` it gave (per method; per channel for posting) and
records any call that arrives before it ends. Afterwards: no call came early, no message was posted
twice, nothing in the outbox was left undelivered, and every job's message shows its final state.
The acceptance run is 60 s (``REL_STORM_S=60``); the suite runs the same shape for 20 s (the jobs
end inside the storm either way).
"""

from __future__ import annotations

import asyncio
import json
import os
import time
from contextlib import AsyncExitStack
from pathlib import Path

from rel_kit import TINY_BENCH, host_entry, job_id_of
from sqlalchemy import func, select
from support.fake_slack import FakeSlack

from bot.app import build_core
from bot.settings import load_settings
from bot.slack import SlackBot
from bot.slack_client import build_web_client
from handlers.contract import Actor, ChatMessage
from services.store.models import OutboxMessage
from simhost.host import SimHost

STORM_S = float(os.environ.get("REL_STORM_S", "20"))  # long enough for the five jobs to end inside it
RETRY_AFTER = 2
SCALE = 0.002
HOSTS = 5


def _key_of(m: object) -> str | None:
    meta = getattr(m, "metadata", None) or {}
    key = (meta.get("event_payload") or {}).get("key")
    return str(key) if key else None


async def test_429_storm_on_every_method_while_five_jobs_run(tmp_path: Path) -> None:
    fake = FakeSlack()
    fake.add_user("U1", "alice")
    fake.add_channel("C1", "gpu-ops")
    await fake.start()
    try:
        async with AsyncExitStack() as stack:
            sims = [await stack.enter_async_context(SimHost(tmp_path / f"sim{i}", scenario="healthy",
                                                            time_scale=SCALE, name=f"sim-gpu-{i}"))
                    for i in range(1, HOSTS + 1)]
            settings = load_settings(
                None, db={"url": f"sqlite+aiosqlite:///{tmp_path / 'bot.db'}"},
                hosts=[host_entry(s.info) for s in sims], bench=TINY_BENCH,
                policy={"roles": {"*": "viewer", "U1": "experimenter"}, "confirm": [],
                        "user_commands_per_minute": 1000})
            core = await build_core(settings, stack, transport="slack", time_scale=SCALE, watch_journals=False,
                                    start_scheduler=False)
            bot = SlackBot(client=build_web_client(fake.token, base_url=fake.base_url, timeout_s=5),
                           dispatch=core.router.dispatch, store=core.store, wake=core.wake, holder=core.holder,
                           audit=core.audit)
            await bot.start()
            stack.push_async_callback(bot.aclose)

            fake.fail_for("*", "429", seconds=STORM_S, retry_after=RETRY_AFTER)
            storm_end = time.monotonic() + STORM_S
            ids = []
            for i in range(1, HOSTS + 1):
                reply = await core.router.dispatch(ChatMessage(
                    text=f"try 4 steps on sim-gpu-{i}", actor=Actor("U1", "alice", "slack"), channel="C1"))
                ids.append(job_id_of(reply))
            # every job ends (while the storm goes on), then the outbox drains after it
            deadline = storm_end + 90
            while await core.jobs.queue() and time.monotonic() < deadline:
                await asyncio.sleep(0.2)
            assert not await core.jobs.queue()
            jobs_done = time.monotonic()
            while (time.monotonic() < storm_end or await core.store.depth("slack")) and time.monotonic() < deadline:
                await asyncio.sleep(0.2)
            drained = time.monotonic()

            limited = [c for c in fake.calls if c.status == 429]
            print(f"\nstorm {STORM_S:.0f}s (Retry-After {RETRY_AFTER}s on every method): {len(fake.calls)} calls, "
                  f"{len(limited)} answered 429, {len(fake.early_calls())} early; jobs ended "
                  f"{jobs_done - (storm_end - STORM_S):.1f}s in; outbox drained {drained - storm_end:.1f}s after "
                  f"the storm; posted {len(fake.messages)}, duplicates {len(fake.duplicates())}")
            assert len(limited) >= STORM_S / (2 * RETRY_AFTER)  # the storm hit (one probe per hold)
            assert fake.early_calls() == []  # 0 calls earlier than their Retry-After
            assert fake.duplicates() == {}  # 0 duplicated messages
            async with core.db.sessions() as s:
                states = dict((await s.execute(select(OutboxMessage.state, func.count())
                                               .group_by(OutboxMessage.state))).all())
                keys = set((await s.execute(select(OutboxMessage.key)
                                            .where(OutboxMessage.state == "sent"))).scalars())
            assert set(states) <= {"sent", "superseded"}, states  # 0 lost: nothing pending or failed
            posted = {_key_of(m) for m in fake.messages}
            assert keys <= posted, keys - posted
            for job_id in ids:
                (parent,) = [m for m in fake.messages if _key_of(m) == f"job:{job_id}"]
                shown = parent.text + json.dumps(parent.blocks)
                assert "succeeded" in shown, shown  # every job's final state delivered
    finally:
        await fake.stop()
