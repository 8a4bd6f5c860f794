"""The job runner: a FIFO queue per host, one job per host at a time, across bot processes.

Jobs live in the database. A worker task per host takes the oldest queued job, acquires the
lease ``host:<name>`` with a fresh fencing token (so two bot processes never act on one host),
keeps it alive with a heartbeat while the pipeline runs, records every step with its timing and
output, and releases it. Every host action of the pipeline first checks, in the database and by
the database's clock, that the lease still carries the job's token (`services.hosts.fence`); a job
whose lease is lost stops before its next host action. Any replica's worker takes over a job whose
lease lapsed (its process died or lost its database link): it takes the lease, reads the host,
restores the last known-good revision when the unit does not serve, and marks the job
interrupted — never re-run. A job's end state and its end messages (outbox rows) are written in one
transaction. `cancel` stops a queued job at once and a running one at its next safe point; `stop`
(a graceful shutdown) stops taking jobs, lets the current job reach its next safe point within
`drain_s` and restore the revision that was live before it, and past that bound cuts it and
restores that revision itself (see docs/RELIABILITY.md).

Reading the queue is `services.jobs.queries`, the lease guard `services.jobs.lease_fence`. What stays here is
over 400 lines on purpose: the worker, the takeover of a lapsed job, the graceful stop and the end write are
the state transitions of one job row under one lease, and their order is the guarantee.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

from sqlalchemy import delete, func, select, update
from sqlalchemy.exc import SQLAlchemyError

from services.errors import (
    Conflict,
    DatabaseUnavailable,
    JobCancelled,
    LeaseLost,
    NotAuthorized,
    NotFound,
    PitcrewError,
    RateLimited,
)
from services.events import EventBus
from services.hosts import guarded
from services.jobs.context import JobContext, JobInfo, Pipeline, job_info, jsonable
from services.jobs.events import JobFinished, JobStarted
from services.jobs.lease_fence import Fence, holder_dead
from services.jobs.queries import OPEN_STATES, JobReads
from services.retry import Backoff, retry_async
from services.store import (
    SYSTEM,
    AuditActor,
    AuditLog,
    Database,
    Job,
    JobStep,
    Lease,
    Leases,
    OutboxDraft,
    OutboxStore,
    utcnow,
)

log = logging.getLogger(__name__)

DB_ERRORS = (DatabaseUnavailable, OSError, SQLAlchemyError)
END_BACKOFF = Backoff(initial_s=0.25, max_s=5.0)  # a job's end is retried until the database is back
_WORKER_EXIT_S = 5.0  # on stop, how long an idle worker may take to end its turn (a lease release) before it is cut

# What the composition root may plug in: the messages that announce a job's end (written with its end
# state), and what to do on a host after a job was cut off (read it; restore it if it does not serve).
EndMessages = Callable[[JobFinished], Awaitable[list[OutboxDraft]]]
HostRecovery = Callable[[JobContext], Awaitable[str]]


@dataclass
class _Active:
    job: JobInfo
    ctx: JobContext
    fence: Fence
    task: asyncio.Task[None] | None = None


# How long a job's host lease lasts without a renewal (the heartbeat renews it six times a TTL: `Fence.heartbeat_s`)
LEASE_TTL_S = 30.0


class JobRunner(JobReads):
    """Owns the per-host worker tasks and the job table's state transitions."""

    def __init__(self, db: Database, bus: EventBus, audit: AuditLog, *, holder: str, host_names: list[str],
                 pipeline: Pipeline, lease_ttl_s: float = LEASE_TTL_S, max_queued_per_host: int = 10,
                 poll_s: float = 1.0, describe_host: Callable[[str], Awaitable[str]] | None = None,
                 recover_host: HostRecovery | None = None, restore_before: HostRecovery | None = None,
                 end_messages: EndMessages | None = None, drain_s: float = 90.0,
                 restore_s: float = 600.0) -> None:
        self.db = db
        self.bus = bus
        self.audit = audit
        self.holder = holder
        self.hosts = list(host_names)
        self.pipeline = pipeline
        self.describe_host = describe_host
        self.recover_host = recover_host
        self.restore_before = restore_before
        self.end_messages = end_messages
        self.outbox = OutboxStore(db)
        self.leases = Leases(db, ttl_s=lease_ttl_s)
        self.max_queued = max_queued_per_host
        self.poll_s = poll_s
        self.drain_s = drain_s
        self.restore_s = restore_s
        self._wake: dict[str, asyncio.Event] = {h: asyncio.Event() for h in self.hosts}
        self._tasks: dict[str, asyncio.Task[None]] = {}
        self._active: dict[str, _Active] = {}
        self._stopping = False
        self._draining = False

    # ---- lifecycle -------------------------------------------------------------------------
    async def start(self) -> list[JobInfo]:
        """Take over jobs a dead process left running (marked interrupted); start one worker per host."""
        interrupted = await self.recover()
        for h in self.hosts:
            self._tasks[h] = asyncio.create_task(self._worker(h), name=f"jobs:{h}")
        return interrupted

    async def stop(self, *, drain_s: float | None = None) -> None:
        """Graceful stop: take no new job; each running job stops at its next safe point (restoring the
        revision that was live before it) within `drain_s`; past that it is cut and that revision restored."""
        bound = self.drain_s if drain_s is None else drain_s
        self._stopping = True
        for w in self._wake.values():
            w.set()
        if self._active:
            self._draining = True
            for a in self._active.values():
                a.ctx.draining = True
                log.warning("stopping: job %s on %s stops at its next safe point (bound %.0f s)", a.job.id,
                            a.job.host, bound)
            busy = [self._tasks[h] for h in self._active if h in self._tasks]
            if busy:
                await asyncio.wait(busy, timeout=bound)
        # the idle workers end their turn themselves: one whose job has just ended is releasing the host's lease, and
        # cancelled there it left the lease held until its TTL lapsed, every other replica kept off the host (a
        # worker whose job is still running past the bound is cut now: its job's revision is restored)
        rest = [t for h, t in self._tasks.items() if not t.done() and h not in self._active]
        if rest:
            await asyncio.wait(rest, timeout=_WORKER_EXIT_S)
        for t in self._tasks.values():
            t.cancel()
        for t in self._tasks.values():
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await asyncio.wait_for(t, self.restore_s + 30)
        self._tasks.clear()

    async def recover(self) -> list[JobInfo]:
        """Take over every job left `running` whose process is gone or whose lease lapsed."""
        out: list[JobInfo] = []
        for host in self.hosts:
            out.extend(await self._take_over_orphans(host, at_start=True))
        return out

    # ---- taking over -----------------------------------------------------------------------
    async def _take_over_orphans(self, host: str, *, at_start: bool = False,
                                 under: Fence | None = None) -> list[JobInfo]:
        """Jobs `running` on `host` that no live lease protects: take each over (or, `under` our own
        lease for another job, take it over with that lease)."""
        mine = self._active.get(host)
        async with self.db.sessions() as s:
            rows = (await s.execute(select(Job).where(Job.host == host, Job.state == "running"))).scalars().all()
            candidates = [job_info(j) for j in rows if mine is None or j.id != mine.job.id]
        out = []
        for job in candidates:
            name = f"host:{job.host}"
            lease = await self.leases.get(name)
            if under is not None:
                info = await self._take_over(job, under, cause="lost")
            else:
                if lease is not None and lease.job_id == job.id and not lease.expired:
                    gone = lease.holder != self.holder and (self.db.is_sqlite or holder_dead(lease.holder))
                    if not (at_start and gone):
                        continue  # its process is alive and holds it
                    async with self.db.session() as s:  # a dead process's lease on one-process SQLite
                        await s.execute(delete(Lease).where(Lease.name == name, Lease.holder == lease.holder))
                # a process that died (found at start, or on this machine) vs one that lost its lease
                dead = at_start or (lease is not None and lease.holder != self.holder
                                    and f":{os.getpid()}:" not in lease.holder and holder_dead(lease.holder))
                token = await self.leases.take(name, self.holder, job_id=job.id)
                if token is None:
                    continue  # another live process holds the host; its worker reaps this job
                fence = Fence(self.leases, host, self.holder, token)
                try:
                    info = await self._take_over(job, fence, cause="stopped" if dead else "lost")
                finally:
                    with contextlib.suppress(*DB_ERRORS):
                        await self.leases.release(name, self.holder)
            if info is not None:
                out.append(info)
        return out

    async def _take_over(self, job: JobInfo, fence: Fence, *, cause: str) -> JobInfo | None:
        """We hold `job`'s host: read it, restore it if it does not serve, mark the job interrupted."""
        why = ("the bot stopped while this job ran; it was not re-run" if cause == "stopped" else
               "the bot process running this job lost its lease on the host (its database link was down "
               "longer than the lease); another process took over; it was not re-run")
        found = ""
        ctx = JobContext(self.db, job)
        ctx.restoring, ctx.step_prefix = True, "takeover:"
        try:
            with guarded(fence):
                if self.recover_host is not None:
                    found = await asyncio.wait_for(self.recover_host(ctx), self.restore_s)
                elif self.describe_host is not None:
                    found = await asyncio.wait_for(self.describe_host(job.host), 10)
        except Exception as e:  # the report is best effort; the job is marked either way
            log.warning("taking over job %s on %s: %s", job.id, job.host, e)
            found = f"its state could not be read or restored ({type(e).__name__}: {str(e)[:200]})"
        summary = why + (f". Found on {job.host}: {found}" if found else "")
        ended = await self._finish(job, "interrupted", summary, why, {"host_state": found}, None,
                                   action="job-interrupted")
        return await self.get(job.id) if ended else None

    # ---- queries ---------------------------------------------------------------------------
    # ---- transitions -----------------------------------------------------------------------
    async def submit(self, *, kind: str, host: str, params: dict[str, Any], actor: AuditActor,
                     command_text: str, needs_confirmation: bool) -> JobInfo:
        if host not in self._wake:
            raise NotFound(f"unknown host {host!r}; known hosts: {', '.join(self.hosts) or 'none'}")
        async with self.db.session() as s:
            # one submission of a host at a time, to its commit: ids are drawn at INSERT, and a later job committed
            # before an earlier one was picked first (PostgreSQL); the count below is exact under concurrency too
            await self.db.serialize(s, f"jobs:{host}")
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

    async def cancel(self, job_id: int, actor: AuditActor, *, may_cancel_others: bool) -> str:
        """Cancel a job; returns what happened in words."""
        job = await self.get(job_id)
        if job.requested_by != actor.id and not may_cancel_others:
            raise NotAuthorized(f"job {job_id} belongs to {job.requested_by_name or job.requested_by}; "
                                "cancelling someone else's job needs the operator role")
        if job.state in ("queued", "awaiting_confirmation"):
            ended = await self._finish(job, "cancelled", "cancelled before it ran", "", {}, None,
                                       from_states=("queued", "awaiting_confirmation"), action="cancel", actor=actor,
                                       retry=False)
            if ended:
                return f"job {job_id} was cancelled before it started"
        async with self.db.session() as s:
            res = await s.execute(update(Job).where(Job.id == job_id, Job.state == "running")
                                  .values(cancel_requested=True))
            if res.rowcount != 1:  # type: ignore[attr-defined]
                now = await s.get(Job, job_id)
                raise Conflict(f"job {job_id} has already ended ({now.state if now else job.state})")
            await self.audit.record(s, actor=actor, action="cancel", host=job.host,
                                    detail={"job": job_id, "running": True})
        return f"job {job_id} will stop at its next safe point and restore the unit that was live before it"

    # ---- the worker ------------------------------------------------------------------------
    async def _next(self, host: str) -> JobInfo | None:
        async with self.db.sessions() as s:
            j = await s.scalar(select(Job).where(Job.host == host, Job.state == "queued")
                               .order_by(Job.id).limit(1))
            return None if j is None else job_info(j)

    async def _worker(self, host: str) -> None:
        wake = self._wake[host]
        name = f"host:{host}"
        while not self._stopping:
            try:
                await self._take_over_orphans(host)
                job = await self._next(host)
                token = None if job is None or self._stopping else await self.leases.take(
                    name, self.holder, job_id=job.id)
                if job is not None and token is not None:
                    fence = Fence(self.leases, host, self.holder, token)
                    try:
                        await self._take_over_orphans(host, under=fence)
                        await self._run(job, fence)
                    finally:
                        with contextlib.suppress(*DB_ERRORS):
                            await self.leases.release(name, self.holder)
                    continue
            except asyncio.CancelledError:
                raise
            except Exception:
                log.exception("job worker for %s failed; retrying", host)
            wake.clear()
            if self._stopping:
                break
            with contextlib.suppress(TimeoutError):
                async with asyncio.timeout(self.poll_s):
                    await wake.wait()

    async def _run(self, job: JobInfo, fence: Fence) -> None:
        async with self.db.session() as s:
            res = await s.execute(update(Job).where(Job.id == job.id, Job.state == "queued")
                                  .values(state="running", started_at=utcnow()))
            if res.rowcount != 1:  # type: ignore[attr-defined]
                return  # cancelled or taken meanwhile
        ctx = JobContext(self.db, job)
        ctx.fence = fence
        active = _Active(job, ctx, fence, asyncio.current_task())
        self._active[job.host] = active
        if self._draining:
            ctx.draining = True
        heartbeat = asyncio.create_task(self._heartbeat(fence))
        state, summary, error = "failed", "", ""
        result: dict[str, Any] = {}
        t0 = time.monotonic()
        try:
            with guarded(fence):
                ctx.job = job = await self.get(job.id)
                await self.bus.publish(JobStarted(job.ref()))
                summary, result = await self.pipeline(ctx)
            state = "succeeded"
        except JobCancelled as e:
            state, summary = "cancelled", e.message
            result = dict(e.fields.get("result") or {})
            if ctx.draining and not await _db_flag(ctx):
                state = "interrupted"
                summary = error = (f"the bot was stopped (shutdown or upgrade) while this job ran; {e.message}; "
                                   "it was not re-run")
        except asyncio.CancelledError:
            # past the shutdown bound: restore the revision that was live before the job, then say so
            heartbeat.cancel()
            await self._cut_short(job, fence, ctx, time.monotonic() - t0)
            raise
        except Exception as e:
            state, summary, error, result = self._failure(job, fence, e)
        finally:
            heartbeat.cancel()
            self._active.pop(job.host, None)
        if fence.lost:
            # Not ours to end any more: the job stays `running` without a live lease, so the process that
            # takes the host (another replica, or this one once its database answers) reads the host,
            # repairs it if it does not serve, and ends the job with what it found.
            log.error("job %s on %s stopped: %s; left for the process that takes the host over", job.id,
                      job.host, fence.lost)
            return
        await self._finish(job, state, summary, error, result, round(time.monotonic() - t0, 2))

    def _failure(self, job: JobInfo, fence: Fence, e: Exception) -> tuple[str, str, str, dict[str, Any]]:
        """The end state, summary, error and result of a pipeline that raised `e`."""
        if isinstance(e, LeaseLost):
            fence.lose(str(e))
            return "interrupted", str(e), str(e), {}
        if isinstance(e, DatabaseUnavailable | OSError | SQLAlchemyError):
            log.warning("job %s stopped: the database failed under it (%s)", job.id, type(e).__name__)
            what = e.message if isinstance(e, DatabaseUnavailable) else type(e).__name__
            msg = (f"the database became unavailable while this job ran ({what}); "
                   "it stopped there and was not re-run — check the host with `status`")
            return "failed", msg, msg, {}
        if isinstance(e, PitcrewError):
            return "failed", e.message, e.message, dict(e.fields.get("result") or {})
        log.error("job %s crashed", job.id, exc_info=e)
        msg = f"internal error ({type(e).__name__}); see the bot's log"
        return "failed", msg, msg, {}

    async def _cut_short(self, job: JobInfo, fence: Fence, ctx: JobContext, seconds: float) -> None:
        """The job was cancelled outright (shutdown past its bound): put the pre-job revision back, wait
        until it serves (bounded by `restore_s`), record the job interrupted."""
        found = ""
        if self.restore_before is not None and not fence.lost:
            ctx.restoring, ctx.step_prefix = True, "shutdown:"
            beat = asyncio.create_task(self._heartbeat(fence))
            try:
                with guarded(fence):
                    found = await asyncio.wait_for(self.restore_before(ctx), self.restore_s)
            except Exception as e:
                log.error("job %s: restoring the pre-job revision on %s failed: %s", job.id, job.host, e)
                found = f"restoring the revision that was live before it failed ({type(e).__name__}: {e})"
            finally:
                beat.cancel()
        msg = ("the bot was stopped (shutdown or upgrade) while this job ran and the job did not reach a safe "
               "point in time; it was not re-run" + (f". {found}" if found else ""))
        with contextlib.suppress(Exception):
            await asyncio.wait_for(self._finish(job, "interrupted", msg, msg, {"host_state": found},
                                                round(seconds, 2), give_up_after_s=10), 15)

    async def _finish(self, job: JobInfo, state: str, summary: str, error: str, result: dict[str, Any],
                      seconds: float | None, *, from_states: tuple[str, ...] = ("running",),
                      action: str | None = None, actor: AuditActor = SYSTEM, retry: bool = True,
                      give_up_after_s: float = 600.0) -> bool:
        """Write a job's end state, its audit record and its end messages in one transaction, then publish
        `JobFinished`. Only from `from_states` (a job another process already ended is left alone). While
        the database is away, retry (a job must never stay `running`). True when this call ended the job."""
        event = JobFinished(job.ref(), state, summary, result)
        drafts = await self.end_messages(event) if self.end_messages is not None else []

        async def write() -> bool:
            async with self.db.session() as s:
                res = await s.execute(update(Job).where(Job.id == job.id, Job.state.in_(from_states)).values(
                    state=state, summary=summary, error=error, result=jsonable(result), finished_at=utcnow()))
                if res.rowcount != 1:  # type: ignore[attr-defined]
                    return False
                if state == "interrupted":
                    await s.execute(update(JobStep).where(JobStep.job_id == job.id, JobStep.state == "running")
                                    .values(state="interrupted", finished_at=utcnow()))
                detail: dict[str, Any] = {"job": job.id}
                if seconds is not None:
                    detail["seconds"] = seconds
                await self.audit.record(s, actor=actor, action=action or f"job-{state}", host=job.host,
                                        detail=detail, outcome=state)
                for d in drafts:
                    await self.outbox.enqueue_in(s, d)
            return True

        if not await retry_async(write, retry_on=DB_ERRORS, backoff=END_BACKOFF, attempts=None if retry else 1,
                                 give_up_after_s=give_up_after_s, what=f"recording the end of job {job.id}"):
            return False
        await self.bus.publish(event)
        return True

    async def _heartbeat(self, fence: Fence) -> None:
        while True:
            await asyncio.sleep(fence.heartbeat_s)
            t0 = time.monotonic()
            try:
                if not await self.leases.renew(f"host:{fence.host}", self.holder, fence.token):
                    fence.lose(await fence.why_not_held())
                else:
                    fence.confirmed_at = t0
            except Exception as e:
                log.warning("lease heartbeat failed for %s: %s", fence.host, type(e).__name__)
            if fence.expired_locally():
                fence.lose(f"not confirmed by the database for {time.monotonic() - fence.confirmed_at:.0f} s")

    def running_job(self, host: str) -> int | None:
        a = self._active.get(host)
        return None if a is None else a.job.id

    def wake(self, host: str) -> None:
        if host in self._wake:
            self._wake[host].set()


async def _db_flag(ctx: JobContext) -> bool:
    """Whether a person asked to cancel (as opposed to the shutdown's drain)."""
    try:
        return await ctx.cancel_flag()
    except Exception:
        return False
