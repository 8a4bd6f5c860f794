"""The chat command `doctor [host]`: admins only, the host checks' lines with their fixes, the set-up page linked."""

from __future__ import annotations

import pytest

from handlers.contract import Actor
from simhost.systemd import unavailable

ADMIN = Actor("UADM", "root-admin", "test")
VIEWER = Actor("UVIEW", "bob", "test")


async def test_doctor_in_chat_is_for_admins_and_answers_with_the_checks(make_bot, systemd: str) -> None:
    bot = await make_bot("healthy", systemd=systemd, policy={"roles": {"*": "viewer", "UADM": "admin"}})
    await bot.sim.wait_ready(30)
    refused = await bot.say("doctor", user=VIEWER)
    assert "needs the admin role" in refused.text, refused.text
    reply = await bot.say("doctor", user=ADMIN)
    assert reply.text.startswith("pitcrew doctor · 1 host · ") and "docs/HOSTS.md" in reply.text, reply.text
    assert reply.ephemeral and reply.code is not None
    for check in ("ssh", "unit", "engine", "flags", "sudo", "journal", "gpu", "disk", "health"):
        assert f" {check}: " in reply.code, reply.code
    assert "✓ health:" in reply.code and "  ✗ " not in reply.code and "no ✗" in reply.text, reply.code
    named = await bot.say("doctor sim-gpu-1", user=ADMIN)
    assert named.text.startswith("pitcrew doctor · 1 host"), named.text
    unknown = await bot.say("doctor gpu-9", user=ADMIN)
    assert "unknown host 'gpu-9'" in unknown.text, unknown.text


@pytest.mark.skipif(unavailable() is not None, reason=f"real systemd unavailable: {unavailable()}")
async def test_doctor_in_chat_shows_the_missing_sudo_rule_and_the_rule_to_install(make_bot) -> None:
    bot = await make_bot("healthy", systemd="real", sim_opts={"sudoers": ""},
                         policy={"roles": {"*": "viewer", "UADM": "admin"}})
    reply = await bot.say("doctor", user=ADMIN)
    assert reply.tone == "warning" and "✗ on sim-gpu-1" in reply.text, reply.text
    assert reply.code is not None and "✗ sudo: the rule for pitcrew lacks 14 of the 14" in reply.code, reply.code
    assert "pitcrew ALL=(root) NOPASSWD: PITCREW_SGLANG_SERVICE_CTL" in reply.code
    assert len(reply.code) <= 3000
