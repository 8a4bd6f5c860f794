"""Jobs of one host are queued in the order of their ids, on both engines: a worker never sees a later job while an
earlier one's submission is still open. On PostgreSQL a job's id is drawn at its INSERT and a concurrent submission
could commit before an earlier one: a worker then ran job 2 before job 1 (`test_rel_overlap` on PostgreSQL, a
fresh-clone run of session 12). The same lock keeps the queue's limit exact under concurrent submissions."""

from __future__ import annotations

import asyncio
from typing import Any

from sqlalchemy import select

from services.errors import RateLimited
from services.events import EventBus
from services.jobs.runner import JobRunner
from services.store import AuditActor, AuditLog, Job
from services.store.db import Database

ALICE = AuditActor(id="U1", name="alice", transport="test", channel="C1")


class SlowAudit(AuditLog):
    """The audit log, holding the first `job-try` submission's transaction open for a moment (after its INSERT)."""

    def __init__(self, db: Database) -> None:
        super().__init__(db)
        self.held = asyncio.Event()
        self.release = asyncio.Event()

    async def record(self, s: Any, **kw: Any) -> Any:
        out = await super().record(s, **kw)
        if kw.get("action") == "job-try" and not self.held.is_set():
            self.held.set()
            await self.release.wait()
        return out


def _runner(db: Database, audit: AuditLog, **kw: Any) -> JobRunner:
    return JobRunner(db, EventBus(), audit, holder="bot-a", host_names=["gpu-1"],
                     pipeline=lambda ctx: asyncio.sleep(0), **kw)  # type: ignore[arg-type,return-value]


async def _queued(db: Database) -> list[int]:
    async with db.sessions() as s:
        return list((await s.scalars(select(Job.id).where(Job.state == "queued").order_by(Job.id))).all())


async def test_a_later_submission_is_not_queued_before_an_earlier_open_one(db: Database) -> None:
    audit = SlowAudit(db)
    runner = _runner(db, audit)

    def submit(text: str) -> asyncio.Task[Any]:
        return asyncio.create_task(runner.submit(kind="try", host="gpu-1", params={}, actor=ALICE,
                                                 command_text=text, needs_confirmation=False))

    first = submit("try 4 steps")
    await asyncio.wait_for(audit.held.wait(), 10)  # the first job's row is written, its transaction open
    second = submit("try 5 steps")
    await asyncio.sleep(0.5)
    seen_meanwhile = await _queued(db)  # what a worker would pick from now
    audit.release.set()
    a, b = await asyncio.gather(first, second)
    assert a.id < b.id
    assert seen_meanwhile in ([], [a.id]), seen_meanwhile  # never the second alone
    assert await _queued(db) == [a.id, b.id]


async def test_concurrent_submissions_respect_the_queue_limit(db: Database) -> None:
    n = 6
    runner = _runner(db, AuditLog(db), max_queued_per_host=3)
    got = await asyncio.gather(*(runner.submit(kind="try", host="gpu-1", params={}, actor=ALICE,
                                               command_text=f"try {i} steps", needs_confirmation=False)
                                 for i in range(n)), return_exceptions=True)
    assert sum(isinstance(g, RateLimited) for g in got) == n - 3, got
    assert len(await _queued(db)) == 3
