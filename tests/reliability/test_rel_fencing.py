"""Lease fencing across two replicas (issue 13): the database link of the replica running a job is cut for
longer than the lease TTL. That replica does no host action after the TTL (every SSH action it sends is
recorded at its edge), the other replica takes the host over, marks the job interrupted with what it found,
and the unit ends serving a recorded revision; the host's journal shows no interleaved stop/start.
"""

from __future__ import annotations

import asyncio
import time
import urllib.parse
from contextlib import AsyncExitStack
from pathlib import Path
from typing import Any

import httpx
import pytest
from rel_kit import (
    PG_URL,
    CuttableProxy,
    check_no_interleaving,
    drop_pg_database,
    job_id_of,
    make_pg_database,
    read_journal,
    settings_for,
    systemd_unit_sequence,
)
from sqlalchemy import select

from bot.app import Core, build_core
from handlers.contract import Actor, ChatMessage
from services.store.db import Database
from services.store.models import AuditEvent, Job, JobStep, OutboxMessage, UnitRevision

SCALE = 0.002
TTL = 3.0
LONG_BENCH = {"concurrency": [1], "requests_per_level": 6, "warmup": 0, "input_len": 16, "output_len": 600}


def record_actions(core: Core, log: list[tuple[float, str]]) -> None:
    """Record (monotonic time, what) of every action this replica sends to the host, at its edge."""
    for name in core.hosts.names():
        host: Any = core.hosts.get(name)
        for method in ("run", "upload", "read_file"):
            inner = getattr(host, method)

            def wrap(inner: Any = inner, method: str = method) -> Any:
                async def call(*a: Any, **k: Any) -> Any:
                    log.append((time.monotonic(), f"{method} {a[0] if a else ''}"))
                    return await inner(*a, **k)
                return call

            setattr(host, method, wrap())
        stream = host.stream

        def wrap_stream(inner: Any = stream) -> Any:
            def call(*a: Any, **k: Any) -> Any:
                log.append((time.monotonic(), f"stream {a[0] if a else ''}"))
                return inner(*a, **k)
            return call

        host.stream = wrap_stream()


async def _wait(pred: Any, within: float, what: str) -> None:
    async with asyncio.timeout(within):
        while not await pred():
            await asyncio.sleep(0.05)


@pytest.mark.skipif(not PG_URL, reason="set PITCREW_TEST_PG_URL (two replicas need PostgreSQL)")
async def test_replica_cut_from_the_database_stops_and_the_other_takes_over(tmp_path: Path) -> None:
    from simhost.host import SimHost

    url = await make_pg_database()
    parts = urllib.parse.urlsplit(url.replace("postgresql+asyncpg://", "http://"))
    proxies = [CuttableProxy(parts.hostname or "127.0.0.1", parts.port or 5432) for _ in range(2)]
    vias = [url.replace(f"{parts.hostname}:{parts.port}", f"127.0.0.1:{await p.start()}") for p in proxies]
    db = Database(url)
    actions: list[list[tuple[float, str]]] = [[], []]
    try:
        async with AsyncExitStack() as stack:
            sim = await stack.enter_async_context(SimHost(tmp_path / "sim", time_scale=SCALE))
            cores = []
            for via, log in zip(vias, actions, strict=True):
                core = await build_core(settings_for(sim.info, via, bench=LONG_BENCH), stack, transport="test",
                                        time_scale=SCALE, watch_journals=False, lease_ttl_s=TTL,
                                        start_scheduler=False)
                record_actions(core, log)
                cores.append(core)
            reply = await cores[0].router.dispatch(ChatMessage(text="try 4 steps",
                                                               actor=Actor("U1", "alice", "test"), channel="C1"))
            job_id = job_id_of(reply)
            host = sim.info["name"]

            async def bench_running() -> bool:
                async with db.sessions() as s:
                    return bool(await s.scalar(select(JobStep.id).where(
                        JobStep.job_id == job_id, JobStep.name == "benchmark", JobStep.state == "running")))

            await _wait(bench_running, 90, "the benchmark")
            runner = next(i for i, c in enumerate(cores) if c.jobs.running_job(host) == job_id)
            other = 1 - runner
            await asyncio.sleep(0.3)
            cut_at = time.monotonic()
            proxies[runner].cut()

            async def taken_over() -> bool:
                async with db.sessions() as s:
                    return (await s.get(Job, job_id, populate_existing=True)).state != "running"

            await _wait(taken_over, 60, "the takeover")
            taken_at = time.monotonic()
            await asyncio.sleep(max(0.0, cut_at + 3 * TTL - time.monotonic()))
            proxies[runner].restore()
            await asyncio.sleep(2 * TTL)  # the cut replica comes back: it must not end or touch the job again
            unit_text = await cores[other].experiments.ops(host).read_unit()
            state = await cores[other].experiments.ops(host).state()
            async with httpx.AsyncClient(timeout=10) as client:
                health = await client.get(f"{sim.info['server_url']}/health")
            entries = read_journal(sim.root)
        async with db.sessions() as s:
            job = await s.get(Job, job_id)
            revisions = {r.text for r in (await s.execute(select(UnitRevision))).scalars()}
            audit = (await s.execute(select(AuditEvent).where(AuditEvent.host == host).order_by(AuditEvent.id))
                     ).scalars().all()
            end = await s.scalar(select(OutboxMessage).where(OutboxMessage.key == f"job:{job_id}:end"))
    finally:
        await db.close()
        for p in proxies:
            await p.close()
        await drop_pg_database(url)

    # the replica that lost its lease sent nothing to the host once its lease could have lapsed
    late = [(round(t - cut_at, 2), what) for t, what in actions[runner] if t > cut_at + TTL]
    assert late == [], late
    # the other replica took over (after the TTL, by the database's clock) and says what it found
    assert taken_at - cut_at >= TTL * 0.9
    assert job.state == "interrupted" and "lost its lease" in job.error, (job.state, job.error)
    assert "Found on" in job.summary and end is not None and "Found on" in str(end.payload.get("text"))
    assert any(e.action == "job-interrupted" and e.detail.get("job") == job_id for e in audit)
    # the unit serves a recorded revision; the host never saw two stop/start sequences interleave
    assert state.active_state == "active" and health.status_code == 200
    assert unit_text in revisions
    assert check_no_interleaving(systemd_unit_sequence(entries)) == []
