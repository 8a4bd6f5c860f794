"""A rolling upgrade of two replicas (issue 13): two bot processes on one PostgreSQL with tries queued; A
gets SIGTERM mid-job, is started again, then B gets SIGTERM and is started again. Meanwhile the unit is
sampled over SSH every 200 ms. It is never left stopped (no stretch without an active unit longer than a
deploy's own stop/start), never on an unrecorded revision, every job ends (succeeded, or interrupted by a
stop), and the unit serves at the end."""

from __future__ import annotations

import asyncio
import contextlib
import time
from pathlib import Path

import httpx
import pytest
from rel_kit import PG_URL, Proc, drop_pg_database, make_pg_database, start_bot_proc
from sqlalchemy import select

from services.hosts import HostPool, HostSpec
from services.store.db import Database
from services.store.models import Job, UnitRevision
from services.units import UnitOps

SCALE = 0.002
BENCH = {"concurrency": [1], "requests_per_level": 4, "warmup": 0, "input_len": 16, "output_len": 300}
LONGEST_GAP_S = 3.0  # a deploy's own stop → active again at this time scale takes well under a second


def _n(p: Proc, event: str) -> int:
    return sum(e.get("event") == event for e in p.events)


@pytest.mark.skipif(not PG_URL, reason="set PITCREW_TEST_PG_URL (two replicas need PostgreSQL)")
async def test_rolling_upgrade_never_leaves_the_unit_stopped(tmp_path: Path) -> None:
    from simhost.host import SimHost

    url = await make_pg_database()
    db = Database(url)
    samples: list[tuple[float, str, str]] = []
    try:
        await db.migrate()
        async with SimHost(tmp_path / "sim", time_scale=SCALE) as sim:
            info = sim.info
            spec = HostSpec(name=info["name"], address=info["ssh_host"], port=info["ssh_port"], user=info["user"],
                            client_key=Path(info["client_key"]), known_hosts=Path(info["known_hosts"]),
                            unit=info["unit"], unit_dir=info["unit_dir"], server_url=info["server_url"])
            host_json = tmp_path / "sim" / "host.json"
            stop_sampling = asyncio.Event()

            async def sample() -> None:
                async with HostPool.from_specs([spec]) as pool:
                    ops = UnitOps(pool.get(spec.name))
                    while not stop_sampling.is_set():
                        t = time.monotonic()
                        with contextlib.suppress(Exception):
                            state = await ops.state()
                            samples.append((t, await ops.read_unit(), state.active_state))
                        await asyncio.sleep(max(0.0, 0.2 - (time.monotonic() - t)))

            sampler = asyncio.create_task(sample())
            says = [[f"try {4 + i % 2} steps" for i in range(4)], [f"try {5 - i % 2} steps" for i in range(4)]]
            a, b = await asyncio.gather(*(start_bot_proc(url, host_json, say=s, scale=SCALE, bench=BENCH)
                                          for s in says))
            procs = [a, b]
            try:
                async with asyncio.timeout(180):
                    for i in range(2):  # A, then B: SIGTERM mid-job, then start again
                        while not any(_n(p, "started") > _n(p, "finished") for p in procs):  # noqa: ASYNC110
                            await asyncio.sleep(0.02)
                        assert await procs[i].stop(within=120) == 0
                        procs.append(await start_bot_proc(url, host_json, scale=SCALE, bench=BENCH))
                        procs[i] = procs[-1]
                    while True:
                        async with db.sessions() as s:
                            open_jobs = (await s.execute(select(Job.id).where(
                                Job.state.in_(("queued", "running"))))).all()
                        if not open_jobs:
                            break
                        await asyncio.sleep(0.2)
            finally:
                await asyncio.gather(*(p.stop() for p in {id(p): p for p in procs}.values()))
            await asyncio.sleep(0.5)
            stop_sampling.set()
            await sampler
            async with httpx.AsyncClient(timeout=10) as client:
                health = (await client.get(f"{spec.server_url}/health")).status_code
        async with db.sessions() as s:
            jobs = (await s.execute(select(Job).order_by(Job.id))).scalars().all()
            recorded = {r.text for r in (await s.execute(select(UnitRevision))).scalars()}
    finally:
        await db.close()
        await drop_pg_database(url)

    assert len(samples) > 50
    # never on an unrecorded revision
    unrecorded = {text for _, text, _ in samples} - recorded
    assert not unrecorded, unrecorded
    # never left stopped: the longest stretch of samples without an active unit stays within a deploy's own
    gaps, start = [], None
    for t, _, active in samples:
        if active != "active" and start is None:
            start = t
        elif active == "active" and start is not None:
            gaps.append(t - start)
            start = None
    assert start is None, "the unit was not active at the end"
    assert max(gaps, default=0.0) < LONGEST_GAP_S, gaps
    assert samples[-1][2] == "active" and health == 200
    states = [j.state for j in jobs]
    assert set(states) <= {"succeeded", "interrupted"}, [(j.id, j.state, j.summary) for j in jobs]
    assert states.count("interrupted") <= 2
    print(f"samples={len(samples)} jobs={len(jobs)} states={states} gaps={[round(g, 2) for g in gaps]}")
