"""Audit records of what the journal follower found out about a host on its own: reboots and gaps.

`JournalAuditor(audit).subscribe(bus)` writes one audit event (actor ``pitcrew``) for every
`HostRebooted` (action ``host_rebooted``) and `JournalGap` (action ``journal_gap``, with the interval,
the reason and ``partial: true``: a diagnosis of that window had part of the journal missing).
"""

from __future__ import annotations

from services.events import EventBus
from services.journal.types import HostRebooted, JournalGap
from services.store import SYSTEM, AuditLog


class JournalAuditor:
    """Subscribes to the follower's reboot and gap events and records them in the audit log."""

    def __init__(self, audit: AuditLog) -> None:
        self.audit = audit

    def subscribe(self, bus: EventBus) -> None:
        bus.subscribe(HostRebooted, self.on_rebooted)
        bus.subscribe(JournalGap, self.on_gap)

    async def on_rebooted(self, ev: HostRebooted) -> None:
        await self.audit.record(None, actor=SYSTEM, action="host_rebooted", host=ev.host, detail={
            "unit": ev.unit, "previous_boot": ev.previous_boot, "boot": ev.boot,
            "last_before": ev.last_before.isoformat() if ev.last_before else None,
            "first_after": ev.first_after.isoformat()})

    async def on_gap(self, ev: JournalGap) -> None:
        await self.audit.record(None, actor=SYSTEM, action="journal_gap", host=ev.host, outcome="partial", detail={
            "unit": ev.unit, "reason": ev.reason, "since": ev.since.isoformat() if ev.since else None,
            "until": ev.until.isoformat(), "seconds": ev.seconds, "dropped": ev.dropped, "partial": ev.partial})
