"""Chat load: 200 slash commands per second against the HTTP-mode app, the load generator and the
fake Slack in another process. Every command is acked well inside Slack's 3 s, the event loop's
lag is measured, and every answer reaches Slack exactly once. Prints the figures.

Reproduce: .venv/bin/pytest tests/bot/slack/test_slack_load.py -s
"""

from __future__ import annotations

import asyncio
import json
import os
import statistics
import sys
import time
from pathlib import Path

import pytest
from slack_kit import SECRET

from bot.slack import SlackBot
from bot.slack_client import build_web_client
from bot.slack_pacer import SlackPacer
from handlers.contract import ChatMessage, Reply, Table
from services.store.db import Database
from services.store.outbox import OutboxStore

RATE = 200.0
SECONDS = 3.0
GEN = Path(__file__).with_name("slack_loadgen.py")
ROOT = Path(__file__).resolve().parents[3]


def _pct(values: list[float], p: float) -> float:
    s = sorted(values)
    return s[min(len(s) - 1, round(p / 100 * (len(s) - 1)))]


async def _loop_lag(stop: asyncio.Event, out: list[float], period: float = 0.01) -> None:
    while not stop.is_set():
        t0 = time.perf_counter()
        await asyncio.sleep(period)
        out.append(max(0.0, time.perf_counter() - t0 - period))


@pytest.mark.slow
async def test_200_commands_per_second_acked_fast(sqlite_db: Database) -> None:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join((str(ROOT), str(ROOT / "tests")))}
    proc = await asyncio.create_subprocess_exec(sys.executable, str(GEN), SECRET, stdin=asyncio.subprocess.PIPE,
                                                stdout=asyncio.subprocess.PIPE, env=env)
    assert proc.stdout is not None and proc.stdin is not None
    info = json.loads(await asyncio.wait_for(proc.stdout.readline(), 20))

    async def dispatch(msg: ChatMessage) -> Reply:
        table = Table(columns=("host", "state", "steps"), rows=(("gpu-1", "serving", "4"),))
        return Reply(text=f"{msg.text} for {msg.actor.name}", tables=(table,))

    client = build_web_client(info["token"], base_url=info["base_url"], timeout_s=10,
                              pacer=SlackPacer.unlimited())  # the bot's throughput, not Slack's
    bot = SlackBot(client=client, dispatch=dispatch, store=OutboxStore(sqlite_db), signing_secret=SECRET)
    await bot.start()
    port = await bot.serve_http()
    stop = asyncio.Event()
    lags: list[float] = []
    lag_task = asyncio.create_task(_loop_lag(stop, lags))
    try:
        proc.stdin.write(f"{port} {RATE} {SECONDS}\n".encode())
        await proc.stdin.drain()
        result = json.loads(await asyncio.wait_for(proc.stdout.readline(), 120))
    finally:
        stop.set()
        await lag_task
        await bot.aclose()
        if proc.returncode is None:
            proc.kill()
        await proc.wait()
    server_ms = [x * 1000 for x in bot.ack_seconds]
    lat_ms = [x * 1000 for x in result["lat"]]
    lag_ms = [x * 1000 for x in lags]
    print(f"\nslack load: {result['n']} slash commands at {RATE:.0f}/s over {result['fired_s']:.2f}s; "
          f"ack seen by the client p50 {statistics.median(lat_ms):.1f} ms, p99 {_pct(lat_ms, 99):.1f} ms, "
          f"max {max(lat_ms):.1f} ms; in the bot p50 {statistics.median(server_ms):.1f} ms, "
          f"p99 {_pct(server_ms, 99):.1f} ms, max {max(server_ms):.1f} ms; "
          f"loop lag p99 {_pct(lag_ms, 99):.1f} ms, max {max(lag_ms):.1f} ms; "
          f"all {result['posted']} answers posted after {result['drained_s']:.1f}s, "
          f"duplicates {len(result['duplicates'])}")
    assert result["statuses"] == [200] * result["n"]
    # Asserted on the bot's own handling time: the client-side figure also holds the load
    # generator's scheduling delays when the box is shared (both are printed).
    assert len(server_ms) == result["n"]
    assert max(server_ms) < 3000  # Slack's limit, for every command
    assert _pct(server_ms, 99) < 1000  # goal 100 ms: printed above; this bound tolerates a busy CI box
    assert result["posted"] == result["n"] and not result["duplicates"]
