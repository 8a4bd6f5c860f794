"""SIGTERM mid-job (issue 13): a graceful stop (an upgrade) never leaves the unit stopped. The bot stops
taking jobs; the running job ends at its next safe point and puts back the revision that was live before
it; past the bound (`policy.shutdown_grace_s`) the bot cuts the job and restores that revision itself.
Either way the unit serves when the process has exited, and the job is marked interrupted.

The bot runs in its own process (`rel_bot_proc.py`), the simulated host in this one; SQLite.
"""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import httpx
import pytest
from rel_kit import host_entry, start_bot_proc
from sqlalchemy import select

from services.hosts import HostPool, HostSpec
from services.store.db import Database
from services.store.models import Job, JobStep, UnitRevision
from services.units import UnitOps

SCALE = 0.002
LONG_BENCH = {"concurrency": [1], "requests_per_level": 8, "warmup": 0, "input_len": 16, "output_len": 600}


async def _unit_now(host_json: Path) -> tuple[str, str, int]:
    """The unit's text and active state, and /health's status, read afresh over SSH and HTTP."""
    e = host_entry(json.loads(host_json.read_text()))
    spec = HostSpec(name=e["name"], address=e["address"], port=e["port"], user=e["user"],
                    client_key=Path(e["client_key"]), known_hosts=Path(e["known_hosts"]), unit=e["unit"],
                    unit_dir=e["unit_dir"], server_url=e["server_url"])
    async with HostPool.from_specs([spec]) as pool:
        ops = UnitOps(pool.get(spec.name))
        text, state = await ops.read_unit(), await ops.state()
    health = 0
    async with httpx.AsyncClient(timeout=10) as client:
        try:
            health = (await client.get(f"{spec.server_url}/health")).status_code
        except httpx.HTTPError:
            pass
    return text, state.active_state, health


@pytest.mark.parametrize("grace", [90.0, 0.05], ids=["safe-point", "past-the-bound"])
async def test_sigterm_mid_job_leaves_the_unit_serving(tmp_path: Path, grace: float) -> None:
    from simhost.host import SimHost

    url = f"sqlite+aiosqlite:///{tmp_path / 'bot.db'}"
    db = Database(url)
    async with SimHost(tmp_path / "sim", time_scale=SCALE):
        host_json = tmp_path / "sim" / "host.json"
        async with asyncio.timeout(60):
            while (now := await _unit_now(host_json))[2] != 200:
                await asyncio.sleep(0.1)
        before_text = now[0]
        bot = await start_bot_proc(url, host_json, say=["try 4 steps"], scale=SCALE, bench=LONG_BENCH,
                                   policy={"shutdown_grace_s": grace})
        try:
            submitted = await bot.wait_event(lambda e: e.get("event") == "submitted", within=60)
            job_id = int(submitted["job"])
            async with asyncio.timeout(60):
                while True:
                    async with db.sessions() as s:
                        if await s.scalar(select(JobStep.id).where(JobStep.job_id == job_id,
                                                                   JobStep.name == "benchmark",
                                                                   JobStep.state == "running")):
                            break
                    await asyncio.sleep(0.02)
            await asyncio.sleep(0.2)
            code = await bot.stop(within=120)  # SIGTERM, and wait for the process to exit
        finally:
            bot.kill9()
        text, active, health = await _unit_now(host_json)
        async with db.sessions() as s:
            job = await s.get(Job, job_id)
            steps = (await s.execute(select(JobStep).where(JobStep.job_id == job_id).order_by(JobStep.id))
                     ).scalars().all()
            recorded = {r.text for r in (await s.execute(select(UnitRevision))).scalars()}
    await db.close()
    assert code == 0
    # the unit serves the revision that was live before the job, and it is a recorded one
    assert active == "active" and health == 200
    assert text == before_text and text in recorded
    assert job.state == "interrupted" and "stopped (shutdown or upgrade)" in job.error, (job.state, job.error)
    assert "back on revision" in job.summary, job.summary
    if grace < 1:  # cut past the bound: the bot itself put the pre-job revision back
        assert "did not reach a safe point in time" in job.error, job.error
    else:  # the job ended at its next safe point and restored the unit itself
        assert "did not reach a safe point" not in job.error, job.error
    # the deploy's own start was followed by a restore (stop, start of the old revision) before exit
    names = [s.name for s in steps]
    assert sum(n.endswith("start") for n in names) >= 2, names
    if grace < 1:
        assert "shutdown:start" in names, names
