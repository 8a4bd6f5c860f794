"""A whole bot around a simulated host: SimHost over real SSH, SQLite, the real router and job runner.

`make_bot(scenario, ...)` returns a `BotUnderTest` whose `say()` dispatches like a chat user and
whose `transcript` records every outbox message as delivered (a test transport at the lowest seam).
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import time
from collections.abc import AsyncIterator, Callable
from contextlib import AsyncExitStack
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from support.job_wait import JobEnds
from support.xdist_groups import lease_ttl_s

from bot.app import Core, build_core
from bot.delivery import run_delivery
from bot.demo import host_entry
from bot.settings import load_settings
from handlers.contract import Actor, ChatMessage, Reply
from services.store.outbox import MessageRef, OutboxItem
from simhost.openssh import start_openssh_server

TIME_SCALE = 0.01


@dataclass
class Delivered:
    key: str
    reply: Reply
    thread_of: str | None
    edit: bool


@dataclass
class TranscriptDeliverer:
    transport: str = "test"
    log: list[Delivered] = field(default_factory=list)
    _ts: Any = field(default_factory=lambda: itertools.count(1))

    async def deliver(self, item: OutboxItem, *, existing: MessageRef | None,
                      parent: MessageRef | None) -> MessageRef:
        self.log.append(Delivered(item.key, Reply.from_json(item.payload), item.thread_of, existing is not None))
        if existing is not None:
            return existing
        return MessageRef("test", item.channel, str(next(self._ts)), parent.ts if parent else None)


@dataclass
class BotUnderTest:
    core: Core
    sim: Any
    transcript: TranscriptDeliverer
    user: Actor = field(default_factory=lambda: Actor("U1", "alice", "test"))

    async def say(self, text: str, *, user: Actor | None = None, thread_key: str | None = None) -> Reply:
        msg = ChatMessage(text=text, actor=user or self.user, channel="C1", thread_key=thread_key)
        reply: Reply = await self.core.router.dispatch(msg)
        return reply

    def __post_init__(self) -> None:
        self.ends = JobEnds(self.core)

    async def wait_job(self, job_id: int, timeout: float = 120.0) -> Any:
        job = await self.ends.wait(job_id, timeout)
        await self.drain()
        return job

    async def drain(self, timeout: float = 10.0) -> None:
        t_end = time.monotonic() + timeout
        while await self.core.store.depth("test") > 0 and time.monotonic() < t_end:
            await asyncio.sleep(0.05)

    async def wait_messages(self, pred: Callable[[Delivered], bool], timeout: float = 30.0) -> list[Delivered]:
        """The delivered messages matching `pred`, once there is at least one (some, like a sweep's chart, are
        drawn in a thread and sent after the job has already finished)."""
        t_end = time.monotonic() + timeout
        while not (found := self.messages(pred)) and time.monotonic() < t_end:
            await asyncio.sleep(0.1)
        return found

    def messages(self, pred: Callable[[Delivered], bool] = lambda d: True) -> list[Delivered]:
        return [d for d in self.transcript.log if pred(d)]

    def unit_text(self) -> str:
        return Path(self.sim.unit_path).read_text()


BENCH = {"concurrency": [1], "requests_per_level": 6, "warmup": 1, "input_len": 64, "output_len": 128}


@pytest.fixture
async def make_bot(tmp_path: Path, request: pytest.FixtureRequest,
                   migrated_sqlite: Callable[[Path], str]) -> AsyncIterator[Callable[..., Any]]:
    from simhost.host import SimHost

    async with AsyncExitStack() as stack:
        async def make(scenario: str = "healthy", *, confirm: tuple[str, ...] = (), watch: bool = False,
                       policy: dict[str, Any] | None = None, bench: dict[str, Any] | None = None,
                       sim_opts: dict[str, Any] | None = None, via: str = "asyncssh",
                       engine: str = "sglang", systemd: str = "python") -> BotUnderTest:
            """``via="openssh"``: the bot reaches the simulated host through a real OpenSSH sshd instead.
            ``systemd="real"``: the host runs systemd 252 itself (reached through its own sshd, as ``pitcrew``
            with sudo). The job lease is production's (`LEASE_TTL_S`), longer for a test at the lowest priority
            (`support.xdist_groups.lease_ttl_s`)."""
            sim = await stack.enter_async_context(SimHost(tmp_path / "sim", scenario=scenario,
                                                          time_scale=TIME_SCALE, engine=engine, systemd=systemd,
                                                          **(sim_opts or {})))
            info = dict(sim.info)
            if via == "openssh":
                sshd = await start_openssh_server(sim.root, env=sim.ssh_env, path_prefix=[sim.root / "bin"])
                stack.push_async_callback(sshd.close)
                info.update(ssh_host=sshd.host, ssh_port=sshd.port, user=sshd.user, client_key=str(sshd.client_key),
                            known_hosts=str(sshd.known_hosts))
            host = host_entry(info)
            settings = load_settings(None, db={"url": migrated_sqlite(tmp_path / "bot.db")}, hosts=[host],
                                     bench=bench or BENCH, policy={"roles": {"*": "admin"}, "confirm": list(confirm),
                                             **(policy or {})})
            core = await build_core(settings, stack, transport="test", time_scale=TIME_SCALE, watch_journals=watch,
                                    start_scheduler=False, lease_ttl_s=lease_ttl_s(request.node.nodeid))
            transcript = TranscriptDeliverer()
            stop = asyncio.Event()
            # the production poll (0.2 s; an enqueue wakes it at once): one claim is ~3.6 ms of CPU on an empty
            # outbox, and at 0.05 s the idle polls of a scenario took ~7 % of a core for its whole run
            task = asyncio.create_task(run_delivery(core.store, transcript, holder="t", stop=stop, wake=core.wake))

            async def halt() -> None:
                stop.set()
                with contextlib.suppress(Exception):
                    await asyncio.wait_for(task, 5)

            stack.push_async_callback(halt)
            return BotUnderTest(core, sim, transcript)

        yield make
