"""Wiring of the live incident path for the composition root: fleet journal following + incident monitor.

`build_incident_watch(db, bus, pool, holder=...)` returns an `IncidentWatch` whose `run()` keeps the
`JournalSupervisor` (one follower per host whose ``journal:<host>`` lease this process holds) and the
`IncidentMonitor`'s lifecycle ticks (mute expiry, stable-window resolution of the hosts followed here)
running until cancelled. Chat delivery is separate: subscribe `handlers.incident_view.IncidentNotifier`
to the same bus in the composition root.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass

from services.events import EventBus
from services.hosts import HostPool
from services.incidents.monitor import IncidentMonitor
from services.incidents.types import IncidentPolicy
from services.journal import JournalAuditor, JournalSupervisor
from services.store import AuditLog, Database


@dataclass
class IncidentWatch:
    """The running parts of live incident detection in one bot process."""

    monitor: IncidentMonitor
    supervisor: JournalSupervisor

    def journal_lag(self) -> dict[str, float | None]:
        """Seconds since the newest journal entry seen, per followed host (for /metrics)."""
        return {s.host: s.lag_s() for s in self.supervisor.statuses()}

    async def run(self) -> None:
        """Follow and watch until cancelled (followers flush their cursors and release their leases)."""
        sup = asyncio.create_task(self.supervisor.run(), name="journal-supervisor")
        ticks = asyncio.create_task(self.monitor.run(self.supervisor.owned), name="incident-ticks")
        try:
            # asyncio.wait (not gather): a cancellation of run() must reach each task exactly once, so that
            # the supervisor's own shutdown (flush cursors, release leases) is not interrupted
            await asyncio.wait({sup, ticks}, return_when=asyncio.FIRST_COMPLETED)
        finally:
            for t in (ticks, sup):
                t.cancel()
            await asyncio.gather(sup, ticks, return_exceptions=True)


def build_incident_watch(db: Database, bus: EventBus, pool: HostPool, *, holder: str,
                         policy: IncidentPolicy | None = None, audit: AuditLog | None = None,
                         lease_ttl_s: float = 10.0, heartbeat_s: float = 3.0) -> IncidentWatch:
    """Build the monitor and the supervisor over every host of `pool` (hosts added later are picked up).
    The follower's reboot and gap events are recorded in the audit log (`JournalAuditor`)."""
    audit = audit or AuditLog(db)
    JournalAuditor(audit).subscribe(bus)
    monitor = IncidentMonitor(db, bus, pool.get, audit=audit, policy=policy)
    supervisor = JournalSupervisor(db, lambda: [pool.get(n) for n in pool.names()], holder=holder,
                                   on_entry_for=monitor.on_entry_for, bus=bus, lease_ttl_s=lease_ttl_s,
                                   heartbeat_s=heartbeat_s)
    return IncidentWatch(monitor, supervisor)
