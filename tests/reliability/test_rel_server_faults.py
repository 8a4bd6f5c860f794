"""The inference server dying mid-benchmark, and a server that accepts connections but never answers
(issue 8 item 5), end to end through a `bench` job on the simulated host: the job ends within a
bound with a clear report, and nothing hangs."""

from __future__ import annotations

import asyncio
import contextlib
import os
import re
import signal
import time

from rel_kit import job_id_of
from sqlalchemy import select

from services.store.models import BenchRun, JobStep, OutboxMessage

BENCH = {"concurrency": [1, 4], "requests_per_level": 8, "warmup": 0, "input_len": 16, "output_len": 200,
         "max_duration_s": 3.0}


async def _admitted(bot) -> int:
    """Requests the server has admitted so far: the sum of its `Prefill batch, #new-seq: N` lines."""
    return sum(int(m.group(1)) for e in await bot.sim.journal_entries()
               if (m := re.search(r"Prefill batch, #new-seq: (\d+)", str(e.get("MESSAGE")))))


async def _bench(bot) -> tuple[int, int]:
    """Start a `bench` job; returns its id and the requests the server had admitted before it (its warm-up's)."""
    before = await _admitted(bot)
    return job_id_of(await bot.say("bench")), before


async def _when_benchmarking(bot, job_id: int, before: int) -> None:
    """Once the benchmark step runs and the server has admitted two of its requests (not merely once the step's row
    says running: the benchmark's child process needs a moment to start, more on a busy machine). Counted from
    before the job: four requests sent at once can all be admitted, in one batch, before the step's row is read."""
    async with asyncio.timeout(30):
        while True:
            async with bot.core.db.sessions() as s:
                step = await s.scalar(select(JobStep.state).where(JobStep.job_id == job_id,
                                                                  JobStep.name == "benchmark"))
            if step == "running":
                break
            await asyncio.sleep(0.02)
        while await _admitted(bot) < before + 2:
            await asyncio.sleep(0.02)


async def _finish(bot, job_id: int, within: float):
    t0 = time.monotonic()
    job = await bot.wait_job(job_id, within)
    return job, time.monotonic() - t0


async def _told(bot, job_id: int) -> list[str]:
    async with bot.core.db.sessions() as s:
        rows = (await s.execute(select(OutboxMessage).where(OutboxMessage.key.like(f"job:{job_id}%")))).scalars()
        return [str(m.payload.get("text")) for m in rows]


async def test_server_killed_mid_benchmark_ends_the_job_with_a_report(rel_bot, systemd: str) -> None:
    bot = await rel_bot("healthy", bench=BENCH, systemd=systemd)
    await bot.sim.wait_ready(30)
    job_id, before = await _bench(bot)
    await _when_benchmarking(bot, job_id, before)
    await asyncio.sleep(0.3)
    assert await bot.sim.signal_main("KILL")
    job, took = await _finish(bot, job_id, 30)
    told = "\n".join(await _told(bot, job_id))
    assert job.state == "failed", (job.state, job.summary)
    assert "crashed under load" in job.summary, job.summary
    assert job.summary in told
    assert took < 10




async def test_server_that_accepts_but_never_answers_ends_the_job(rel_bot) -> None:
    bench = {**BENCH, "concurrency": [4], "requests_per_level": 4, "output_len": 2000}  # ~8 s streams
    bot = await rel_bot("healthy", bench=bench)
    await bot.sim.wait_ready(30)
    job_id, before = await _bench(bot)
    await _when_benchmarking(bot, job_id, before)
    await asyncio.sleep(1.0)  # the streams are flowing
    pid = bot.sim.supervisor.main_pid
    os.kill(pid, signal.SIGSTOP)  # the listening socket stays: connections are accepted, nothing answers
    try:
        job, took = await _finish(bot, job_id, 30)
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGCONT)
    told = "\n".join(await _told(bot, job_id))
    assert took < 10  # each request's deadline is bench.max_duration_s (3 s here)
    # frozen mid-stream: no request completes; frozen before the benchmark's first call (a busy box): no reach
    assert job.state == "failed", (job.state, job.summary)
    assert "answered none of" in job.summary or "cannot reach the server" in job.summary, job.summary
    assert job.summary in told
    async with bot.core.db.sessions() as s:  # not recorded as a result (it would become the baseline)
        assert await s.scalar(select(BenchRun).where(BenchRun.job_id == job_id)) is None
