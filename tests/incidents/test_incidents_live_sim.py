"""The incident monitor against the simulated GPU host over real SSH (time scale 0.01): the seed loop
alerts once as `kv_cache_oom`, updates in its thread and resolves after the rollback; a stale GPU
holder is named by pid; restarts announced with `expect()` do not alert."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path

import httpx
import pytest
from incidents_kit import RecordingOutbox, spec_from_sim, wait_for

from handlers.incident_view import IncidentNotifier
from services.events import EventBus
from services.hosts.contract import Host
from services.hosts.ssh import SshHost
from services.incidents.monitor import IncidentMonitor
from services.incidents.types import (
    AutoRollbackRequested,
    IncidentOpened,
    IncidentPolicy,
    IncidentResolved,
    IncidentUpdated,
)
from services.journal.follower import JournalFollower
from services.store.audit import SYSTEM, AuditLog
from services.store.db import Database
from simhost.host import SimHost

UNIT = "sglang.service"
NAME = "gpu-sim"


@dataclass
class Live:
    sim: SimHost
    host: SshHost
    monitor: IncidentMonitor
    follower: JournalFollower
    outbox: RecordingOutbox
    audit: AuditLog
    events: list[object]


@contextlib.asynccontextmanager
async def live(sim: SimHost, db: Database, policy: IncidentPolicy) -> AsyncIterator[Live]:
    host = SshHost(spec_from_sim(sim.info, NAME))
    bus = EventBus()
    outbox = RecordingOutbox()
    IncidentNotifier(outbox, "C-alerts").subscribe(bus)
    events: list[object] = []

    async def keep(ev: object) -> None:
        events.append(ev)

    for t in (IncidentOpened, IncidentUpdated, IncidentResolved, AutoRollbackRequested):
        bus.subscribe(t, keep)

    def lookup(name: str) -> Host:
        assert name == NAME
        return host

    audit = AuditLog(db)
    monitor = IncidentMonitor(db, bus, lookup, audit=audit, policy=policy)
    follower = JournalFollower(db, host, UNIT, on_entry=monitor.on_entry_for(NAME, UNIT), holder="test", bus=bus)
    tasks = [asyncio.create_task(follower.run()), asyncio.create_task(monitor.run())]
    try:
        await wait_for(lambda: follower.status().connected, 15, "the journal follower")
        await asyncio.sleep(0.5)  # journalctl -f is running (a first start follows from now)
        yield Live(sim, host, monitor, follower, outbox, audit, events)
    finally:
        follower.stop()
        tasks[1].cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        await host.close()


async def two_concurrent_requests(url: str) -> None:
    body = {"model": "qwen3.5-122b-a10b", "prompt": "Tell me a long story.", "max_tokens": 400,
            "stream": True, "ignore_eos": True}
    async with httpx.AsyncClient(timeout=20) as client:

        async def one() -> None:
            with contextlib.suppress(httpx.HTTPError):
                async with client.stream("POST", f"{url}/v1/completions", json=body) as resp:
                    async for _ in resp.aiter_bytes():
                        pass

        await asyncio.gather(one(), one())


def of(events: list[object], kind: type) -> list[object]:
    return [e for e in events if isinstance(e, kind)]


async def edit_steps(lv: Live, old: str, new: str) -> None:
    path = f"{lv.sim.info['unit_dir']}/{lv.sim.info['unit']}"
    text = await lv.host.read_file(path, timeout=10)
    assert old in text
    await lv.host.upload(path, text.replace(old, new).encode(), timeout=10)
    await ctl(lv, "daemon-reload")


async def ctl(lv: Live, *args: str) -> None:
    await lv.host.run(["systemctl", *args], timeout=30, sudo=lv.host.spec.sudo)


@pytest.mark.timeout(300)  # its own waits add up to 150 s (ready, alert, updates, resolution): the default 120 s cut it
async def test_seed_loop_alerts_once_updates_in_thread_and_resolves_after_rollback(
        tmp_path: Path, sqlite_db: Database, systemd: str) -> None:
    # The stable window outlasts a failing start (a start is `active` from its exec, Type=simple, until the sim dies:
    # seconds at load 15), so the loop cannot look resolved between two of its failures.
    policy = IncidentPolicy(window_s=60, stable_window_s=10.0, tick_s=0.2, own_action_window_s=0.5,
                            auto_rollback=True, auto_rollback_within_s=60)
    async with SimHost(tmp_path / "sim", scenario="seed", time_scale=0.01, name=NAME, systemd=systemd) as sim:
        await sim.wait_ready(30)
        async with live(sim, sqlite_db, policy) as lv:
            # pitcrew's deploy of steps 10, as the experiment pipeline does it (`Experiments.deploy`): the restart
            # announced first, the unit written and reloaded, the audit record, the restart, the notice cleared
            lv.monitor.expect(NAME, "deploy", until=60)
            await edit_steps(lv, "--speculative-num-steps 5 ", "--speculative-num-steps 10 ")
            await lv.audit.record(None, actor=SYSTEM, action="deploy", host=NAME,
                                  detail={"summary": "--speculative-num-steps 5 -> 10", "revision": 2})
            await ctl(lv, "restart", UNIT)
            lv.monitor.clear_expected(NAME)
            # steps 10 serves one request, and dies of CUDA OOM as soon as two decode together (the field
            # notes); every start after that fails at start-up
            await sim.wait_ready(30)
            await two_concurrent_requests(sim.server_url)
            await wait_for(lambda: bool(of(lv.events, IncidentOpened)), 30, "the alert")
            await wait_for(lambda: len(of(lv.events, IncidentUpdated)) >= 2, 30, "two updates")
            opened = of(lv.events, IncidentOpened)
            assert len(opened) == 1
            info = opened[0].incident  # type: ignore[attr-defined]
            assert info.cause == "kv_cache_oom", info
            assert "10" in (info.config_change or "") and info.evidence
            # policy auto_rollback: the loop began right after pitcrew's deploy
            (auto,) = of(lv.events, AutoRollbackRequested)
            assert auto.incident_id == info.id and auto.host == NAME  # type: ignore[attr-defined]
            assert any("rolling back" in s.reply.text for s in lv.outbox.thread(f"incident:{info.id}"))

            # the experiment service performs the rollback to steps 5, announced like every deploy of its own. Without
            # the notice, a failure of the steps-10 loop between the daemon-reload and the restart (the audit record
            # and SSH round trips apart under load) was judged against the unit file on disk, steps 5: a new
            # configuration, so a second incident opened and superseded the first (found without reruns, session 7)
            lv.monitor.expect(NAME, "rollback", until=60)
            await edit_steps(lv, "--speculative-num-steps 10 ", "--speculative-num-steps 5 ")
            await lv.audit.record(None, actor=SYSTEM, action="rollback", host=NAME, detail={"revision": 1})
            await ctl(lv, "restart", UNIT)
            lv.monitor.clear_expected(NAME)
            await wait_for(lambda: bool(of(lv.events, IncidentResolved)), 60, "the resolution")

            assert len(of(lv.events, IncidentOpened)) == 1
            key = f"incident:{info.id}"
            assert lv.outbox.main_keys() == [key], "exactly one alert message"
            thread = lv.outbox.thread(key)
            restarts = [s for s in thread if ":restart:" in s.key]
            assert len(restarts) >= 2 and len({s.key for s in restarts}) == len(restarts)
            resolution = thread[-1].reply.text
            assert "automatic rollback to revision 1" in resolution and "Resolved after" in resolution
            final = [s for s in lv.outbox.sent if s.key == key][-1].reply
            assert final.tone == "success" and "rollback to revision 1" in final.text
            got = await lv.monitor.get(info.id)
            assert got.state == "resolved" and got.restarts >= 3


async def test_stale_gpu_holder_is_diagnosed_with_its_pid(tmp_path: Path, sqlite_db: Database, systemd: str) -> None:
    policy = IncidentPolicy(window_s=60, stable_window_s=30, tick_s=0.5)
    async with SimHost(tmp_path / "sim", scenario="stale-gpu", time_scale=0.01, name=NAME, systemd=systemd) as sim:
        stale = sim.placed_pids
        assert stale
        async with live(sim, sqlite_db, policy) as lv:
            await wait_for(lambda: bool(of(lv.events, IncidentOpened)), 40, "the alert")
            info = of(lv.events, IncidentOpened)[0].incident  # type: ignore[attr-defined]
            assert info.cause == "gpu_memory_held_by_stale_process", (info.cause, info.summary, info.evidence)
            assert set(info.stale_pids) & set(stale), (info.stale_pids, stale)
            alert = lv.outbox.sent[0].reply
            assert str(stale[0]) in alert.text + (alert.code or "")
            assert [b.command for b in alert.buttons] == [
                f"rollback {NAME}", f"mute {info.id} 60", f"logs incident {info.id}", f"ack {info.id}"]


async def test_restarts_announced_with_expect_do_not_alert(tmp_path: Path, sqlite_db: Database, systemd: str) -> None:
    policy = IncidentPolicy(window_s=60, stable_window_s=30, tick_s=0.5, own_action_window_s=0.2)
    async with SimHost(tmp_path / "sim", scenario="healthy", time_scale=0.01, name=NAME, systemd=systemd) as sim:
        await sim.wait_ready(30)
        async with live(sim, sqlite_db, policy) as lv:

            async def kill_main_and_wait() -> None:
                pid = (await lv.host.run(["systemctl", "show", UNIT, "-p", "MainPID", "--value"],
                                         timeout=10)).stdout.strip()
                assert pid.isdigit() and pid != "0"
                await lv.host.run(["kill", "-KILL", pid], timeout=10, sudo=lv.host.spec.sudo)
                await sim.wait_ready(30)

            lv.monitor.expect(NAME, "restart", until=60.0)
            for _ in range(3):
                await kill_main_and_wait()
            await asyncio.sleep(0.5)
            assert not of(lv.events, IncidentOpened), "announced restarts must not alert"
            assert lv.outbox.sent == []
            # the same kills, unannounced, are a loop
            lv.monitor._notices.clear()
            for _ in range(2):
                await kill_main_and_wait()
            await wait_for(lambda: bool(of(lv.events, IncidentOpened)), 20, "an alert for unannounced kills")
