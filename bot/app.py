"""The composition root: builds every part from settings, explicitly, inside one `AsyncExitStack`.

`build_core` wires the database, event bus, audit log, outbox, hosts, job runner, experiment
pipelines, notifiers, incident watch and the router — the same for Slack, the console demo and the
tests. Transports (`bot.slack`, `bot.console`) then only feed messages to `core.router.dispatch`
and deliver the outbox.
"""

from __future__ import annotations

import asyncio
import logging
import os
import secrets
import socket
from contextlib import AsyncExitStack
from dataclasses import dataclass, field
from typing import Any

from bot.delivery import StoreOutbox
from bot.incident_wiring import start_incident_watch
from bot.scheduler import SchedulerService
from bot.settings import Settings
from handlers.auth import Policy
from handlers.job_notifier import JobNotifier
from handlers.router import Domain, Router
from services.doctor import Doctor
from services.events import EventBus
from services.experiments import BenchDefaults, ExperimentPolicy, Experiments, Results, host_recovery, job_pipeline
from services.hosts import HostPool, HostSpec
from services.incidents import AutoRollbackRequested, IncidentWatch
from services.jobs import LEASE_TTL_S, JobRunner
from services.status import FleetStatus
from services.store import SYSTEM, AuditActor, AuditLog, Database, Leases, OutboxDraft, OutboxStore, Schedules, SeenKeys
from services.units import Revisions

log = logging.getLogger(__name__)


@dataclass
class Core:
    """Everything a transport needs, built once."""

    settings: Settings
    db: Database
    bus: EventBus
    audit: AuditLog
    store: OutboxStore
    outbox: StoreOutbox
    wake: asyncio.Event
    hosts: HostPool
    jobs: JobRunner
    experiments: Experiments
    results: Results
    revisions: Revisions
    router: Router
    holder: str
    incidents: Any = None
    extras: dict[str, Any] = field(default_factory=dict)


def host_specs(settings: Settings) -> list[HostSpec]:
    return [HostSpec(name=h.name, address=h.address, port=h.port, user=h.user, client_key=h.client_key,
                     known_hosts=h.known_hosts, unit=h.unit, unit_dir=h.unit_dir, server_url=h.server_url,
                     sudo=h.sudo, tags=tuple(h.tags)) for h in settings.hosts]


def policy_of(settings: Settings) -> Policy:
    p = settings.policy
    return Policy(roles=dict(p.roles), channel_hosts={k: list(v) for k, v in p.channel_hosts.items()},
                  confirm=frozenset(p.confirm), commands_per_minute=p.user_commands_per_minute,
                  status_ephemeral=p.status_ephemeral)


