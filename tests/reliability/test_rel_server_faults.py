"""The inference server dying mid-benchmark, and a server that accepts connections but never answers
(issue 8 item 5), end to end through a `bench` job on the simulated host: the job ends within a
bound with a clear report, and nothing hangs."""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import time

import pytest
from rel_kit import job_id_of
from sqlalchemy import select

from services.models import JobStep, OutboxMessage

BENCH = {"concurrency": [1, 4], "requests_per_level": 8, "warmup": 0, "input_len": 16, "output_len": 200,
         "max_duration_s": 3.0}


async def _when_benchmarking(bot, job_id: int) -> None:
    async with asyncio.timeout(30):
        while True:
            async with bot.core.db.sessions() as s:
                step = await s.scalar(select(JobStep.state).where(JobStep.job_id == job_id,
                                                                  JobStep.name == "benchmark"))
            if step == "running":
                return
            await asyncio.sleep(0.02)


async def _finish(bot, job_id: int, within: float):
    t0 = time.monotonic()
    async with asyncio.timeout(within):
        while (job := await bot.core.jobs.get(job_id)).state in ("queued", "running"):  # noqa: ASYNC110
            await asyncio.sleep(0.05)
    return job, time.monotonic() - t0


async def _told(bot, job_id: int) -> list[str]:
    async with bot.core.db.sessions() as s:
        rows = (await s.execute(select(OutboxMessage).where(OutboxMessage.key.like(f"job:{job_id}%")))).scalars()
        return [str(m.payload.get("text")) for m in rows]


async def test_server_killed_mid_benchmark_ends_the_job_with_a_report(rel_bot) -> None:
    bot = await rel_bot("healthy", bench=BENCH)
    await bot.sim.wait_ready(30)
    job_id = job_id_of(await bot.say("bench"))
    await _when_benchmarking(bot, job_id)
    await asyncio.sleep(0.3)
    os.kill(bot.sim.supervisor.main_pid, signal.SIGKILL)
    job, took = await _finish(bot, job_id, 30)
    told = "\n".join(await _told(bot, job_id))
    assert job.state == "failed", (job.state, job.summary)
    assert "crashed under load" in job.summary, job.summary
    assert job.summary in told
    assert took < 10


@pytest.mark.xfail(strict=True, reason="a run where the server answered none of its requests ends 'succeeded' and "
                                       "is recorded as the host's baseline; fix proposed to the lead "
                                       "(services/experiments.py benchmark())")


async def test_server_that_accepts_but_never_answers_ends_the_job(rel_bot) -> None:
    bench = {**BENCH, "concurrency": [4], "requests_per_level": 4}
    bot = await rel_bot("healthy", bench=bench)
    await bot.sim.wait_ready(30)
    job_id = job_id_of(await bot.say("bench"))
    await _when_benchmarking(bot, job_id)
    await asyncio.sleep(0.3)
    pid = bot.sim.supervisor.main_pid
    os.kill(pid, signal.SIGSTOP)  # the listening socket stays: connections are accepted, nothing answers
    try:
        job, took = await _finish(bot, job_id, 30)
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGCONT)
    told = "\n".join(await _told(bot, job_id))
    assert took < 10  # each request's deadline is bench.max_duration_s (3 s here)
    assert "timeout: 4" in told  # the results say why
    assert job.state == "failed" and "answered none" in job.summary, (job.state, job.summary)
