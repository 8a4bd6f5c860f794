"""vLLM as a first-class engine, end to end: the simulated vLLM 0.11 host over SSH, through the router."""

from __future__ import annotations

import json
import re

from support.paced import assert_paced_decode

from services.units import read_exec_start, unit_engine
from simhost.sglang.model import speed


def _diff_lines(before: str, after: str) -> list[tuple[str, str]]:
    return [(a, b) for a, b in zip(before.splitlines(), after.splitlines(), strict=True) if a != b]


async def test_try_5_spec_tokens_changes_only_the_json_value_and_reports_vllms_accept_length(
        make_bot, systemd: str) -> None:
    bot = await make_bot("healthy", confirm=("try",), engine="vllm", systemd=systemd)
    before = bot.unit_text()
    assert unit_engine(before) == "vllm"
    await bot.sim.wait_ready(60)
    status = await bot.say("status")
    # no start recorded yet: the version is the running server's answer on /version
    assert status.tables[0].rows[0][2] == "vLLM 0.11.0" and status.tables[0].rows[0][5] == "spec tokens 3"

    reply = await bot.say("try 5 spec tokens c=1")
    job_id = int(re.search(r"Job (\d+)", reply.text).group(1))
    await bot.drain()
    (preview,) = bot.messages(lambda d: d.key == f"job:{job_id}" and not d.edit)
    assert (preview.reply.code or "").strip().splitlines() == ["--speculative-config num_speculative_tokens 3 -> 5"]
    assert bot.unit_text() == before

    await bot.say(f"yes {job_id}")
    job = await bot.wait_job(job_id)
    assert job.state == "succeeded", job.summary
    after = bot.unit_text()
    # the unit file: one line, and on it one digit, changed; the JSON's keys, order and quoting are kept
    ((old_line, new_line),) = _diff_lines(before, after)
    assert new_line == old_line.replace('"num_speculative_tokens": 3}', '"num_speculative_tokens": 5}')
    assert read_exec_start(after).argv[0] == "/opt/vllm/bin/vllm"

    (table_msg,) = bot.messages(lambda d: d.thread_of == f"job:{job_id}" and bool(d.reply.tables))
    table = table_msg.reply.tables[0]
    assert table.title is not None and table.title.startswith("spec tokens 5 on ")
    row = dict(zip(table.columns, table.rows[0], strict=True))
    accept_len, rate_c1 = speed(5)
    assert abs(float(row["accept len"]) - accept_len) < 0.3, row  # from vllm:spec_decode_* counters
    assert_paced_decode(row, rate_c1)
    assert row["max running"] == "—"
    assert "vLLM logs no such figure" in table_msg.reply.text and "KV cache of " in table_msg.reply.text
    run = (await bot.core.results.recent(bot.sim.info["name"], 1))[0]
    assert run.capacity["engine"] == "vllm" and run.capacity["engine_version"] == "0.11.0"
    assert run.capacity["max_total_num_tokens"] > 0 and run.capacity["context_len"] == 32768
    status = await bot.say("status")
    assert status.tables[0].rows[0][2] == "vLLM 0.11.0"


async def test_a_max_model_len_the_kv_cache_cannot_hold_is_diagnosed_and_rolled_back(make_bot, systemd: str) -> None:
    bot = await make_bot("healthy", engine="vllm", systemd=systemd)
    before = bot.unit_text()
    reply = await bot.say("try context 262144 c=1")
    job_id = int(re.search(r"Job (\d+)", reply.text).group(1))
    job = await bot.wait_job(job_id, timeout=180)
    assert job.state == "failed"
    result = job.result or {}
    diagnosis = result.get("diagnosis") or {}
    assert diagnosis.get("cause") == "kv_cache_oom", json.dumps(diagnosis, indent=1)[:6000]
    assert result.get("rolled_back_to") is not None
    assert bot.unit_text() == before
    await bot.sim.wait_ready(30)


async def test_a_flag_vllm_does_not_have_is_refused_before_anything_changes(make_bot) -> None:
    bot = await make_bot("healthy", engine="vllm")
    before = bot.unit_text()
    reply = await bot.say("try topk 2")
    assert "vLLM, which has no --speculative-eagle-topk" in reply.text
    assert bot.unit_text() == before


async def test_a_sweep_of_spec_tokens_on_vllm_reads_in_vllms_words(make_bot) -> None:
    bench = {"concurrency": [1], "requests_per_level": 4, "warmup": 1, "input_len": 32, "output_len": 96}
    bot = await make_bot("healthy", bench=bench, policy={"sweep_end": "best"}, engine="vllm")
    reply = await bot.say("sweep steps 2,4")  # the SGLang word names the same knob
    job = await bot.wait_job(int(re.search(r"Job (\d+)", reply.text).group(1)), timeout=240)
    assert job.state == "succeeded", job.summary
    (summary,) = await bot.wait_messages(lambda d: d.key == f"job:{job.id}:sweep")
    table = summary.reply.tables[0]
    assert table.columns[0] == "spec tokens" and [r[0].split()[0] for r in table.rows] == ["2", "4"]
    assert "best *4*" in summary.reply.text
    assert '"num_speculative_tokens": 4}' in bot.unit_text()
    labels = [r.label for r in await bot.core.results.recent(bot.sim.info["name"], 5)]
    assert "spec tokens 4" in labels and "spec tokens 2" in labels
