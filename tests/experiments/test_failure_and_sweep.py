"""The seed story's crash with automatic rollback, and a sweep with its summary, chart and plateau."""

from __future__ import annotations

import re

import httpx
import pytest

SMALL = {"concurrency": [1, 8], "requests_per_level": 8, "warmup": 1, "input_len": 32, "output_len": 48}


def _job_id(text: str) -> int:
    return int(re.search(r"Job (\d+)", text).group(1))


async def test_seed_try_10_steps_fails_diagnosed_and_rolls_back(make_bot) -> None:
    """Without the ramp: the benchmark's C=1 level runs, the server dies at C=8, partial results are posted."""
    bot = await make_bot("seed", bench=SMALL, policy={"ramp_before_benchmark": False})
    before = bot.unit_text()
    assert "--speculative-num-steps 5" in before
    job = await bot.wait_job(_job_id((await bot.say("try 10 steps")).text), timeout=180)
    assert job.state == "failed"
    assert "crashed under load at C=8" in job.summary
    failure = bot.messages(lambda d: d.key == f"job:{job.id}:failure")
    assert failure, [d.key for d in bot.transcript.log]
    text = failure[-1].reply.text
    assert "cuda_oom_runtime" in text and "Rolled back automatically" in text
    # it ran before it died (accept length ~5.5 from its own Decode batch lines), and the message says so
    assert re.search(r"accept len 5\.[3-7]", text), text
    # partial results (C=1) were still posted
    tables = bot.messages(lambda d: d.thread_of == f"job:{job.id}" and d.reply.tables)
    assert [r[0] for r in tables[0].reply.tables[0].rows] == ["1"]
    # the host is back on the previous revision and serves
    assert bot.unit_text() == before
    await _serves(bot)


async def test_seed_try_10_steps_stops_at_the_ramp_level_that_breaks(make_bot, systemd: str) -> None:
    """With the ramp (default): 1 request holds, 2 together kill it; rolled back before any benchmark level."""
    bot = await make_bot("seed", bench=SMALL, systemd=systemd)
    before = bot.unit_text()
    job = await bot.wait_job(_job_id((await bot.say("try 10 steps")).text), timeout=180)
    assert job.state == "failed"
    assert "crashed under the ramp at C=2 (C=1 held;" in job.summary, job.summary
    assert "the full benchmark was not run" in job.summary
    failure = bot.messages(lambda d: d.key == f"job:{job.id}:failure")
    text = failure[-1].reply.text
    ramp = re.search(r"Ramp: C=1 \((\d+) tok/s end to end per request\) held; it failed at C=2", text)
    assert ramp, text
    # the figure is the ramp's own measurement, kept with the job; end to end (prefill and the HTTP round trip
    # included) it stays below the engine's decode rate at steps 10 (270-293 tok/s in the field notes). How far
    # below is the machine's load (this runs at idle priority beside five other workers; CI saw 148), so the
    # lower bound only says a request was timed, not how fast this machine is
    assert int(ramp.group(1)) == round(job.result["ramp_tok_s"]["1"]), job.result
    assert 0 < int(ramp.group(1)) < 300
    assert "cuda_oom_runtime" in text and "Rolled back automatically" in text, text
    assert not bot.messages(lambda d: d.thread_of == f"job:{job.id}" and d.reply.tables)  # nothing benchmarked
    # the ramp's requests asked no more than the benchmark would (its 48 tokens, under the ramp's own 64)
    received = bot.sim.received()
    ramp = [r["max_tokens"] for r in received if not r["stream"] and str(r["prompt"]).startswith("Count from")]
    assert ramp and set(ramp) == {48}, received
    assert bot.unit_text() == before
    await _serves(bot)


async def _serves(bot) -> None:  # type: ignore[no-untyped-def]
    async with httpx.AsyncClient(timeout=10) as client:
        r = await client.post(f"{bot.sim.info['server_url']}/v1/completions",
                              json={"model": "x", "prompt": "hi", "max_tokens": 4})
    assert r.status_code == 200


@pytest.mark.slow
async def test_sweep_posts_summary_chart_and_calls_the_plateau(make_bot) -> None:
    bench = {"concurrency": [1], "requests_per_level": 4, "warmup": 1, "input_len": 32, "output_len": 96}
    bot = await make_bot("healthy", bench=bench, policy={"sweep_end": "best"})
    job = await bot.wait_job(_job_id((await bot.say("sweep steps 3..5")).text), timeout=240)
    assert job.state == "succeeded", job.summary
    (summary,) = await bot.wait_messages(lambda d: d.key == f"job:{job.id}:sweep")
    table = summary.reply.tables[0]
    # on a failure, every step's figures and the comparisons the call was made from (the plateau call rides on a few
    # per cent: docs/RELIABILITY.md has a sweep failure whose output was not kept)
    why = f"{table.rows}\n{summary.reply.text}\n{job.result}"
    assert [r[0].split()[0] for r in table.rows] == ["3", "4", "5"], why
    assert table.rows[1][0] == "4 ✓", why
    assert summary.reply.attachments and summary.reply.attachments[0].content.startswith(b"\x89PNG")
    # 5 is within noise of 4 (no repeats yet: the assumed run-to-run noise); 4 leaves more KV cache
    assert "best *4*" in summary.reply.text, why
    assert "4 and 5 are within noise of each other" in summary.reply.text, why
    assert "plateau from 4" in summary.reply.text, why
    fewer = "4 uses fewer draft tokens and leaves more KV cache than 5: 14 vs 11 running requests"
    assert fewer in summary.reply.text, why
    assert "--speculative-num-steps 4" in bot.unit_text()


@pytest.mark.slow
async def test_sweep_on_a_noisy_server_calls_4_and_5_within_noise_and_picks_4(make_bot) -> None:
    """The simulated server jitters every run's speed (sd 1 %, seeded): 4 and 5 stay within noise, 4 wins,
    and the chart and the table carry the noise band."""
    bench = {"concurrency": [1], "requests_per_level": 6, "warmup": 1, "input_len": 32, "output_len": 96}
    bot = await make_bot("healthy", bench=bench, policy={"sweep_end": "best"},
                         sim_opts={"noise_pct": 1.0, "noise_seed": 3})
    job = await bot.wait_job(_job_id((await bot.say("sweep steps 3..5")).text), timeout=300)
    assert job.state == "succeeded", job.summary
    assert job.result["best"] == "4" and set(job.result["within_noise"]) == {"4", "5"}, (
        job.result["criterion"], job.result["comparisons"], job.result.get("runs"))
    assert job.result["comparisons"]["3"]["outcome"] == "worse", job.result["comparisons"]
    (summary,) = await bot.wait_messages(lambda d: d.key == f"job:{job.id}:sweep")
    assert "4 and 5 are within noise of each other" in summary.reply.text
    assert "--speculative-num-steps 4" in bot.unit_text()
