"""What a real host adds to a try: a unit file edited by hand between two jobs, and a sudo rule that is missing.

Drift runs on both service managers; the sudo rule exists only on systemd 252 itself (the sim's supervisor runs
everything as the bot's own user).
"""

from __future__ import annotations

import re

import pytest

from services.hosts import sudoers_rule
from simhost.systemd import sudoers_rule as sim_sudoers_rule
from simhost.systemd import unavailable


def _job_id(text: str) -> int:
    return int(re.search(r"Job (\d+)", text).group(1))


async def test_a_unit_edited_by_hand_between_two_jobs_is_named_in_the_next_preview(make_bot, systemd: str) -> None:
    bot = await make_bot("healthy", systemd=systemd)
    job = await bot.wait_job(_job_id((await bot.say("try 4 steps c=1")).text))
    assert job.state == "succeeded", job.summary
    clean = await bot.say("try 5 steps c=1 --dry-run")
    assert "changed outside pitcrew" not in clean.text and "NeedDaemonReload" not in clean.text

    path = bot.sim.unit_path  # someone edits the unit on the host and does not reload systemd
    path.write_text(path.read_text().replace("--mem-fraction-static 0.88", "--mem-fraction-static 0.85"))
    dry = await bot.say("try 5 steps c=1 --dry-run")
    assert re.search(r"⚠ unit file: changed outside pitcrew since revision \d+ \(--mem-fraction-static 0.88 -> "
                     r"0.85\)", dry.text), dry.text
    assert "NeedDaemonReload=yes" in dry.text, dry.text

    # the try starts from the file as it is now, and keeps the hand edit
    job = await bot.wait_job(_job_id((await bot.say("try 5 steps c=1")).text))
    assert job.state == "succeeded", job.summary
    text = bot.unit_text()
    assert "--speculative-num-steps 5 " in text and "--mem-fraction-static 0.85" in text
    after = await bot.say("try 6 steps c=1 --dry-run")
    assert "changed outside pitcrew" not in after.text and "NeedDaemonReload" not in after.text


@pytest.mark.skipif(unavailable() is not None, reason=f"real systemd unavailable: {unavailable()}")
async def test_a_missing_sudo_rule_names_the_refused_command_and_changes_nothing(make_bot) -> None:
    bot = await make_bot("healthy", systemd="real", sim_opts={"sudoers": ""})
    before = bot.unit_text()
    reply = await bot.say("try 4 steps c=1")
    assert reply.text.startswith("sudo on host 'sim-gpu-1' refused `cat -- /etc/systemd/system/sglang.service` for "
                                 "user pitcrew: its sudoers rule does not allow that command, so it did not run."), \
        reply.text
    assert "docs/HOSTS.md" in reply.text
    assert await bot.core.jobs.recent(None, 10) == []  # refused before anything was queued
    assert bot.unit_text() == before
    await bot.sim.wait_ready(10)  # still serving the configuration it had


def test_the_simulated_host_installs_the_rule_pitcrew_asks_for() -> None:
    for unit in ("sglang.service", "vllm.service", "llama@2.service"):
        assert sim_sudoers_rule("pitcrew", unit) == sudoers_rule("pitcrew", unit)
