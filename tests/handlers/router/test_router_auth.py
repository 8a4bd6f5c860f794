"""The router: every bad input gets a clear message and changes nothing; refusals are audited."""

from __future__ import annotations

from typing import Any

import pytest
from router_kit import make_router, msg

from handlers.auth import Policy
from handlers.contract import Actor, ChatMessage
from services.store.audit import AuditLog, AuditQuery
from services.store.db import Database
from services.store.models import Job

ADMIN = Policy(roles={"*": "admin"})  # roles fail closed; these tests act as an admin


async def _jobs(db: Database) -> int:
    from sqlalchemy import func, select

    async with db.sessions() as s:
        return int(await s.scalar(select(func.count()).select_from(Job)) or 0)


async def test_unknown_command_suggests_and_changes_nothing(db: Database) -> None:
    router, outbox, _ = await make_router(db, ADMIN)
    reply = await router.dispatch(msg("tyr 10 steps on gpu-1"))
    assert "did you mean" in reply.text.lower() and "try" in reply.text
    assert reply.tone == "warning" and reply.ephemeral
    assert outbox.sent == [] and await _jobs(db) == 0
    (rec,) = await AuditLog(db).query(AuditQuery(actions=["command"]))
    assert rec.outcome == "rejected" and rec.command_text == "tyr 10 steps on gpu-1"


@pytest.mark.parametrize("text", ["try steps=10; rm -rf / on gpu-1", "try steps=$(reboot) on gpu-1",
                                  "try steps=99 on gpu-1", "try bogusflag=1 on gpu-1", "status gpu-1`id`",
                                  "try steps=10 on ../etc"])
async def test_bad_values_are_refused_before_anything_runs(db: Database, text: str) -> None:
    router, outbox, _ = await make_router(db, ADMIN)
    reply = await router.dispatch(msg(text))
    assert reply.tone in ("warning", "error")
    assert "Traceback" not in reply.text and "reference" not in reply.text
    assert outbox.sent == [] and await _jobs(db) == 0


async def test_unauthorized_user_is_refused_with_the_role_needed_and_audited(db: Database) -> None:
    policy = Policy(roles={"*": "viewer", "U9": "experimenter"})
    router, outbox, _ = await make_router(db, policy)
    reply = await router.dispatch(msg("rollback gpu-1", user="U1"))
    assert "operator" in reply.text and "viewer" in reply.text
    reply = await router.dispatch(msg("try 10 steps on gpu-1", user="U1"))
    assert "experimenter" in reply.text
    assert outbox.sent == [] and await _jobs(db) == 0
    refused = [r for r in await AuditLog(db).query() if r.outcome == "refused"]
    assert [r.actor_id for r in refused] == ["U1", "U1"]


async def test_group_role_and_channel_host_limits(db: Database) -> None:
    policy = Policy(roles={"*": "viewer", "sre": "operator"}, channel_hosts={"C2": ["gpu-2"]})
    router, outbox, _ = await make_router(db, policy)
    m = ChatMessage(text="kill-stale gpu-1 1234", actor=Actor("U5", "eve", "slack", ("sre",)), channel="C2")
    reply = await router.dispatch(m)
    assert "cannot be driven from this channel" in reply.text
    assert outbox.sent == []


async def test_unknown_host_gets_did_you_mean(db: Database) -> None:
    router, _, _ = await make_router(db, ADMIN)
    reply = await router.dispatch(msg("status gpu-3"))
    assert "unknown host" in reply.text and ("gpu-1" in reply.text or "gpu-2" in reply.text)


async def test_unexpected_failure_answers_with_a_reference_not_a_traceback(db: Database, caplog: Any) -> None:
    router, _, _ = await make_router(db, ADMIN)
    reply = await router.dispatch(msg("try 10 steps on gpu-1"))
    assert "reference" in reply.text
    assert "secret-internal-detail" not in reply.text and "Traceback" not in reply.text
    ref = reply.text.split("reference ")[1].split(")")[0]
    assert any(ref in r.getMessage() for r in caplog.records)


async def test_rate_limit_per_user(db: Database) -> None:
    router, _, _ = await make_router(db, Policy(roles={"*": "admin"}, commands_per_minute=3))
    for _ in range(3):
        assert "slow down" not in (await router.dispatch(msg("queue"))).text
    reply = await router.dispatch(msg("queue"))
    assert "slow down" in reply.text
    assert "slow down" not in (await router.dispatch(msg("queue", user="U2"))).text


async def test_help_comes_from_the_schema(db: Database) -> None:
    router, _, _ = await make_router(db, ADMIN)
    reply = await router.dispatch(msg("help"))
    for verb in ("try", "sweep", "bench", "rollback", "status"):
        assert verb in reply.text
    flags = await router.dispatch(msg("help flags"))
    assert "--speculative-num-steps" in flags.text
