"""Reading the job queue: a job, the open ones, the recent ones, a job's place in its host's queue and a time
estimate from past runs, the job waiting for someone's confirmation. `JobRunner` is one of these."""

from __future__ import annotations

from typing import Any

from sqlalchemy import func, select

from services.errors import NotFound
from services.jobs.context import JobInfo, job_info
from services.store import Database, Job, JobStep

OPEN_STATES = ("awaiting_confirmation", "queued", "running")


class JobReads:
    """Read-only queries over the job table."""

    db: Database

    async def get(self, job_id: int) -> JobInfo:
        async with self.db.sessions() as s:
            j = await s.get(Job, job_id)
        if j is None:
            raise NotFound(f"there is no job {job_id}")
        return job_info(j)

    async def queue(self, host: str | None = None) -> list[JobInfo]:
        async with self.db.sessions() as s:
            stmt = select(Job).where(Job.state.in_(OPEN_STATES))
            if host:
                stmt = stmt.where(Job.host == host)
            return [job_info(j) for j in (await s.execute(stmt.order_by(Job.id))).scalars().all()]

    async def recent(self, host: str | None = None, limit: int = 10) -> list[JobInfo]:
        async with self.db.sessions() as s:
            stmt = select(Job)
            if host:
                stmt = stmt.where(Job.host == host)
            rows = (await s.execute(stmt.order_by(Job.id.desc()).limit(limit))).scalars().all()
            return [job_info(j) for j in rows]

    async def position(self, job_id: int) -> int:
        """How many jobs run before this one on its host (0 = next)."""
        job = await self.get(job_id)
        async with self.db.sessions() as s:
            n = await s.scalar(select(func.count()).select_from(Job).where(
                Job.host == job.host, Job.state.in_(("queued", "running")), Job.id < job_id))
        return int(n or 0)

    async def eta_s(self, host: str, kind: str, position: int) -> float | None:
        """Seconds until this job would finish: past durations of that kind on that host."""
        async with self.db.sessions() as s:
            rows = (await s.execute(select(Job.kind, Job.started_at, Job.finished_at).where(
                Job.host == host, Job.state == "succeeded", Job.started_at.is_not(None))
                .order_by(Job.id.desc()).limit(20))).all()
        same = [(f - st).total_seconds() for k, st, f in rows if k == kind and f and st]
        if not same:
            return None
        typical: float = sorted(same)[len(same) // 2]
        return typical * (position + 1)

    async def step_seconds(self, host: str, names: tuple[str, ...], limit: int = 200) -> dict[str, float]:
        """The median duration of each named step (``stop``, ``start``, ``benchmark`` …) of this host's jobs, over
        its last `limit` finished steps; a name with no finished step is absent."""
        async with self.db.sessions() as s:
            rows = (await s.execute(select(JobStep.name, JobStep.started_at, JobStep.finished_at)
                                    .join(Job, Job.id == JobStep.job_id)
                                    .where(Job.host == host, JobStep.state == "ok", JobStep.name.in_(names),
                                           JobStep.finished_at.is_not(None))
                                    .order_by(JobStep.id.desc()).limit(limit))).all()
        by_name: dict[str, list[float]] = {}
        for name, started, finished in rows:
            by_name.setdefault(name, []).append((finished - started).total_seconds())
        return {n: sorted(v)[len(v) // 2] for n, v in by_name.items()}

    async def step_details(self, job_id: int, name: str) -> list[dict[str, Any]]:
        """The details of a job's finished steps called `name`, in order (a tune's measured points)."""
        async with self.db.sessions() as s:
            rows = (await s.execute(select(JobStep.detail).where(JobStep.job_id == job_id, JobStep.name == name,
                                                                JobStep.state == "ok")
                                    .order_by(JobStep.id))).scalars().all()
        return [dict(d or {}) for d in rows]

    async def pending_confirmation(self, actor_id: str, channel: str) -> JobInfo | None:
        async with self.db.sessions() as s:
            j = await s.scalar(select(Job).where(Job.state == "awaiting_confirmation", Job.requested_by == actor_id,
                                                 Job.channel == channel).order_by(Job.id.desc()).limit(1))
            return None if j is None else job_info(j)
