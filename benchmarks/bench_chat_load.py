"""Chat load (issue 8 item 13): 200 commands/s of `status`/`history` from 50 users while a benchmark runs
at C=64 against the simulated host; ack latency, answer latency and event-loop lag against the goals.

The bot is the real core (`bot.app.build_core`: router, job runner, SQLite, a simulated host over SSH)
with a `bench c=64` job running its benchmark the whole time. Two phases, each `--seconds` long:

* slack: signed `/pitcrew status|history` slash commands at `--rate`/s into the bot's HTTP-mode Slack
  app (`bot.slack.SlackBot`, dispatching to the real router), fired by `tests/bot/slack/slack_loadgen.py`
  in its own process, which also runs the fake Slack Web API that receives the answers. Figures: ack
  latency in the bot (request in -> 200 out) and as the client saw it, answers posted, duplicates.
* router: the same mix dispatched straight into `core.router.dispatch` at `--rate`/s from the bot's
  own loop; figure: answer latency (dispatch -> reply).

Loop lag is sampled every 10 ms in the bot's loop during both. Goals: every ack within Slack's 3 s,
ack p99 < 100 ms, loop lag p99 < 50 ms. Loopback only, bounded in time and count.

    .venv/bin/python benchmarks/bench_chat_load.py [--rate 200] [--seconds 3] [--db postgresql+asyncpg://…/db]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import sys
import tempfile
import time
from contextlib import AsyncExitStack
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tests" / "reliability"))
sys.path.insert(0, str(ROOT / "tests" / "bot" / "slack"))
LOADGEN = ROOT / "tests" / "bot" / "slack" / "slack_loadgen.py"
BENCH = {"concurrency": [64], "requests_per_level": 4000, "warmup": 0, "input_len": 64, "output_len": 128}


def pct(values: list[float], p: float) -> float:
    s = sorted(values)
    return s[min(len(s) - 1, round(p / 100 * (len(s) - 1)))] if s else float("nan")


async def loop_lag(stop: asyncio.Event, out: list[float], period: float = 0.01) -> None:
    while not stop.is_set():
        t0 = time.perf_counter()
        await asyncio.sleep(period)
        out.append(max(0.0, time.perf_counter() - t0 - period))


async def slack_phase(core: Any, rate: float, seconds: float) -> dict[str, Any]:
    from slack_kit import SECRET

    from bot.slack import SlackBot
    from bot.slack_client import build_web_client
    from bot.slack_pacer import SlackPacer

    env = {**os.environ, "PYTHONPATH": os.pathsep.join((str(ROOT), str(ROOT / "tests")))}  # tests/support
    proc = await asyncio.create_subprocess_exec(sys.executable, str(LOADGEN), SECRET, stdin=asyncio.subprocess.PIPE,
                                                stdout=asyncio.subprocess.PIPE, env=env)
    assert proc.stdout is not None and proc.stdin is not None
    info = json.loads(await asyncio.wait_for(proc.stdout.readline(), 30))
    client = build_web_client(info["token"], base_url=info["base_url"], timeout_s=10,
                              pacer=SlackPacer.unlimited())  # the bot's throughput, not Slack's
    bot = SlackBot(client=client, dispatch=core.router.dispatch, store=core.store, signing_secret=SECRET)
    await bot.start()
    port = await bot.serve_http()
    try:
        proc.stdin.write(f"{port} {rate} {seconds}\n".encode())
        await proc.stdin.drain()
        result: dict[str, Any] = json.loads(await asyncio.wait_for(proc.stdout.readline(), 180))
    finally:
        await bot.aclose()
        if proc.returncode is None:
            proc.kill()
        await proc.wait()
    result["server_ack"] = list(bot.ack_seconds)
    return result


async def router_phase(core: Any, rate: float, seconds: float) -> list[float]:
    from handlers.contract import Actor, ChatMessage

    lat: list[float] = []

    async def one(i: int) -> None:
        msg = ChatMessage(text="status" if i % 2 else "history", actor=Actor(f"R{i % 50}", f"r{i % 50}", "test"),
                          channel="C1")
        t0 = time.perf_counter()
        await core.router.dispatch(msg)
        lat.append(time.perf_counter() - t0)

    start = time.monotonic()
    tasks = []
    for i in range(int(rate * seconds)):
        delay = start + i / rate - time.monotonic()
        if delay > 0:
            await asyncio.sleep(delay)
        tasks.append(asyncio.create_task(one(i)))
    await asyncio.gather(*tasks)
    return lat


async def run(rate: float, seconds: float, scale: float, db_url: str | None = None) -> dict[str, Any]:
    from rel_kit import RelBot, job_id_of, settings_for
    from sqlalchemy import select

    from bot.app import build_core
    from services.store.models import JobStep
    from simhost.host import SimHost

    out: dict[str, Any] = {}
    with tempfile.TemporaryDirectory() as tmp:
        async with AsyncExitStack() as stack:
            sim = await stack.enter_async_context(SimHost(Path(tmp) / "sim", time_scale=scale))
            settings = settings_for(sim.info, db_url or f"sqlite+aiosqlite:///{tmp}/bot.db", bench=BENCH,
                                    policy={"user_commands_per_minute": 30})
            core = await build_core(settings, stack, transport="test", time_scale=scale, watch_journals=False,
                                    start_scheduler=False)
            bot = RelBot(core, sim)
            await sim.wait_ready(60)
            job_id = job_id_of(await bot.say("bench c=64"))
            while True:
                async with core.db.sessions() as s:
                    state = await s.scalar(select(JobStep.state).where(JobStep.job_id == job_id,
                                                                       JobStep.name == "benchmark"))
                if state == "running":
                    break
                await asyncio.sleep(0.05)
            await asyncio.sleep(1.0)  # the benchmark's 64 streams are up
            stop = asyncio.Event()
            lags: list[float] = []
            lag_task = asyncio.create_task(loop_lag(stop, lags))
            out["slack"] = await slack_phase(core, rate, seconds)
            out["slack_lag"], lags[:] = list(lags), []
            out["router"] = await router_phase(core, rate, seconds)
            out["router_lag"] = list(lags)
            stop.set()
            await lag_task
            job = await core.jobs.get(job_id)
            out["bench_state_at_end"] = job.state
            await bot.say(f"cancel {job_id}")
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rate", type=float, default=200.0)
    ap.add_argument("--seconds", type=float, default=3.0)
    ap.add_argument("--time-scale", type=float, default=0.01)
    ap.add_argument("--db", default=None, help="database URL (default: a SQLite file in a temporary directory); "
                                               "a PostgreSQL database must be empty or pitcrew's own")
    args = ap.parse_args()
    res = asyncio.run(run(args.rate, args.seconds, args.time_scale, args.db))
    sl = res["slack"]
    ack = [x * 1000 for x in sl["server_ack"]]
    client = [x * 1000 for x in sl["lat"]]
    lag_s = [x * 1000 for x in res["slack_lag"]]
    rt = [x * 1000 for x in res["router"]]
    lag_r = [x * 1000 for x in res["router_lag"]]
    print(f"database: {(args.db or 'sqlite (temporary file)').split('@')[-1]}")
    print(f"chat load: {args.rate:.0f} commands/s for {args.seconds:.0f} s per phase (status/history, 50 users), "
          f"benchmark at C=64 running throughout (job state at the end: {res['bench_state_at_end']})")
    print(f"slack phase: {sl['n']} slash commands fired in {sl['fired_s']:.2f} s; HTTP statuses "
          f"{sorted(set(sl['statuses']))}; ack in the bot p50 {statistics.median(ack):.1f} ms, "
          f"p99 {pct(ack, 99):.1f} ms, max {max(ack):.1f} ms; ack seen by the client p50 "
          f"{statistics.median(client):.1f} ms, p99 {pct(client, 99):.1f} ms, max {max(client):.1f} ms; "
          f"answers posted {sl['posted']}/{sl['n']} after {sl['drained_s']:.1f} s, duplicates "
          f"{len(sl['duplicates'])}; loop lag p50 {statistics.median(lag_s):.1f} ms, p99 {pct(lag_s, 99):.1f} ms, "
          f"max {max(lag_s):.1f} ms")
    print(f"router phase: {len(rt)} dispatches; answer latency p50 {statistics.median(rt):.0f} ms, "
          f"p99 {pct(rt, 99):.0f} ms, max {max(rt):.0f} ms; loop lag p50 {statistics.median(lag_r):.1f} ms, "
          f"p99 {pct(lag_r, 99):.1f} ms, max {max(lag_r):.1f} ms")
    checks = {"every ack within 3 s": max(ack) < 3000, "ack p99 < 100 ms": pct(ack, 99) < 100,
              "loop lag p99 < 50 ms (slack phase)": pct(lag_s, 99) < 50,
              "loop lag p99 < 50 ms (router phase)": pct(lag_r, 99) < 50,
              "every answer posted once": sl["posted"] == sl["n"] and not sl["duplicates"]}
    for name, ok in checks.items():
        print(f"  {name}: {'PASS' if ok else 'FAIL'}")
    return 0 if all(checks.values()) else 1


if __name__ == "__main__":
    sys.exit(main())
