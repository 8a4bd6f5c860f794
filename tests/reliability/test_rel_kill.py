"""Kill -9 of the bot mid-benchmark (issue 5 acceptance): on restart the job is marked interrupted,
its thread is told, and nothing is deployed a second time.

The bot runs in its own process (`rel_bot_proc.py`), the simulated host in another
(`pitcrew sim up`); both engines (SQLite file, PostgreSQL database).
"""

from __future__ import annotations

import asyncio
from pathlib import Path

from rel_kit import start_bot_proc, start_sim_proc
from sqlalchemy import func, select

from services.store.db import Database
from services.store.models import AuditEvent, Job, JobStep, OutboxMessage

SCALE = 0.002
LONG_BENCH = {"concurrency": [1], "requests_per_level": 4, "warmup": 0, "input_len": 16, "output_len": 400}


async def _step_running(db: Database, name: str) -> int | None:
    async with db.sessions() as s:
        return await s.scalar(select(JobStep.job_id).where(JobStep.name == name, JobStep.state == "running"))


async def _outbox_text(db: Database, key: str) -> str | None:
    async with db.sessions() as s:
        row = await s.scalar(select(OutboxMessage).where(OutboxMessage.key == key))
    return None if row is None else str(row.payload.get("text"))


async def test_kill9_mid_benchmark_marks_interrupted_tells_thread_no_second_deploy(
        tmp_path: Path, any_db_url: str) -> None:
    sim = await start_sim_proc(tmp_path / "sim", scale=SCALE)
    db = Database(any_db_url)
    try:
        await db.migrate()
        bot = await start_bot_proc(any_db_url, tmp_path / "sim" / "host.json", say=["try 4 steps"], scale=SCALE,
                                   bench=LONG_BENCH)
        submitted = await bot.wait_event(lambda e: e.get("event") == "submitted", within=60)
        job_id = int(submitted["job"])
        async with asyncio.timeout(60):
            while await _step_running(db, "benchmark") != job_id:  # noqa: ASYNC110
                await asyncio.sleep(0.02)
        await asyncio.sleep(0.2)  # well inside the benchmark
        bot.kill9()
        await bot.stop()
        async with db.sessions() as s:
            assert (await s.get(Job, job_id)).state == "running"  # the dead process could not say otherwise

        again = await start_bot_proc(any_db_url, tmp_path / "sim" / "host.json", scale=SCALE, bench=LONG_BENCH)
        ready = await again.wait_event(lambda e: e.get("event") == "ready", within=60)
        await asyncio.sleep(0.5)  # one worker round: nothing may be picked up again
        await again.stop()
        # it read the host and said what it found, in the job's thread
        found = await _outbox_text(db, f"job:{job_id}:end") or ""
        assert "Found on sim-gpu-1: sglang.service is active/running" in found and "(steps 4)" in found, found
        assert job_id in ready["interrupted"]
        async with db.sessions() as s:
            job = await s.get(Job, job_id)
            told = (await s.execute(select(OutboxMessage).where(OutboxMessage.thread_of == f"job:{job_id}"))
                    ).scalars().all()
            deploys = await s.scalar(select(func.count()).select_from(AuditEvent).where(
                AuditEvent.action == "deploy"))
            running = await s.scalar(select(func.count()).select_from(Job).where(Job.state == "running"))
        assert job.state == "interrupted" and "not re-run" in job.error
        assert any("not re-run" in str(m.payload) for m in told), [m.payload for m in told]
        assert deploys == 1
        assert running == 0
    finally:
        await db.close()
        await sim.stop()
