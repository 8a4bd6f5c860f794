"""`tune` on the REAL llama.cpp engine (`llama-server` with SmolLM2-135M on the CPU, built by `make engine`): the
chat words mean the unit's own flags (draft tokens: the draft length of its `--spec-type`; max running: `-np`),
a word with no meaning there is refused in the preview, a context the unit's `MemoryMax=` cannot hold is killed by
the kernel and rolled back before the next trial, and the tune ends on the starting configuration, serving.
Skipped, with the reason shown, where the engine is not built. Few trials and few short requests: the engine
decodes ~40-60 tokens/s per request here, and its decoding was most of this file's CPU (~63 CPU-s a `make test` with
48-token prompts and answers; what is asserted is the tune's path, not a throughput)."""

from __future__ import annotations

import re

import httpx
import pytest
from support.llamacpp_kit import real_llamacpp

pytestmark = [real_llamacpp(), pytest.mark.slow]

BENCH = {"concurrency": [2], "requests_per_level": 4, "warmup": 1, "input_len": 24, "output_len": 24}


def _job_id(text: str) -> int:
    m = re.search(r"Job (\d+)", text)
    assert m is not None, text
    return int(m.group(1))


async def _serves(bot) -> None:
    await bot.sim.wait_ready(60)
    async with httpx.AsyncClient(timeout=30) as client:
        ok = await client.post(f"{bot.sim.info['server_url']}/v1/completions",
                               json={"model": "x", "prompt": "hi", "max_tokens": 4})
    assert ok.status_code == 200, ok.text


@pytest.mark.timeout(420)
async def test_a_tune_of_draft_tokens_and_slots_ends_with_chart_best_and_verdict_on_the_start(make_bot) -> None:
    bot = await make_bot("healthy", engine="llamacpp", bench=BENCH, confirm=("tune",))
    await bot.sim.wait_ready(60)
    before = bot.unit_text()
    refused = await bot.say("tune draft tokens 2,3, mem 0.8,0.9 for throughput at 2")
    assert "'mem' has no meaning on llama.cpp" in refused.text and "--parallel" in refused.text, refused.text
    assert not await bot.core.jobs.queue()
    job_id = _job_id((await bot.say("tune draft tokens 2,3, max running 1,2 for throughput at 2")).text)
    (preview,) = await bot.wait_messages(lambda d: d.key == f"job:{job_id}")
    assert "knobs: draft tokens 2,3, max running 1,2 (4 configurations in the grid)" in preview.reply.text
    await bot.say(f"yes {job_id}")
    job = await bot.wait_job(job_id, timeout=380)
    assert job.state == "succeeded", job.summary
    r = job.result
    by_label = {p["label"]: p for p in r["points"]}
    start = by_label["draft tokens 3 · max running 2"]  # the unit's --spec-ngram-simple-size-m 3 and -np 2
    assert start["start"] and not start["restarted"] and start["throughput"] > 0, r["points"]
    assert r["search_restarts"] <= 3 and r["left_down"] == 0
    assert r["restarts"] == r["search_restarts"] + r["confirmation"]["restarts"] <= 4  # one confirming restart
    assert len(by_label) == 4, r["points"]
    for p in r["points"]:
        assert p["status"] == "ok" and p["throughput"] > 0, p  # real tokens from a real CPU
        assert p["max_running"] == int(p["changes"]["--parallel"]), p  # llama.cpp's own n_slots line
    best = r["best"]
    assert best is not None and r["verdict"], r
    conf = r["confirmation"]
    (summary,) = await bot.wait_messages(lambda d: d.key == f"job:{job.id}:tune")
    assert summary.reply.attachments[0].content.startswith(b"\x89PNG")
    if conf["status"] != "start":  # the search's pick was confirmed by a restart of its own before the verdict
        assert conf["runs"] and r["restarts"] == r["search_restarts"] + conf["restarts"], conf
        assert "Confirming " in summary.reply.text and "search read " in summary.reply.text, summary.reply.text
    if not best["start"]:
        assert conf["status"] == "confirmed" and re.match(r"[+−]\d+ % \(±\d+ %\) — ", r["verdict"]), r["verdict"]
        assert f"best *{best['label']}*" in summary.reply.text, summary.reply.text
        (apply,) = summary.reply.buttons
        assert apply.command == (f"try --spec-draft-n-max={best['changes']['--spec-draft-n-max']} "
                                 f"--parallel={best['changes']['--parallel']} on {job.host}")
    else:  # the start is the best found, or the pick was not measurably better in its confirming run: kept
        assert f"keep the start *{best['label']}*" in summary.reply.text, summary.reply.text
        assert not summary.reply.buttons
    assert bot.unit_text() == before
    await _serves(bot)


@pytest.mark.timeout(300)
async def test_a_context_beyond_memory_max_is_oom_killed_rolled_back_and_the_tune_ends_on_the_start(make_bot) -> None:
    bot = await make_bot("healthy", engine="llamacpp", bench={**BENCH, "concurrency": [1]})
    await bot.sim.wait_ready(60)
    before = bot.unit_text()
    job = await bot.wait_job(_job_id((await bot.say("tune context 4096,131072 for throughput at 1")).text),
                             timeout=260)
    assert job.state == "succeeded", job.summary
    r = job.result
    by_label = {p["label"]: p for p in r["points"]}
    oom = by_label["context 128k"]
    assert oom["status"] == "failed" and oom["memory"] and oom["restarted"], oom
    assert "host_oom_kill" in oom["why"], oom["why"]
    assert r["left_down"] == 0 and r["best"]["label"] == "context 4k" and r["best"]["start"]
    assert r["verdict"] == "the starting configuration is the best found"
    assert bot.unit_text() == before
    await _serves(bot)
