"""Abuse (issue 8 item 12): per-user rate limit, cap on queued jobs per host, bounds on sweep size,
concurrency, command length and flag values, and on benchmark duration — each with a clear message."""

from __future__ import annotations

import time

import pytest
from rel_kit import job_id_of

from services.store.audit import AuditQuery


async def test_per_user_rate_limit(rel_bot) -> None:
    bot = await rel_bot("healthy", policy={"user_commands_per_minute": 5})
    for _ in range(5):
        assert (await bot.say("help", user="Ufast")).tone not in ("error", "warning")
    refused = await bot.say("help", user="Ufast")
    assert refused.tone == "error" and refused.ephemeral
    assert "slow down: at most 5 commands a minute" in refused.text
    assert (await bot.say("help", user="Uother")).tone not in ("error", "warning")  # per user, not global
    audit = await bot.core.audit.query(AuditQuery(limit=100))
    assert any(e.outcome == "refused" and "slow down" in str(e.detail) for e in audit)


async def test_cap_on_queued_jobs_per_host(rel_bot) -> None:
    bot = await rel_bot("healthy", policy={"max_queued_jobs_per_host": 3, "confirm": ["try"]})
    ids = [job_id_of(await bot.say(f"try {n} steps", user=f"U{n}")) for n in (4, 5, 6)]
    over = await bot.say("try 7 steps", user="U7")
    assert "Job" not in over.text
    assert "already has 3 jobs waiting (the limit is 3); cancel one or wait" in over.text
    await bot.say(f"no {ids[0]}", user="U4")  # cancelling one frees a place
    assert "Job" in (await bot.say("try 7 steps", user="U7")).text


@pytest.mark.parametrize("text,message", [
    ("sweep steps 1..100", "A sweep tries at most 12 values."),
    ("sweep steps 1,2,3,4,5,6,7,8,9,10,11,12,13", "A sweep tries at most 12 values."),
    ("bench c=100000", "A concurrency level must be from 1 to 256."),
    ("bench c=1,2,3,4,5,6,7,8,9", "At most 8 concurrency levels per run."),
    ("sweep steps 1..5 c=1,2,3,4,5,6,7,8,9", "At most 8 concurrency levels per run."),
    ("try steps=100000", "steps must be a whole number from 1 to 16; 100000 is out of range."),
    ("try mem=5", "mem must be a number between 0 and 1 (exclusive)"),
    ("try " + "x" * 600, "That command is too long (at most 500 characters)."),
])
async def test_size_bounds_are_refused_before_anything_runs(rel_bot, text: str, message: str) -> None:
    bot = await rel_bot("healthy")
    reply = await bot.say(text)
    assert reply.tone == "warning" and message in reply.text, reply.text
    assert await bot.core.jobs.recent() == []


async def test_benchmark_duration_is_bounded(rel_bot) -> None:
    bench = {"concurrency": [1], "requests_per_level": 200, "warmup": 0, "input_len": 16, "output_len": 100,
             "max_duration_s": 1.5}
    bot = await rel_bot("healthy", bench=bench)
    t0 = time.monotonic()
    job_id = job_id_of(await bot.say("bench"))
    job = await bot.wait_job(job_id, 8)  # a 1.5 s bound plus the job's own overhead; unbounded it runs ~50 s
    assert time.monotonic() - t0 < 10
    assert time.monotonic() - t0 < 8
    assert job.state == "failed", job.summary
    assert "was stopped at its limit of 1.5 s (bench.max_duration_s) after" in job.summary, job.summary
