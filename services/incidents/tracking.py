"""What the incident monitor keeps per followed (host, unit): recent lines and systemd events, the invocations
being stopped, expected or already handled, and the journal gaps that make a diagnosis partial; plus the small
text helpers shared with the incident lifecycle (an audit action's description, a journal line for chat)."""

from __future__ import annotations

import asyncio
from collections import deque
from dataclasses import dataclass, field
from datetime import UTC, datetime

from services.incidents.types import IncidentInfo
from services.journal import JournalEntry, JournalGap, SystemdEvent
from services.redact import redact
from services.store import AuditRecord, utcnow

_FAILURE_KINDS = frozenset({"failed_result", "failed_to_start", "start_limit_hit", "oom_kill", "main_exited",
                            "scheduled_restart"})


def is_failure(ev: SystemdEvent) -> bool:
    if ev.kind not in _FAILURE_KINDS:
        return False
    if ev.kind == "main_exited":
        return not ev.clean_exit
    return not (ev.kind == "failed_result" and ev.result == "success")


class Bounded:
    """An insertion-ordered set that forgets its oldest members."""

    def __init__(self, size: int = 256) -> None:
        self._d: dict[str, None] = {}
        self._size = size

    def add(self, key: str) -> None:
        self._d[key] = None
        if len(self._d) > self._size:
            del self._d[next(iter(self._d))]

    def __contains__(self, key: object) -> bool:
        return key in self._d

    def items(self) -> list[str]:
        return list(self._d)


@dataclass
class Track:
    lines: deque[JournalEntry]
    events: deque[SystemdEvent] = field(default_factory=lambda: deque(maxlen=1000))
    stopping: Bounded = field(default_factory=Bounded)
    expected: Bounded = field(default_factory=Bounded)
    handled: Bounded = field(default_factory=Bounded)
    lock: asyncio.Lock = field(default_factory=asyncio.Lock)
    counter: int = 0
    gaps: list[JournalGap] = field(default_factory=list)


@dataclass(frozen=True)
class Notice:
    kind: str
    until: datetime


def describe_action(rec: AuditRecord) -> str:
    """A short text of an audit event's detail (for the diagnosis and the resolution message)."""
    d = rec.detail
    for key in ("summary", "change", "description", "text"):
        if isinstance(d.get(key), str) and d[key]:
            return str(d[key])[:200]
    parts = [f"{k}={v}" for k, v in d.items() if isinstance(v, str | int | float | bool)]
    return ", ".join(parts)[:200]


def revision_of(rec: AuditRecord) -> str | None:
    for key in ("revision", "to_revision", "revision_id", "revision_after_id", "rev"):
        v = rec.detail.get(key)
        if isinstance(v, int | str) and str(v):
            return str(v)
    return None


def duration_s(info: IncidentInfo) -> float:
    end = info.resolved_at or utcnow()
    return max(0.0, (end - info.opened_at).total_seconds())


def format_line(e: JournalEntry) -> str:
    at = datetime.fromtimestamp(e.realtime_us / 1e6, UTC).strftime("%H:%M:%S") if e.realtime_us else "--:--:--"
    return f"{at} {redact(e.message)}"


def gaps_text(gaps: list[JournalGap], since: datetime) -> str:
    """`Partial: the journal could not be read 14:02–14:12 UTC (vacuumed).` for the gaps after ``since``."""
    spans = []
    for g in gaps:
        if g.until < since:
            continue
        start = g.since.strftime("%H:%M") if g.since else "?"
        spans.append(f"{start}–{g.until.strftime('%H:%M')} UTC ({g.reason})")
    return f" Partial: the journal could not be read {', '.join(spans)}." if spans else ""
