"""Fail closed and `status` for the team (issue 13): a fresh config grants nobody anything beyond
viewing; `status` shows hosts, units, configs, jobs, incidents and last results without the bot's
internals, which the admin-only `health` command shows; `status_ephemeral` answers only the asker."""

from __future__ import annotations

from typing import Any

from sqlalchemy import func, select

from bot.settings import load_settings
from services.store.models import Job

INTERNALS = ("loop lag", "database", "outbox", "429")


async def _jobs(core: Any) -> int:
    async with core.db.sessions() as s:
        return int(await s.scalar(select(func.count()).select_from(Job)) or 0)


async def test_a_fresh_config_refuses_try_from_anyone(rel_bot: Any) -> None:
    fresh = load_settings(None).policy.roles
    assert fresh == {"*": "viewer"}
    bot = await rel_bot(policy={"roles": fresh})
    for user in ("U1", "U2", "UADMIN"):
        reply = await bot.say("try 4 steps", user=user)
        assert "needs the experimenter role; you are viewer" in reply.text, reply.text
        reply = await bot.say(f"rollback {bot.sim.info['name']}", user=user)
        assert "needs the operator role" in reply.text
    assert await _jobs(bot.core) == 0
    status = await bot.say("status")  # viewers still see everything
    assert status.tables and bot.sim.info["name"] in str(status.tables[0].rows)


async def test_status_shows_the_fleet_not_the_bot_and_health_is_for_admins(rel_bot: Any) -> None:
    bot = await rel_bot(policy={"roles": {"*": "viewer", "UADM": "admin"}})
    bot.core.router.domain.health = lambda: "bot: loop lag p99 2 ms, database ok"
    status = await bot.say("status")
    cols = status.tables[0].columns
    for col in ("host", "unit", "state", "config", "job", "incidents", "last result"):
        assert col in cols
    assert "jobs: 0 running, 0 waiting" in status.text
    shown = (status.text + str(status.tables)).lower()
    assert not any(word in shown for word in INTERNALS), shown
    assert not status.ephemeral
    refused = await bot.say("health", user="U1")
    assert "needs the admin role" in refused.text
    health = await bot.say("health", user="UADM")
    assert "loop lag p99 2 ms" in health.text and health.ephemeral


async def test_status_can_answer_only_the_asker(rel_bot: Any) -> None:
    bot = await rel_bot(policy={"roles": {"*": "viewer"}, "status_ephemeral": True})
    status = await bot.say("status")
    assert status.ephemeral and status.tables
