"""The database briefly unavailable under load (issue 8 item 7): the bot's PostgreSQL link is cut for a
few seconds while a `try` runs and chat commands keep coming, then restored. Afterwards the job has a
final state, no job is left open, and every message the bot queued is still in the outbox."""

from __future__ import annotations

import asyncio
import urllib.parse

import pytest
from rel_kit import PG_URL, CuttableProxy, drop_pg_database, job_id_of, make_pg_database
from sqlalchemy import func, select

from services.store.models import Job, OutboxMessage


@pytest.mark.skipif(not PG_URL, reason="set PITCREW_TEST_PG_URL")
async def test_database_cut_for_seconds_during_a_try(rel_bot) -> None:
    url = await make_pg_database()
    parts = urllib.parse.urlsplit(url.replace("postgresql+asyncpg://", "http://"))
    proxy = CuttableProxy(parts.hostname or "127.0.0.1", parts.port or 5432)
    port = await proxy.start()
    via = url.replace(f"{parts.hostname}:{parts.port}", f"127.0.0.1:{port}")
    try:
        bench = {"concurrency": [1], "requests_per_level": 3, "warmup": 0, "input_len": 16, "output_len": 300}
        bot = await rel_bot("healthy", db_url=via, bench=bench)
        job_id = job_id_of(await bot.say("try 4 steps"))
        async with asyncio.timeout(30):
            while (await bot.core.jobs.get(job_id)).state != "running":  # noqa: ASYNC110
                await asyncio.sleep(0.02)
        await asyncio.sleep(0.8)
        proxy.cut()
        during = [await bot.say("history", user=f"D{i}") for i in range(3)]
        await asyncio.sleep(3.0)
        proxy.restore()
        async with asyncio.timeout(60):
            while True:
                try:
                    job = await bot.core.jobs.get(job_id)
                    if job.state not in ("queued", "running"):
                        break
                except Exception:
                    pass
                await asyncio.sleep(0.1)
        async with asyncio.timeout(15):  # the pool's dead connections are replaced on the next use
            while (after := await bot.say("history", user="A1")).tone == "error":  # noqa: ASYNC110
                await asyncio.sleep(0.2)
        async with bot.core.db.sessions() as s:
            open_jobs = await s.scalar(select(func.count()).select_from(Job).where(
                Job.state.in_(("queued", "running"))))
            keys = set((await s.execute(select(OutboxMessage.key))).scalars())
        # commands during the outage get the generic error with a reference (the details are in the log)
        # the outage is named plainly (never a traceback); only an unexpected failure gets a reference id
        assert all(d.tone == "error" and ("database is not answering" in d.text or "reference" in d.text)
                   for d in during), [d.text for d in during]
        # the job did not stay `running`: it ended, and says why when the outage stopped it
        assert job.state in ("failed", "succeeded"), job.state
        if job.state == "failed":
            assert "the database became unavailable while this job ran" in job.summary, job.summary
        assert after.tone != "error", after.text
        assert open_jobs == 0
        assert {f"job:{job_id}", f"job:{job_id}:end"} <= keys or job.state == "succeeded", keys
    finally:
        await proxy.close()
        await drop_pg_database(url)
