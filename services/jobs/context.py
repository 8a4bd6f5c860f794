"""What a job is while it runs: its read-only view (`JobInfo`) and the context a pipeline gets
(`JobContext`: step recording with timing and output, cancellation checkpoints)."""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass
from typing import Any

from sqlalchemy import select, update

from services.errors import JobCancelled, LeaseLost
from services.jobs.events import JobRef
from services.store import Database, Job, JobStep, utcnow


@dataclass(frozen=True)
class JobInfo:
    id: int
    kind: str
    host: str
    state: str
    requested_by: str
    requested_by_name: str
    transport: str
    channel: str
    command_text: str
    params: dict[str, Any]
    summary: str
    error: str
    result: dict[str, Any]
    created_at: Any
    started_at: Any
    finished_at: Any

    def ref(self) -> JobRef:
        return JobRef(self.id, self.kind, self.host, self.transport, self.channel, self.requested_by,
                      self.requested_by_name, self.command_text)


def job_info(j: Job) -> JobInfo:
    """The read-only view of a job row."""
    return JobInfo(j.id, j.kind, j.host, j.state, j.requested_by, j.requested_by_name, j.transport, j.channel,
                   j.command_text, dict(j.params or {}), j.summary, j.error, dict(j.result or {}),
                   j.created_at, j.started_at, j.finished_at)


class JobContext:
    """What a pipeline gets: the job, step recording, cancellation checks and progress."""

    def __init__(self, db: Database, job: JobInfo) -> None:
        self.db = db
        self.job = job
        self.steps_done: list[str] = []
        self.fence: Any = None  # the runner's `Fence` (its `lost` says why the job may no longer act)
        self.draining = False  # the bot is stopping: end at the next safe point, restoring the unit
        self.restoring = False  # putting the unit back: safe points do not interrupt that
        self.step_prefix = ""  # "takeover:" / "shutdown:" for the repair another process or a stop does

    @contextlib.asynccontextmanager
    async def step(self, name: str) -> AsyncIterator[dict[str, Any]]:
        """Record a step: its start, end, state and whatever the body puts in the yielded dict."""
        db = self.db
        async with db.session() as s:
            row = JobStep(job_id=self.job.id, name=self.step_prefix + name, state="running", started_at=utcnow())
            s.add(row)
            await s.flush()
            step_id = row.id
        detail: dict[str, Any] = {}
        state = "ok"
        try:
            yield detail
        except JobCancelled:
            state = "cancelled"
            raise
        except BaseException:
            state = "failed"
            raise
        finally:
            output = str(detail.pop("output", ""))[-20_000:]
            async with db.session() as s:
                await s.execute(update(JobStep).where(JobStep.id == step_id).values(
                    state=state, finished_at=utcnow(), output=output, detail=jsonable(detail)))
            if state == "ok":
                self.steps_done.append(self.step_prefix + name)

    async def checkpoint(self) -> None:
        """A safe point: raise `JobCancelled` if someone asked to cancel this job or the bot is stopping,
        `LeaseLost` if this process no longer holds the job's host (never while the unit is being restored)."""
        if self.restoring:
            return
        if self.fence is not None and self.fence.lost:
            raise LeaseLost(f"this bot no longer holds {self.job.host} ({self.fence.lost})")
        if self.draining:
            raise JobCancelled(f"job {self.job.id} was stopped because the bot is shutting down")
        if await self.cancel_flag():
            raise JobCancelled(f"job {self.job.id} was cancelled")

    async def cancel_requested(self) -> bool:
        """Whether long work (a benchmark) should stop now: cancelled, stopping, or the lease is lost."""
        if self.restoring:
            return False
        if self.draining or (self.fence is not None and self.fence.lost):
            return True
        return await self.cancel_flag()

    async def first_step_detail(self, step: str, key: str) -> Any:
        """`key` of the detail of this job's first step named `step` (None when there is none)."""
        async with self.db.sessions() as s:
            detail = await s.scalar(select(JobStep.detail).where(JobStep.job_id == self.job.id, JobStep.name == step)
                                    .order_by(JobStep.id).limit(1))
        return (detail or {}).get(key)

    async def cancel_flag(self) -> bool:
        """Whether someone asked to cancel this job (the database's flag)."""
        async with self.db.sessions() as s:
            return bool(await s.scalar(select(Job.cancel_requested).where(Job.id == self.job.id)))


Pipeline = Callable[[JobContext], Awaitable[tuple[str, dict[str, Any]]]]


def jsonable(d: dict[str, Any]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for k, v in d.items():
        out[k] = v if isinstance(v, str | int | float | bool | type(None) | list | dict) else str(v)
    return out
