"""Issue 14 item 3: the whole experiment path — preview, preflight, deploy, start followed through the journal,
benchmark, results — once over a real OpenSSH sshd (with systemd's own journalctl where systemd-journal-remote is
installed), not only the host contract suite."""

from __future__ import annotations

import re

import pytest

from simhost.openssh import sshd_path

pytestmark = [pytest.mark.slow,
              pytest.mark.skipif(sshd_path() is None, reason="no OpenSSH sshd here (CI installs openssh-server)")]


async def test_try_4_steps_over_openssh_deploys_benchmarks_and_reports(make_bot) -> None:
    bot = await make_bot("healthy", via="openssh")
    assert bot.core.settings.hosts[0].port != bot.sim.info["ssh_port"]  # really the sshd, not the asyncssh server
    reply = await bot.say("try 4 steps c=1")
    job_id = int(re.search(r"Job (\d+)", reply.text).group(1))
    job = await bot.wait_job(job_id)
    assert job.state == "succeeded", job.summary
    assert "--speculative-num-steps 4" in bot.unit_text()
    tables = bot.messages(lambda d: d.thread_of == f"job:{job_id}" and d.reply.tables)
    assert len(tables) == 1
    row = dict(zip(tables[0].reply.tables[0].columns, tables[0].reply.tables[0].rows[0], strict=True))
    assert float(row["decode tok/s/req"].split()[0].replace(",", "")) > 100
    # the start was followed through the journal over sshd: the ready line's capacity was recorded
    assert job.result.get("capacity"), job.result
