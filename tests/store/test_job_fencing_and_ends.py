"""Issue 13 at the unit level, on both engines: a job's host actions are fenced by its lease token; a job's
end state and end message commit together; a failing event subscriber is retried, then audited."""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from typing import Any

import pytest
from sqlalchemy import select

from services.errors import DatabaseUnavailable, LeaseLost, PitcrewError
from services.events import EventBus
from services.hosts import fenced, guarded
from services.hosts.contract import CommandResult, HostSpec
from services.jobs import JobFinished, JobRef
from services.jobs.lease_fence import Fence
from services.jobs.runner import JobRunner
from services.retry import Backoff
from services.store import AuditActor, AuditLog, AuditQuery, Job, Leases, OutboxDraft, OutboxStore
from services.store.db import Database
from services.store.models import Lease, OutboxMessage


class CountingHost:
    """A host double that only counts the actions that reach it."""

    def __init__(self) -> None:
        self.calls: list[str] = []
        self.spec = HostSpec(name="gpu-1", address="127.0.0.1", port=22, user="u", client_key=None,  # type: ignore[arg-type]
                             known_hosts=None, unit="sglang.service", unit_dir="/etc", server_url="http://x")  # type: ignore[arg-type]

    async def run(self, argv: Sequence[str], **_: Any) -> CommandResult:
        self.calls.append(" ".join(argv))
        return CommandResult(tuple(argv), 0, "", "", 0.0)

    async def read_file(self, path: str, **_: Any) -> str:
        self.calls.append(f"read {path}")
        return ""


async def test_a_host_action_needs_the_lease_token_by_the_database_clock(db: Database) -> None:
    leases = Leases(db, ttl_s=0.6)
    token = await leases.take("host:gpu-1", "bot-a", job_id=1)
    assert token is not None
    inner = CountingHost()
    host: Any = fenced(inner)  # type: ignore[arg-type]
    fence = Fence(leases, "gpu-1", "bot-a", token)
    with guarded(fence):
        await host.run(["systemctl", "stop", "x"], timeout=5)  # holds the lease: goes through
        await asyncio.sleep(0.7)  # no heartbeat: the lease lapses and another process takes the host
        assert await leases.take("host:gpu-1", "bot-b", job_id=2) is not None
        with pytest.raises(LeaseLost):
            await host.run(["systemctl", "start", "x"], timeout=5)
        with pytest.raises(LeaseLost):  # once lost, refused without asking again
            await host.read_file("/etc/x", timeout=5)
    assert inner.calls == ["systemctl stop x"]
    await host.run(["true"], timeout=5)  # outside a job's guard the wrapper adds nothing
    # the same holder re-acquiring gets a new token: the old one stays refused
    again = await leases.take("host:gpu-1", "bot-b", job_id=3)
    assert again is not None and not await leases.check("host:gpu-1", "bot-b", token)


async def test_a_lost_lease_says_what_the_database_has_taken_over_gone_or_lapsing(db: Database) -> None:
    leases = Leases(db, ttl_s=0.6)
    token = await leases.take("host:gpu-1", "bot-a", job_id=1)
    assert token is not None
    late = Fence(leases, "gpu-1", "bot-a", token)
    await asyncio.sleep(0.45)  # no heartbeat (one every 0.1 s would renew it): it lapses within the 0.2 s margin
    with pytest.raises(LeaseLost, match=r"lapses within its 0\.2 s margin: last confirmed \d+\.\d s ago, renewed "
                                        r"every 0\.1 s"):
        await late()
    await asyncio.sleep(0.2)
    assert await leases.take("host:gpu-1", "bot-b", job_id=2) is not None
    with pytest.raises(LeaseLost, match=r"the lease was taken over by bot-b \(last confirmed \d+ s ago\)"):
        await Fence(leases, "gpu-1", "bot-a", token)()
    await leases.release("host:gpu-1", "bot-b")
    with pytest.raises(LeaseLost, match=r"the lease is gone from the database"):
        await Fence(leases, "gpu-1", "bot-a", token)()


async def _job(db: Database) -> int:
    async with db.session() as s:
        job = Job(kind="try", host="gpu-1", state="running", requested_by="U1", requested_by_name="alice",
                  transport="test", channel="C1", command_text="try 4 steps", params={})
        s.add(job)
        await s.flush()
        return int(job.id)


