"""The try pipeline against systemd 252 itself (the simulated host booted in namespaces), as `pitcrew` with sudo."""

from __future__ import annotations

import re

import pytest

from simhost.systemd import unavailable

pytestmark = pytest.mark.skipif(unavailable() is not None, reason=f"real systemd: {unavailable()}")


async def test_try_4_steps_on_real_systemd(make_bot) -> None:
    bot = await make_bot("healthy", systemd="real")
    reply = await bot.say("try 4 steps c=1")
    job_id = int(re.search(r"Job (\d+)", reply.text).group(1))
    job = await bot.wait_job(job_id)
    assert job.state == "succeeded", (job.summary, [d.reply.text for d in bot.messages()])
    assert "--speculative-num-steps 4 " in bot.unit_text()
