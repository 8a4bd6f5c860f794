"""`try 10 steps` end to end against the simulated host over SSH, through the router."""

from __future__ import annotations

import re

from support.paced import assert_paced_decode

from services.engines.sglang.flags import apply_changes
from services.units.editor import read_exec_start
from simhost.sglang.model import speed


async def test_try_10_steps_posts_preview_progress_and_results(make_bot, systemd: str) -> None:
    bot = await make_bot("healthy", confirm=("try",), systemd=systemd)
    before = bot.unit_text()
    reply = await bot.say("try 10 steps c=1")
    assert "confirm" in reply.text.lower()
    job_id = int(re.search(r"Job (\d+)", reply.text).group(1))
    await bot.drain()
    (preview,) = bot.messages(lambda d: d.key == f"job:{job_id}" and not d.edit)
    assert "--speculative-num-steps 3 -> 10" in (preview.reply.code or "")
    assert "--speculative-num-draft-tokens 4 -> 11" in (preview.reply.code or "")
    assert [b.command for b in preview.reply.buttons] == [f"yes {job_id}", f"no {job_id}",
                                                          "try --speculative-num-steps=10 c=1 on sim-gpu-1 --dry-run"]
    assert bot.unit_text() == before  # nothing changes before the confirmation

    confirmed = await bot.say(f"yes {job_id}")
    assert "confirmed" in confirmed.text
    job = await bot.wait_job(job_id)
    assert job.state == "succeeded", job.summary

    edits = [d for d in bot.messages(lambda d: d.key == f"job:{job_id}") if d.edit]
    assert edits and "succeeded" in edits[-1].reply.text
    # the ramp at C=1 (its requests do not stream, the benchmark's do) asked its 64 tokens, under the benchmark's 128
    ramp = [r for r in bot.sim.received() if not r["stream"] and str(r["prompt"]).startswith("Count from")]
    assert [r["max_tokens"] for r in ramp] == [64], bot.sim.received()
    tables = bot.messages(lambda d: d.thread_of == f"job:{job_id}" and d.reply.tables)
    assert len(tables) == 1
    table = tables[0].reply.tables[0]
    row = dict(zip(table.columns, table.rows[0], strict=True))
    accept_len, rate_c1 = speed(10)
    assert_paced_decode(row, rate_c1)
    assert abs(float(row["accept len"]) - accept_len) < 0.3, row

    # the unit differs from the previous one only in the changed flags
    after = bot.unit_text()
    expected = apply_changes(read_exec_start(before).argv, {"steps": "10"}).new_argv
    assert read_exec_start(after).argv == expected
    strip = lambda t: re.sub(r"--speculative-num-(steps|draft-tokens) \d+", "", t)  # noqa: E731
    assert strip(after) == strip(before)


async def test_cancel_of_a_queued_job_changes_nothing(make_bot) -> None:
    bot = await make_bot("healthy", confirm=("try",))
    before = bot.unit_text()
    reply = await bot.say("try 4 steps c=1")
    job_id = int(re.search(r"Job (\d+)", reply.text).group(1))
    said = await bot.say(f"no {job_id}")
    assert "cancelled" in said.text
    job = await bot.core.jobs.get(job_id)
    assert job.state == "cancelled"
    assert bot.unit_text() == before