async def build_core(settings: Settings, stack: AsyncExitStack, *, transport: str, time_scale: float = 1.0,
                     watch_journals: bool = True, lease_ttl_s: float = LEASE_TTL_S,
                     start_scheduler: bool = True) -> Core:
    """Build and start everything except the transport itself."""
    holder = f"{socket.gethostname()}:{os.getpid()}:{secrets.token_hex(3)}"
    db = Database(settings.db.url, echo=settings.db.echo)
    stack.push_async_callback(db.close)
    db.lock_single_process()
    await db.migrate()
    bus = EventBus()
    audit = AuditLog(db)
    bus.on_failure = _audit_failures(audit)
    store = OutboxStore(db)
    wake = asyncio.Event()
    outbox = StoreOutbox(store, transport=transport, wake=wake)
    hosts = HostPool.from_specs(host_specs(settings))
    stack.push_async_callback(hosts.close)
    revisions, results = Revisions(db), Results(db)
    p = settings.policy
    exp_policy = ExperimentPolicy(auto_rollback=p.auto_rollback, kill_stale_automatically=p.kill_stale_automatically,
                                  ready_timeout_s=p.ready_timeout_s, stop_timeout_s=p.stop_timeout_s,
                                  sweep_end=p.sweep_end, time_scale=time_scale, ramp=p.ramp_before_benchmark)
    b = settings.bench
    bench = BenchDefaults(concurrency=tuple(b.concurrency), requests_per_level=b.requests_per_level,
                          warmup=b.warmup, input_len=b.input_len, output_len=b.output_len,
                          max_duration_s=b.max_duration_s)
    incidents = None
    watch = None
    if watch_journals and settings.hosts:
        watch = await _start_incidents(settings, stack, db=db, bus=bus, audit=audit, hosts=hosts,
                                       outbox=outbox, holder=holder, time_scale=time_scale)
        incidents = watch.monitor
    experiments = Experiments(hosts=hosts, revisions=revisions, results=results, audit=audit, bus=bus,
                              policy=exp_policy, bench=bench, notices=incidents)

    async def end_messages(e: Any) -> list[OutboxDraft]:
        return [OutboxDraft(transport, key, e.job.channel, reply.to_json(), thread_of)
                for key, reply, thread_of in await notifier.end_messages(e)]

    recover, restore_before = host_recovery(experiments)
    jobs = JobRunner(db, bus, audit, holder=holder, host_names=hosts.names(), pipeline=job_pipeline(experiments),
                     lease_ttl_s=lease_ttl_s, max_queued_per_host=p.max_queued_jobs_per_host,
                     describe_host=experiments.describe_host, recover_host=recover, restore_before=restore_before,
                     end_messages=end_messages, drain_s=p.shutdown_grace_s,
                     restore_s=p.stop_timeout_s + p.ready_timeout_s * time_scale + 30)
    notifier = JobNotifier(bus, outbox, results, jobs=jobs, audit=audit, atomic_ends=True)
    schedules = Schedules(db, audit)
    status = FleetStatus(ops=experiments.ops, jobs=jobs, results=results, incidents=incidents)
    domain = Domain(jobs=jobs, experiments=experiments, audit=audit, results=results, revisions=revisions,
                    host_names=hosts.names(), outbox=outbox, incidents=incidents, schedules=schedules, status=status,
                    doctor=Doctor(hosts, flags=experiments.engine_flags),
                    seen=None if db.is_sqlite else SeenKeys(db, holder=holder))  # SQLite: one process
    router = Router(domain, policy_of(settings))
    core = Core(settings=settings, db=db, bus=bus, audit=audit, store=store, outbox=outbox, wake=wake, hosts=hosts,
                jobs=jobs, experiments=experiments, results=results, revisions=revisions, router=router,
                holder=holder, incidents=incidents)
    if watch is not None:
        _wire_incidents(core, watch)
        core.extras["journal_status"] = watch.journal_lag
    stack.push_async_callback(notifier.aclose)  # after the jobs stop: their last states go out
    await jobs.start()
    stack.push_async_callback(jobs.stop)
    if start_scheduler:
        sched = SchedulerService(schedules, Leases(db, ttl_s=60.0), dispatch=router.dispatch, outbox=outbox,
                                 holder=holder)
        await sched.start()
        stack.push_async_callback(sched.stop)
        core.extras["scheduler"] = sched
    return core


def _audit_failures(audit: AuditLog) -> Any:
    """The event bus's failure hook: a subscriber that failed even after retries is an audit record."""

    async def record(event: object, handler: str, error: BaseException) -> None:
        job = getattr(getattr(event, "job", None), "id", None)
        await audit.record(None, actor=SYSTEM, action="event-failed", host=getattr(getattr(event, "job", None),
                                                                                  "host", None),
                           detail={"event": type(event).__name__, "subscriber": handler, "job": job,
                                   "error": f"{type(error).__name__}: {str(error)[:300]}"}, outcome="error")

    return record


async def _start_incidents(settings: Settings, stack: AsyncExitStack, **deps: Any) -> Any:
    """Start the journal watch and incident lifecycle for every host."""
    return await start_incident_watch(settings, stack, **deps)


def _wire_incidents(core: Core, watch: IncidentWatch) -> None:
    """The incident monitor's ties to the jobs: an automatic rollback is a job, and an incident of a host with a job
    queued or running waits for it before it can be resolved."""
    async def host_busy(host: str) -> bool:
        return any(j.state in ("queued", "running") for j in await core.jobs.queue(host))

    watch.monitor.host_busy = host_busy

    async def on_request(e: Any) -> None:
        if any(j.kind == "rollback" for j in await core.jobs.queue(e.host)):
            return  # one is already on its way
        await core.jobs.submit(kind="rollback", host=e.host,
                               params={"reason": f"incident {e.incident_id}", "after_incident": e.incident_id},
                               actor=AuditActor("pitcrew", "pitcrew (auto-rollback)", "internal",
                                                core.settings.slack.alert_channel or "alerts"),
                               command_text=f"rollback {e.host}", needs_confirmation=False)

    core.bus.subscribe(AutoRollbackRequested, on_request)
