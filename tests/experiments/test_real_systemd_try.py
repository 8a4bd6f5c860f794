"""What a real host adds to a try: a unit file edited by hand between two jobs, and a sudo rule that is missing.

Drift runs on both service managers; the sudo rule exists only on systemd 252 itself (the sim's supervisor runs
everything as the bot's own user).
"""

from __future__ import annotations

import asyncio
import contextlib
import re

import httpx
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


async def test_incident_1_a_stop_under_load_is_sigkilled_by_timeoutstopsec_and_is_not_a_crash(
        make_bot, systemd: str) -> None:
    """The field notes' first incident on the service manager itself: pitcrew's deploy stops a server with requests
    in flight, SGLang's drain outlives TimeoutStopSec, systemd SIGKILLs it; the job goes on, no incident opens, and
    the diagnosis of that journal is stop_timeout_sigkill, tied to pitcrew's own stop."""
    from services.diagnosis import SideEvidence, diagnose
    from services.incidents.tracking import describe_action
    from services.journal.entries import iter_entries
    from services.store import AuditQuery

    bot = await make_bot("healthy", systemd=systemd, watch=True)
    await bot.sim.wait_ready(30)
    url = bot.sim.info["server_url"]
    body = {"model": "x", "prompt": "Tell me a long story.", "max_tokens": 100_000, "stream": True, "ignore_eos": True}

    async def stream() -> None:
        with contextlib.suppress(httpx.HTTPError):
            async with httpx.AsyncClient(timeout=60) as client, \
                    client.stream("POST", f"{url}/v1/completions", json=body) as resp:
                async for _ in resp.aiter_bytes():
                    pass

    load = [asyncio.create_task(stream()) for _ in range(2)]
    await asyncio.sleep(0.5)
    job = await bot.wait_job(_job_id((await bot.say("try 4 steps c=1")).text))
    await asyncio.gather(*load)
    assert job.state == "succeeded", job.summary

    host = bot.core.hosts.get(bot.sim.info["name"])
    res = await host.run(["journalctl", "-u", "sglang.service", "-o", "json", "--no-pager"], timeout=30)
    entries = list(iter_entries(res.stdout.encode().splitlines()))
    messages = [e.message for e in entries]
    assert "sglang.service: State 'stop-sigterm' timed out. Killing." in messages
    kill = messages.index("sglang.service: Failed with result 'timeout'.")
    recs = await bot.core.audit.query(AuditQuery(host=bot.sim.info["name"], limit=50))
    assert any(r.action == "stop-timeout" for r in recs)
    actions = [{"at": r.at.isoformat(), "who": r.actor_name or r.actor_id, "action": r.action,
                "detail": describe_action(r)} for r in recs if r.action != "stop-timeout"]
    d = diagnose(entries[:kill + 2], SideEvidence.from_json({"actions": actions}), unit="sglang.service")
    assert d.cause == "stop_timeout_sigkill", d.summary
    assert d.summary.startswith("Not a crash: sglang.service was stopped by pitcrew"), d.summary
    assert not await bot.core.incidents.open_incidents(None)