async def test_end_state_and_end_message_commit_together(db: Database, monkeypatch: pytest.MonkeyPatch) -> None:
    async def end_messages(e: JobFinished) -> list[OutboxDraft]:
        return [OutboxDraft("test", f"job:{e.job.id}:end", e.job.channel, {"text": e.summary}, f"job:{e.job.id}")]

    runner = JobRunner(db, EventBus(), AuditLog(db), holder="bot-a", host_names=["gpu-1"],
                       pipeline=lambda ctx: asyncio.sleep(0), end_messages=end_messages)  # type: ignore[arg-type,return-value]
    job_id = await _job(db)
    real = OutboxStore.enqueue_in
    failures = {"left": 2}
    seen_states: list[str] = []

    async def flaky(self: OutboxStore, s: Any, draft: OutboxDraft) -> None:
        if failures["left"]:
            failures["left"] -= 1
            raise DatabaseUnavailable("the database is not answering")  # after the state UPDATE, same transaction
        await real(self, s, draft)

    monkeypatch.setattr(OutboxStore, "enqueue_in", flaky)

    async def watch() -> None:
        while True:
            async with db.sessions() as s:
                state = await s.scalar(select(Job.state).where(Job.id == job_id))
                told = await s.scalar(select(OutboxMessage.id).where(OutboxMessage.key == f"job:{job_id}:end"))
            seen_states.append(f"{state}:{'told' if told else 'silent'}")
            await asyncio.sleep(0.01)

    watcher = asyncio.create_task(watch())
    info = await runner.get(job_id)
    assert await runner._finish(info, "failed", "it broke", "it broke", {}, 1.0)  # noqa: SLF001
    # ended here, not left to the loop's teardown: cancelled and not awaited, it could still be in a query when the
    # `db` fixture closed the database, and a fresh-clone run (session 10) hung in the loop's teardown, which waits
    # for the tasks a test leaves (pytest-timeout's 120 s)
    watcher.cancel()
    await asyncio.gather(watcher, return_exceptions=True)
    assert failures["left"] == 0
    async with db.sessions() as s:
        assert await s.scalar(select(Job.state).where(Job.id == job_id)) == "failed"
        msgs = (await s.execute(select(OutboxMessage).where(OutboxMessage.key == f"job:{job_id}:end"))).scalars().all()
    assert [m.payload["text"] for m in msgs] == ["it broke"]
    # never ended without its message (each failed attempt rolled back the state too)
    assert "failed:silent" not in seen_states and "running:told" not in seen_states
    # a job already ended elsewhere is left alone and not announced twice
    assert not await runner._finish(info, "interrupted", "x", "x", {}, None)  # noqa: SLF001


async def test_a_failing_subscriber_is_retried_then_recorded_in_the_audit_log(db: Database) -> None:
    audit = AuditLog(db)
    bus = EventBus(retries=2, backoff=Backoff(initial_s=0.01, max_s=0.01, jitter=0.0))

    async def on_failure(event: object, handler: str, error: BaseException) -> None:
        await audit.record(None, actor=AuditActor("pitcrew", "pitcrew", "internal"), action="event-failed",
                           detail={"event": type(event).__name__, "subscriber": handler, "error": str(error)},
                           outcome="error")

    bus.on_failure = on_failure
    calls = {"flaky": 0, "broken": 0, "after": 0}

    async def flaky(e: JobFinished) -> None:
        calls["flaky"] += 1
        if calls["flaky"] == 1:
            raise PitcrewError("once")

    async def broken(e: JobFinished) -> None:
        calls["broken"] += 1
        raise PitcrewError("always")

    async def after(e: JobFinished) -> None:
        calls["after"] += 1

    for h in (flaky, broken, after):
        bus.subscribe(JobFinished, h)
    await bus.publish(JobFinished(JobRef(1, "try", "gpu-1", "test", "C1", "U1", "alice", "try"), "failed", "x"))
    assert calls == {"flaky": 2, "broken": 3, "after": 1}
    recs = await audit.query(AuditQuery(actions=("event-failed",), limit=10))
    assert len(recs) == 1 and recs[0].outcome == "error" and "broken" in str(recs[0].detail["subscriber"])
    assert bus.failures == 1


async def test_a_stop_right_after_a_job_ended_leaves_no_host_lease_behind(
        db: Database, monkeypatch: pytest.MonkeyPatch) -> None:
    # the job's end commits, then its worker releases the host's lease; a stop in between cancelled the release and
    # left the lease held until its TTL lapsed, keeping every other replica off the host (`test_rel_orphans`, session 9)
    real_release = Leases.release
    ended = asyncio.Event()

    async def slow_release(self: Leases, name: str, holder: str) -> None:
        ended.set()
        await asyncio.sleep(0.3)  # a loaded database
        await real_release(self, name, holder)

    async def done(ctx: object) -> tuple[str, dict[str, Any]]:
        return "done", {}

    monkeypatch.setattr(Leases, "release", slow_release)
    runner = JobRunner(db, EventBus(), AuditLog(db), holder="bot-a", host_names=["gpu-1"], pipeline=done)  # type: ignore[arg-type]
    await runner.start()
    job = await runner.submit(kind="try", host="gpu-1", params={}, actor=AuditActor("U1", "alice"),
                              command_text="try 4 steps", needs_confirmation=False)
    async with asyncio.timeout(10):
        await ended.wait()
    await runner.stop()
    async with db.sessions() as s:
        assert await s.scalar(select(Job.state).where(Job.id == job.id)) == "succeeded"
        assert (await s.execute(select(Lease.name))).scalars().all() == []
