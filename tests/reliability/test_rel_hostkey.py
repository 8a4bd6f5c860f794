"""SSH host key changed on a known host (issue 8 item 10): pitcrew refuses, says so in chat, and does
nothing to the host; once the operator pins the new key (rewrites the host's known_hosts entry),
it works again."""

from __future__ import annotations

import shutil
from contextlib import AsyncExitStack
from pathlib import Path

from rel_kit import TINY_BENCH, host_entry, read_journal, systemd_unit_sequence
from support.job_wait import JobEnds

from bot.app import build_core
from bot.settings import load_settings
from handlers.contract import Actor, ChatMessage
from services.store.audit import AuditQuery


async def test_changed_host_key_is_refused_said_and_nothing_done(tmp_path: Path) -> None:
    from simhost.host import SimHost
    from simhost.ssh import rotate_host_key, start_ssh_server

    async with SimHost(tmp_path / "sim", time_scale=0.002) as sim, AsyncExitStack() as stack:
        pinned = tmp_path / "known_hosts.pinned"
        shutil.copy(sim.info["known_hosts"], pinned)
        entry = {**host_entry(sim.info), "known_hosts": str(pinned)}
        settings = load_settings(None, db={"url": f"sqlite+aiosqlite:///{tmp_path / 'bot.db'}"}, hosts=[entry],
                                 bench=TINY_BENCH, policy={"confirm": [], "roles": {"*": "admin"}})
        core = await build_core(settings, stack, transport="test", time_scale=0.002, watch_journals=False,
                                start_scheduler=False)
        name = sim.info["name"]
        ends = JobEnds(core)

        async def say(text: str) -> str:
            r = await core.router.dispatch(ChatMessage(text=text, actor=Actor("U1", "alice", "test"), channel="C1"))
            return f"{r.text}\n{r.code or ''}\n{r.tables!r}"

        assert "active" in await say(f"status {name}")
        first = int((await say("try 4 steps")).split()[1])  # leaves a known-good revision to roll back to
        assert (await ends.wait(first, 30, not_ended=("queued", "running"))).state == "succeeded"

        # the host comes back with a new host key on the same address and port
        port = sim._ssh.port
        await sim._ssh.close()
        rotate_host_key(sim.root)
        sim._ssh = await start_ssh_server(sim.root, env={"SIMHOST_DIR": str(sim.root), "LANG": "C.UTF-8"},
                                          path_prefix=[sim.root / "bin"], port=port)
        unit_before = sim.unit_path.read_text()
        stops_before = systemd_unit_sequence(read_journal(sim.root)).count("Stopping")

        for text in (f"status {name}", "try 5 steps", f"logs {name}"):
            reply = await say(text)
            assert "host key" in reply and "changed" in reply, (text, reply)
            assert "Job" not in reply
        # a rollback needs no preview, so it queues; its job fails at the first SSH call, saying why
        job_id = int((await say(f"rollback {name}")).split()[1])
        job = await ends.wait(job_id, 30, not_ended=("queued", "running"))
        assert job.state == "failed" and "host key" in job.summary and "changed" in job.summary, job.summary
        assert sim.unit_path.read_text() == unit_before
        assert systemd_unit_sequence(read_journal(sim.root)).count("Stopping") == stops_before
        changes = await core.audit.query(AuditQuery(actions=("deploy", "stop", "start", "rollback")))
        assert [e.detail.get("job") for e in changes] == [first] * 3  # only the first try's

        # the operator checks and pins the new key: pitcrew connects again
        shutil.copy(sim._ssh.known_hosts, pinned)
        assert "active" in await say(f"status {name}")
