"""Through the real router: a signed slash command from a user without the role is refused
(ephemeral, audited, nothing posted in the channel, no job), and a permitted one is answered."""

from __future__ import annotations

from typing import Any

from slack_kit import Harness

from handlers.auth import Policy
from handlers.contract import ChatMessage, Reply
from handlers.router import Domain, Router
from services.events import EventBus
from services.experiments.results import Results
from services.jobs.runner import JobRunner
from services.store.audit import AuditLog, AuditQuery
from services.store.db import Database
from services.units.revisions import Revisions


def router_dispatch(db: Database, policy: Policy) -> Any:
    built: list[Router] = []

    async def never(ctx: Any) -> Any:
        raise AssertionError("no job may run in this test")

    async def dispatch(h: Harness, msg: ChatMessage) -> Reply:
        if not built:
            audit = AuditLog(db)
            jobs = JobRunner(db, EventBus(), audit, holder="t", host_names=["gpu-1"], pipeline=never)
            domain = Domain(jobs=jobs, experiments=None, audit=audit, results=Results(db),
                            revisions=Revisions(db), host_names=["gpu-1"], outbox=h.bot.outbox)
            built.append(Router(domain, policy))
        return await built[0].dispatch(msg)

    return dispatch


async def test_unauthorized_user_is_refused_privately_and_audited(make_harness, sqlite_db: Database) -> None:
    policy = Policy(roles={"U2": "operator", "*": "viewer"})
    h: Harness = await make_harness(router_dispatch(sqlite_db, policy))
    status, _, took = await h.slash("rollback on gpu-1", user="U1", trigger="t-refuse")
    assert status == 200 and took < 3.0
    await h.fake.wait_for(lambda f: bool(f.ephemerals), timeout=10)
    (eph,) = h.fake.ephemerals
    assert eph.ephemeral_for == "U1" and eph.channel == "C1"
    assert "operator" in str(eph.blocks)
    assert h.fake.calls_to("chat.postMessage") == []
    records = await AuditLog(sqlite_db).query(AuditQuery(actions=["command"]))
    assert [(r.actor_id, r.outcome, r.command_text) for r in records] == [("U1", "refused", "rollback on gpu-1")]


async def test_permitted_command_is_answered_in_channel(make_harness, sqlite_db: Database) -> None:
    h: Harness = await make_harness(router_dispatch(sqlite_db, Policy(roles={"*": "viewer"})))
    status, _, _ = await h.slash("help", user="U1", trigger="t-help")
    assert status == 200
    await h.fake.wait_for(lambda f: bool(f.messages) or bool(f.ephemerals), timeout=10)
    shown = h.fake.messages + h.fake.ephemerals
    assert shown and "Traceback" not in str(shown[0].blocks)
    assert not h.fake.duplicates()
