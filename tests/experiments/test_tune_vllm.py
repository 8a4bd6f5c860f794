"""A tune on the simulated vLLM host, end to end: the chat words mean vLLM's flags (spec tokens inside
`--speculative-config`, `mem` = `--gpu-memory-utilization`), the start is read from the unit's own flags (the JSON
and `0.90`), labels speak vLLM's words, a CUDA OOM under the ramp marks its memory region through vLLM's memory
directions, and the host ends on its starting configuration and serves. The start, benchmarked without a restart,
has the capacity its running server logged when it started; the verdict's baseline is the median of the start's runs
on the host."""

from __future__ import annotations

import re

import httpx
import pytest

# 16 requests in flight against vLLM's default 256 sequences: the TTFT limit holds wherever the engine lives. Four
# waves of 16 (~2.7 s a run): the noise band comes from the start's two runs (the bench before the tune and the tune's
# own); with two waves (~1.3 s) one run read >=7.8 % off the other once in CI, the band (t at 3 dof) grew past the
# 15 % between spec tokens 4 and 3, and the tie went to 3 for its larger KV cache
BENCH = {"concurrency": [16], "requests_per_level": 64, "warmup": 1, "input_len": 32, "output_len": 96}
TUNE = "tune spec tokens 2..4, mem 0.9,0.95 for throughput at 16 with ttft p95 under 250ms in 6 restarts"


def _job_id(text: str) -> int:
    m = re.search(r"Job (\d+)", text)
    assert m is not None, text
    return int(m.group(1))


async def test_the_vllm_tune_preview_names_vllms_knobs(make_bot) -> None:
    bot = await make_bot("healthy", engine="vllm", bench=BENCH, confirm=("tune",))
    job_id = _job_id((await bot.say(TUNE)).text)
    (preview,) = await bot.wait_messages(lambda d: d.key == f"job:{job_id}")
    text = preview.reply.text
    assert "knobs: spec tokens 2..4, mem 0.9,0.95 (6 configurations in the grid)" in text, text
    assert "steps" not in text, text


@pytest.mark.slow
@pytest.mark.timeout(450)
async def test_a_vllm_tune_finds_the_best_rolls_back_an_oom_and_ends_on_the_start(make_bot) -> None:
    bot = await make_bot("healthy", engine="vllm", bench=BENCH)
    before = bot.unit_text()
    bench = await bot.wait_job(_job_id((await bot.say("bench c=16")).text), timeout=120)  # a run of the start
    assert bench.state == "succeeded", bench.summary
    job = await bot.wait_job(_job_id((await bot.say(TUNE)).text), timeout=400)
    assert job.state == "succeeded", job.summary
    r = job.result
    by_label = {p["label"]: p for p in r["points"]}
    # the fake vLLM's surface at C=16 (simhost/vllm/model.py): speed grows with spec tokens (186, 240, 277 tok/s
    # per request at C=1 for 2, 3, 4); at 0.95 of the GPU the memory outside vLLM's budget is too small for 16
    # requests of 3 draft tokens: CUDA OOM under the ramp
    start = by_label["spec tokens 3 · mem 0.9"]  # the unit's `"num_speculative_tokens": 3` and `0.90`
    assert start["start"] and not start["restarted"], r["points"]
    assert start["kv_tokens"] and start["kv_tokens"] > 100_000, start  # read from the running server's start lines
    assert r["best"]["label"] == "spec tokens 4 · mem 0.9", (r["criterion"], r["noise_pct"], r["baseline"], r["points"])
    assert r["restarts"] <= 6 and r["left_down"] == 0
    assert len(by_label) == 6 and r["stopped"] == "every configuration of the grid was evaluated"
    failed = [p for p in r["points"] if p["status"] == "failed"]
    assert failed and all(p["memory"] and "mem 0.95" in p["label"] for p in failed), r["points"]
    # the first OOM at 0.95 marks its region: a configuration at least as demanding is not restarted for
    refused = [p for p in r["points"] if p["status"] == "refused"]
    assert all("mem 0.95" in p["label"] and "ran out of memory" in p["why"] for p in refused), r["points"]
    assert len(failed) + len(refused) == 3
    assert re.match(r"[+−]\d+ % \(±\d+ %\) — ", r["verdict"]), r["verdict"]
    # the verdict's baseline is the start's median over its runs on the host: the bench before and the tune's own
    assert r["baseline"]["runs"] == 2 and "over the start (the median of its 2 runs on this host)" in r["verdict"]
    # the verdict is the confirming run's (a fresh restart of the pick, new prompts), counted in the restarts
    (confirming,) = r["confirmation"]["runs"]
    assert r["confirmation"]["status"] == "confirmed" and confirming["label"] == "spec tokens 4 · mem 0.9"
    assert confirming["run_id"] not in {p["run_id"] for p in r["points"]} and confirming["throughput"] > 0
    assert r["restarts"] == r["search_restarts"] + 1
    assert "by its confirming run (the search read " in r["verdict"], r["verdict"]
    assert bot.unit_text() == before
    async with httpx.AsyncClient(timeout=10) as client:
        ok = await client.post(f"{bot.sim.info['server_url']}/v1/completions",
                               json={"model": "x", "prompt": "hi", "max_tokens": 4})
    assert ok.status_code == 200
    (summary,) = await bot.wait_messages(lambda d: d.key == f"job:{job.id}:tune")
    assert "best *spec tokens 4 · mem 0.9*" in summary.reply.text, summary.reply.text
    assert (f"Confirming spec tokens 4 · mem 0.9: search read {confirming['search_throughput']:,.0f} tok/s at C=16, "
            f"confirmation {confirming['throughput']:,.0f} (a fresh restart, new prompts).") in summary.reply.text
    assert summary.reply.attachments[0].content.startswith(b"\x89PNG")
    (apply,) = summary.reply.buttons
    assert apply.command == f"try --num-speculative-tokens=4 --gpu-memory-utilization=0.9 on {job.host}"
