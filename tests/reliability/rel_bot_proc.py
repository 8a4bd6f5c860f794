"""A pitcrew bot in its own OS process, for the multi-process and kill -9 tests.

    python tests/reliability/rel_bot_proc.py --db URL --host-json DIR/host.json [--scale S]
        [--bench JSON] [--policy JSON] [--lease-ttl S] [--say "try 4 steps"]... [--until-idle]

Builds the real core (`bot.app.build_core`) against the given database and simulated host,
dispatches each `--say` through the router, and prints one JSON line per event on stdout:
``ready`` (with its holder and the jobs it marked interrupted), ``submitted``, ``started``,
``finished``. With ``--until-idle`` it exits once the host has no open job left; otherwise it
runs until SIGTERM (or SIGKILL, which is the point).

The tests start it with `rel_kit.start_bot_proc`: forked (`forked`) from a fork server that has imported the bot
once per test process, not from a fresh interpreter; the command line above runs the same `run`.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import re
import signal
import socket
import sys
import time
from contextlib import AsyncExitStack
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(HERE.parent.parent))


def emit(**fields: Any) -> None:
    print(json.dumps({**fields, "t": time.time()}, default=str), flush=True)


async def main(args: argparse.Namespace) -> int:
    from rel_kit import settings_for

    from bot.app import build_core
    from handlers.contract import Actor, ChatMessage
    from services.jobs.events import JobFinished, JobStarted

    info = args.info
    bench = json.loads(args.bench) if args.bench else None
    settings = settings_for(info, args.db, bench=bench, policy=json.loads(args.policy) if args.policy else None)
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    loop.add_signal_handler(signal.SIGTERM, stop.set)
    async with AsyncExitStack() as stack:
        core = await build_core(settings, stack, transport="test", time_scale=args.scale, watch_journals=False,
                                start_scheduler=False, lease_ttl_s=args.lease_ttl)

        async def on_started(e: JobStarted) -> None:
            emit(event="started", job=e.job.id, holder=core.holder)

        async def on_finished(e: JobFinished) -> None:
            emit(event="finished", job=e.job.id, state=e.state, holder=core.holder)

        core.bus.subscribe(JobStarted, on_started)
        core.bus.subscribe(JobFinished, on_finished)
        interrupted = [j.id for j in await core.jobs.recent(limit=1000) if j.state == "interrupted"]
        emit(event="ready", holder=core.holder, interrupted=interrupted)
        for i, text in enumerate(args.say):
            reply = await core.router.dispatch(ChatMessage(text=text, actor=Actor(f"P{i}", f"proc-user-{i}", "test"),
                                                           channel="C1"))
            m = re.search(r"Job (\d+)", reply.text)
            emit(event="submitted", job=int(m.group(1)) if m else None, text=reply.text[:200])
        while not stop.is_set():
            if args.until_idle and not await core.jobs.queue(info["name"]):
                break
            try:
                await asyncio.wait_for(stop.wait(), 0.1)
            except TimeoutError:
                pass
    emit(event="exit")
    return 0


def run(argv: list[str]) -> int:
    from services.jobs import LEASE_TTL_S

    p = argparse.ArgumentParser()
    p.add_argument("--db", required=True)
    p.add_argument("--host-json", required=True)
    p.add_argument("--scale", type=float, default=0.002)
    p.add_argument("--bench", default="")
    p.add_argument("--policy", default="")
    p.add_argument("--lease-ttl", type=float, default=LEASE_TTL_S)
    p.add_argument("--say", action="append", default=[])
    p.add_argument("--until-idle", action="store_true")
    ns = p.parse_args(argv)
    ns.info = json.loads(Path(ns.host_json).read_text())
    return asyncio.run(main(ns))


def forked(argv: list[str], out: socket.socket, err: socket.socket | None) -> None:
    """`run(argv)` in a process forked from `rel_kit`'s fork server: `out` (and `err`, else /dev/null) become its
    stdout and stderr; its exit status is `run`'s."""
    os.dup2(out.fileno(), 1)
    out.close()
    if err is not None:
        os.dup2(err.fileno(), 2)
        err.close()
    else:
        null = os.open(os.devnull, os.O_WRONLY)
        os.dup2(null, 2)
        os.close(null)
    sys.exit(run(argv))


if __name__ == "__main__":
    sys.exit(run(sys.argv[1:]))
