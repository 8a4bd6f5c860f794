"""The job runner: a FIFO queue per host, one job per host at a time, across bot processes.

Jobs live in the database. A worker task per host takes the oldest queued job, acquires the
lease ``host:<name>`` (so two bot processes never act on one host), keeps it alive with a
heartbeat while the pipeline runs, records every step with its timing and output, and releases
it. `cancel` stops a queued job at once and a running one at its next safe point. On start,
jobs left running by a dead process are marked interrupted — never re-run.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import socket
import time
from collections.abc import Awaitable, Callable
from typing import Any

from sqlalchemy import delete, func, select, update
from sqlalchemy.exc import SQLAlchemyError

from services.errors import (
    Conflict,
    DatabaseUnavailable,
    JobCancelled,
    NotAuthorized,
    NotFound,
    PitcrewError,
    RateLimited,
)
from services.events import EventBus
from services.jobs.context import JobContext, JobInfo, Pipeline, job_info, jsonable
from services.jobs.events import JobFinished, JobStarted
from services.store import AuditActor, AuditLog, Database, Job, JobStep, Lease, Leases, utcnow

log = logging.getLogger(__name__)

OPEN_STATES = ("awaiting_confirmation", "queued", "running")


class JobRunner:
    """Owns the per-host worker tasks and the job table's state transitions."""

    def __init__(self, db: Database, bus: EventBus, audit: AuditLog, *, holder: str, host_names: list[str],
                 pipeline: Pipeline, lease_ttl_s: float = 30.0, max_queued_per_host: int = 10,
                 poll_s: float = 1.0, describe_host: Callable[[str], Awaitable[str]] | None = None) -> None:
        self.db = db
        self.bus = bus
        self.audit = audit
        self.holder = holder
        self.hosts = list(host_names)
        self.pipeline = pipeline
        self.describe_host = describe_host
        self.leases = Leases(db, ttl_s=lease_ttl_s)
        self.max_queued = max_queued_per_host
        self.poll_s = poll_s
        self._wake: dict[str, asyncio.Event] = {h: asyncio.Event() for h in self.hosts}
        self._tasks: list[asyncio.Task[None]] = []
        self._running: dict[str, int] = {}
        self._stopping = False

    # ---- lifecycle -------------------------------------------------------------------------
    async def start(self) -> list[JobInfo]:
        """Mark jobs a dead process left running as interrupted; start one worker per host."""
        interrupted = await self.recover()
        for h in self.hosts:
            self._tasks.append(asyncio.create_task(self._worker(h), name=f"jobs:{h}"))
        return interrupted

    async def stop(self) -> None:
        self._stopping = True
        for t in self._tasks:
            t.cancel()
        for t in self._tasks:
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await t
        self._tasks.clear()

    async def recover(self) -> list[JobInfo]:
        async with self.db.sessions() as s:
            running = (await s.execute(select(Job).where(Job.state == "running"))).scalars().all()
            candidates = [job_info(j) for j in running]
        out = []
        for job in candidates:
            lease = await self.leases.get(f"host:{job.host}")
            alive = (lease is not None and lease.holder != self.holder and lease.job_id == job.id
                     and lease.expires_at > utcnow() and not self.db.is_sqlite and not _holder_dead(lease.holder))
            if alive:
                continue
            info = await self._mark_interrupted(job, free_lease=lease is not None and lease.job_id == job.id)
            if info is not None:
                out.append(info)
        return out

    async def _mark_interrupted(self, job: JobInfo, *, free_lease: bool) -> JobInfo | None:
        async with self.db.session() as s:
            res = await s.execute(update(Job).where(Job.id == job.id, Job.state == "running").values(
                state="interrupted", finished_at=utcnow(),
                error="the bot stopped while this job ran; it was not re-run"))
            if res.rowcount != 1:  # type: ignore[attr-defined]
                return None
            await s.execute(update(JobStep).where(JobStep.job_id == job.id, JobStep.state == "running")
                            .values(state="interrupted", finished_at=utcnow()))
            await self.audit.record(s, actor=AuditActor("pitcrew", "pitcrew", "internal"),
                                    action="job-interrupted", host=job.host, detail={"job": job.id})
        if free_lease:
            async with self.db.session() as s:
                await s.execute(delete(Lease).where(Lease.name == f"host:{job.host}", Lease.job_id == job.id))
        info = await self.get(job.id)
        found = ""
        if self.describe_host is not None:
            try:
                found = await asyncio.wait_for(self.describe_host(job.host), 10)
            except Exception as e:  # the report is best effort; the job is marked either way
                found = f"its state could not be read ({type(e).__name__})"
        summary = info.error + (f". Found on {job.host}: {found}" if found else "")
        await self.bus.publish(JobFinished(info.ref(), "interrupted", summary, {"host_state": found}))
        return info

    async def _reap_orphans(self, host: str, current: int) -> None:
        """We hold the host's lease: any other job still `running` there lost its process."""
        async with self.db.sessions() as s:
            rows = (await s.execute(select(Job).where(Job.host == host, Job.state == "running",
                                                      Job.id != current))).scalars().all()
            orphans = [job_info(j) for j in rows]
        for job in orphans:
            await self._mark_interrupted(job, free_lease=False)

    # ---- queries ---------------------------------------------------------------------------
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

    # ---- transitions -----------------------------------------------------------------------
    async def submit(self, *, kind: str, host: str, params: dict[str, Any], actor: AuditActor,
                     command_text: str, needs_confirmation: bool) -> JobInfo:
        if host not in self._wake:
            raise NotFound(f"unknown host {host!r}; known hosts: {', '.join(self.hosts) or 'none'}")
        async with self.db.session() as s:
            queued = await s.scalar(select(func.count()).select_from(Job).where(
                Job.host == host, Job.state.in_(OPEN_STATES)))
            if int(queued or 0) >= self.max_queued:
                raise RateLimited(f"{host} already has {queued} jobs waiting (the limit is {self.max_queued}); "
                                  "cancel one or wait")
            job = Job(kind=kind, host=host, state="awaiting_confirmation" if needs_confirmation else "queued",
                      requested_by=actor.id, requested_by_name=actor.name, transport=actor.transport,
                      channel=actor.channel, command_text=command_text, params=params, created_at=utcnow())
            s.add(job)
            await s.flush()
            await self.audit.record(s, actor=actor, action=f"job-{kind}", host=host, command_text=command_text,
                                    intent=params, detail={"job": job.id, "state": job.state})
            info = job_info(job)
        if not needs_confirmation:
            self._wake[host].set()
        return info

    async def confirm(self, job_id: int, actor: AuditActor) -> JobInfo:
        async with self.db.session() as s:
            res = await s.execute(update(Job).where(Job.id == job_id, Job.state == "awaiting_confirmation")
                                  .values(state="queued"))
            if res.rowcount != 1:  # type: ignore[attr-defined]
                job = await s.get(Job, job_id)
                if job is None:
                    raise NotFound(f"there is no job {job_id}")
                raise Conflict(f"job {job_id} is {job.state}, there is nothing to confirm")
            job = await s.get(Job, job_id)
            assert job is not None
            await self.audit.record(s, actor=actor, action="confirm", host=job.host, detail={"job": job_id})
            info = job_info(job)
        self._wake[info.host].set()
        return info

    async def pending_confirmation(self, actor_id: str, channel: str) -> JobInfo | None:
        async with self.db.sessions() as s:
            j = await s.scalar(select(Job).where(Job.state == "awaiting_confirmation", Job.requested_by == actor_id,
                                                 Job.channel == channel).order_by(Job.id.desc()).limit(1))
            return None if j is None else job_info(j)

    async def cancel(self, job_id: int, actor: AuditActor, *, may_cancel_others: bool) -> str:
        """Cancel a job; returns what happened in words."""
        job = await self.get(job_id)
        if job.requested_by != actor.id and not may_cancel_others:
            raise NotAuthorized(f"job {job_id} belongs to {job.requested_by_name or job.requested_by}; "
                                "cancelling someone else's job needs the operator role")
        async with self.db.session() as s:
            res = await s.execute(update(Job).where(Job.id == job_id, Job.state.in_(("queued",
                                                                                    "awaiting_confirmation")))
                                  .values(state="cancelled", finished_at=utcnow(), summary="cancelled before it ran"))
            if res.rowcount == 1:  # type: ignore[attr-defined]
                await self.audit.record(s, actor=actor, action="cancel", host=job.host, detail={"job": job_id})
                done = "queued"
            else:
                res = await s.execute(update(Job).where(Job.id == job_id, Job.state == "running")
                                      .values(cancel_requested=True))
                if res.rowcount != 1:  # type: ignore[attr-defined]
                    raise Conflict(f"job {job_id} has already ended ({job.state})")
                await self.audit.record(s, actor=actor, action="cancel", host=job.host,
                                        detail={"job": job_id, "running": True})
                done = "running"
        if done == "queued":
            info = await self.get(job_id)
            await self.bus.publish(JobFinished(info.ref(), "cancelled", info.summary))
            return f"job {job_id} was cancelled before it started"
        return f"job {job_id} will stop at its next safe point and restore the unit that was live before it"

    # ---- the worker ------------------------------------------------------------------------
    async def _next(self, host: str) -> JobInfo | None:
        async with self.db.sessions() as s:
            j = await s.scalar(select(Job).where(Job.host == host, Job.state == "queued")
                               .order_by(Job.id).limit(1))
            return None if j is None else job_info(j)

    async def _worker(self, host: str) -> None:
        wake = self._wake[host]
        while not self._stopping:
            try:
                job = await self._next(host)
                if job is not None and await self.leases.acquire(f"host:{host}", self.holder, job_id=job.id):
                    try:
                        await self._reap_orphans(host, job.id)
                        await self._run(job)
                    finally:
                        await self.leases.release(f"host:{host}", self.holder)
                    continue
            except asyncio.CancelledError:
                raise
            except Exception:
                log.exception("job worker for %s failed; retrying", host)
            wake.clear()
            with contextlib.suppress(TimeoutError):
                async with asyncio.timeout(self.poll_s):
                    await wake.wait()

    async def _run(self, job: JobInfo) -> None:
        async with self.db.session() as s:
            res = await s.execute(update(Job).where(Job.id == job.id, Job.state == "queued")
                                  .values(state="running", started_at=utcnow()))
            if res.rowcount != 1:  # type: ignore[attr-defined]
                return  # cancelled or taken meanwhile
        self._running[job.host] = job.id
        ctx = JobContext(self.db, job)
        heartbeat = asyncio.create_task(self._heartbeat(job.host))
        state, summary, error = "failed", "", ""
        result: dict[str, Any] = {}
        t0 = time.monotonic()
        try:
            ctx.job = job = await self.get(job.id)
            await self.bus.publish(JobStarted(job.ref()))
            summary, result = await self.pipeline(ctx)
            state = "succeeded"
        except JobCancelled as e:
            state, summary = "cancelled", e.message
            result = dict(e.fields.get("result") or {})
        except DatabaseUnavailable as e:
            log.warning("job %s stopped: the database failed under it", job.id)
            state, error = "failed", (f"the database became unavailable while this job ran ({e.message}); "
                                      "it stopped there and was not re-run — check the host with `status`")
            summary = error
        except PitcrewError as e:
            state, error, summary = "failed", e.message, e.message
            result = dict(e.fields.get("result") or {})
        except asyncio.CancelledError:
            heartbeat.cancel()
            # the bot is shutting down mid-job: say so now (the thread is told on the next delivery)
            # rather than leave it "running" until another process recovers the host
            with contextlib.suppress(Exception):
                await asyncio.wait_for(asyncio.shield(self._mark_interrupted(job, free_lease=False)), 5)
            raise
        except (OSError, SQLAlchemyError) as e:
            log.exception("job %s stopped: the database failed under it", job.id)
            state, error = "failed", (f"the database became unavailable while this job ran ({type(e).__name__}); "
                                      "it stopped there and was not re-run — check the host with `status`")
            summary = error
        except Exception as e:
            log.exception("job %s crashed", job.id)
            state, error = "failed", f"internal error ({type(e).__name__}); see the bot's log"
            summary = error
        finally:
            heartbeat.cancel()
            self._running.pop(job.host, None)
        await self._record_end(job, state, summary, error, result, round(time.monotonic() - t0, 2))
        await self.bus.publish(JobFinished(job.ref(), state, summary, result))

    async def _record_end(self, job: JobInfo, state: str, summary: str, error: str, result: dict[str, Any],
                          seconds: float, *, give_up_after_s: float = 600.0) -> None:
        """Write a job's final state; while the database is away, retry (a job must never stay `running`)."""
        delay, t_end = 0.25, time.monotonic() + give_up_after_s
        while True:
            try:
                async with self.db.session() as s:
                    await s.execute(update(Job).where(Job.id == job.id).values(
                        state=state, summary=summary, error=error, result=jsonable(result), finished_at=utcnow()))
                    await self.audit.record(s, actor=AuditActor("pitcrew", "pitcrew", "internal"),
                                            action=f"job-{state}", host=job.host,
                                            detail={"job": job.id, "seconds": seconds}, outcome=state)
                return
            except (DatabaseUnavailable, OSError, SQLAlchemyError) as e:
                if time.monotonic() > t_end:
                    raise
                log.warning("could not record the end of job %s (%s); retrying in %.1f s", job.id,
                            type(e).__name__, delay)
                await asyncio.sleep(delay)
                delay = min(delay * 2, 5.0)

    async def _heartbeat(self, host: str) -> None:
        interval = max(self.leases.ttl_s / 3, 0.05)
        while True:
            await asyncio.sleep(interval)
            try:
                if not await self.leases.renew(f"host:{host}", self.holder):
                    log.error("lost the lease on %s while a job ran", host)
            except Exception:
                log.exception("lease heartbeat failed for %s", host)

    def running_job(self, host: str) -> int | None:
        return self._running.get(host)

    def wake(self, host: str) -> None:
        if host in self._wake:
            self._wake[host].set()


def _holder_dead(holder: str) -> bool:
    """True when a lease holder (``hostname:pid:token``) was a process on this machine that is gone,
    or an earlier process with our own pid (a restarted container)."""
    parts = holder.split(":")
    if len(parts) != 3 or parts[0] != socket.gethostname() or not parts[1].isdigit():
        return False
    pid = int(parts[1])
    if pid == os.getpid():
        return True
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    except OSError:
        return False
    return False
