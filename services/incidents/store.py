"""Incidents in the database: one per (host, unit, cause, configuration hash), with their event history.

Every change is one transaction that also writes an `incident_events` row and an audit event, so a
restarted bot (or another replica) finds the same incident and keeps editing the same chat message.
A failure is recorded at most once per systemd invocation id (the ids are kept in the incident's
``diagnosis`` JSON), which makes replays of journal entries after a crash harmless.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any, Literal

from sqlalchemy import select
from sqlalchemy.ext.asyncio import AsyncSession

from services.diagnosis import Diagnosis
from services.errors import Conflict, NotFound, UserInputError
from services.incidents.types import ACKED, ACTIVE_STATES, OPEN, RESOLVED, IncidentInfo
from services.store import SYSTEM, AuditActor, AuditLog, Database, Incident, IncidentEvent, utcnow

# Causes that are not a crash: a loop is never opened for them.
NOT_A_CRASH = frozenset({"healthy", "operator_action", "stop_timeout_sigkill"})
WEAK_CAUSES = frozenset({"unknown"})
_KEEP_INVOCATIONS = 200


@dataclass(frozen=True)
class Recorded:
    """What `record_failure` did."""

    outcome: Literal["opened", "updated", "duplicate"]
    incident: IncidentInfo
    superseded: tuple[IncidentInfo, ...] = ()


def to_info(row: Incident) -> IncidentInfo:
    d: dict[str, Any] = dict(row.diagnosis or {})
    return IncidentInfo(
        id=row.id, host=row.host, unit=row.unit, cause=row.cause, config_hash=row.config_hash,
        state=row.state, summary=row.summary, confidence=float(d.get("confidence") or 0.0),
        evidence=tuple(str(x) for x in d.get("evidence") or ()), recommendation=str(d.get("recommendation") or ""),
        config_change=d.get("config_change"), ran_before=d.get("ran_before_text"),
        stale_pids=tuple(int(p) for p in d.get("stale_pids") or ()), restarts=row.restarts,
        opened_at=row.opened_at, last_event_at=row.last_event_at, resolved_at=row.resolved_at,
        muted_until=row.muted_until, acknowledged_by=row.acknowledged_by, resolution=row.resolution,
        auto_rollback=bool(d.get("auto_rollback")))


def _diagnosis_json(diag: Diagnosis, invocation: str) -> dict[str, Any]:
    d = diag.to_json()
    d["config_change"] = diag.config_change
    d["stale_pids"] = list(diag.stale_pids)
    d["ran_before_text"] = diag.ran_before.describe() if diag.ran_before is not None else None
    d["invocations"] = [invocation]
    return d


def _actor(actor: AuditActor | str) -> AuditActor:
    return actor if isinstance(actor, AuditActor) else AuditActor(id=actor, name=actor)


class IncidentStore:
    """Create, update, mute, acknowledge, resolve and read incidents."""

    def __init__(self, db: Database, audit: AuditLog | None = None) -> None:
        self._db = db
        self._audit = audit or AuditLog(db)

    async def _active_rows(self, s: AsyncSession, host: str, unit: str) -> list[Incident]:
        stmt = (select(Incident).where(Incident.host == host, Incident.unit == unit,
                                       Incident.state.in_(ACTIVE_STATES)).order_by(Incident.id))
        if not self._db.is_sqlite:
            stmt = stmt.with_for_update()
        return list((await s.execute(stmt)).scalars().all())

    async def record_failure(self, *, host: str, unit: str, diag: Diagnosis, config_hash: str, invocation: str,
                             line: str, restarts: int, at: datetime | None = None) -> Recorded:
        """Open a new incident or add a restart to the matching one (idempotent per invocation)."""
        now = at or utcnow()
        async with self._db.session() as s:
            active = await self._active_rows(s, host, unit)
            match = next((r for r in active if r.cause == diag.cause and r.config_hash == config_hash), None)
            if match is None and diag.cause in WEAK_CAUSES:
                match = next((r for r in reversed(active) if r.config_hash == config_hash), None)
            if match is not None:
                d = dict(match.diagnosis or {})
                seen = list(d.get("invocations") or [])
                if invocation in seen:
                    return Recorded("duplicate", to_info(match))
                seen = [*seen, invocation][-_KEEP_INVOCATIONS:]
                d["invocations"] = seen
                match.diagnosis = d
                match.restarts = max(match.restarts + 1, restarts)
                match.last_event_at = now
                s.add(IncidentEvent(incident_id=match.id, at=now, kind="restart",
                                    detail={"invocation": invocation, "line": line, "restarts": match.restarts}))
                await s.flush()
                return Recorded("updated", to_info(match))
            row = Incident(host=host, unit=unit, cause=diag.cause, config_hash=config_hash, state=OPEN,
                           summary=diag.summary, diagnosis=_diagnosis_json(diag, invocation),
                           restarts=max(restarts, 1), opened_at=now, last_event_at=now, resolution="")
            s.add(row)
            await s.flush()
            s.add(IncidentEvent(incident_id=row.id, at=now, kind="opened",
                                detail={"invocation": invocation, "line": line, "cause": diag.cause}))
            superseded = []
            for old in active:
                old.state = RESOLVED
                old.resolved_at = now
                old.resolution = f"superseded by incident #{row.id} ({diag.cause})"
                s.add(IncidentEvent(incident_id=old.id, at=now, kind="superseded", detail={"by": row.id}))
                superseded.append(old)
            await self._audit.record(s, actor=SYSTEM, action="incident_open", host=host,
                                     detail={"incident": row.id, "unit": unit, "cause": diag.cause,
                                             "config_hash": config_hash})
            await s.flush()
            return Recorded("opened", to_info(row), tuple(to_info(o) for o in superseded))

    async def add_restart(self, incident_id: int, *, invocation: str, line: str, restarts: int,
                          at: datetime | None = None) -> Recorded:
        """Count one more failed start of an active incident (idempotent per invocation)."""
        now = at or utcnow()
        async with self._db.session() as s:
            row = await self._row(s, incident_id)
            d = dict(row.diagnosis or {})
            seen = list(d.get("invocations") or [])
            if invocation in seen:
                return Recorded("duplicate", to_info(row))
            d["invocations"] = [*seen, invocation][-_KEEP_INVOCATIONS:]
            row.diagnosis = d
            row.restarts = max(row.restarts + 1, restarts)
            row.last_event_at = now
            s.add(IncidentEvent(incident_id=row.id, at=now, kind="restart",
                                detail={"invocation": invocation, "line": line, "restarts": row.restarts}))
            await s.flush()
            return Recorded("updated", to_info(row))

    async def mark_auto_rollback(self, incident_id: int, detail: dict[str, Any]) -> IncidentInfo:
        async with self._db.session() as s:
            row = await self._row(s, incident_id)
            d = dict(row.diagnosis or {})
            d["auto_rollback"] = True
            row.diagnosis = d
            s.add(IncidentEvent(incident_id=row.id, kind="auto_rollback", detail=detail))
            await self._audit.record(s, actor=SYSTEM, action="incident_auto_rollback", host=row.host,
                                     detail={"incident": row.id, **detail})
            return to_info(row)

    async def resolve(self, incident_id: int, fixed_by: str, *,
                      quiet_since: datetime | None = None) -> IncidentInfo | None:
        """Resolve an active incident; None when it was already resolved, or when a failure was recorded after
        `quiet_since` (the incident's last event when its stability was judged: a restart counted in between,
        while the unit's state was being read, means it was not stable after all)."""
        now = utcnow()
        async with self._db.session() as s:
            row = await self._row(s, incident_id)
            if row.state == RESOLVED:
                return None
            if quiet_since is not None and row.last_event_at > quiet_since:
                return None
            row.state = RESOLVED
            row.resolved_at = now
            row.resolution = fixed_by
            s.add(IncidentEvent(incident_id=row.id, at=now, kind="resolved", detail={"fixed_by": fixed_by}))
            await self._audit.record(s, actor=SYSTEM, action="incident_resolve", host=row.host,
                                     detail={"incident": row.id, "fixed_by": fixed_by})
            return to_info(row)

    async def mute(self, incident_id: int, minutes: float, actor: AuditActor | str) -> IncidentInfo:
        if not 0 < minutes <= 7 * 24 * 60:
            raise UserInputError("a mute lasts between 1 minute and 7 days")
        who = _actor(actor)
        async with self._db.session() as s:
            row = await self._row(s, incident_id)
            if row.state == RESOLVED:
                raise Conflict(f"incident #{incident_id} is already resolved")
            row.muted_until = utcnow() + timedelta(minutes=minutes)
            s.add(IncidentEvent(incident_id=row.id, kind="muted",
                                detail={"by": who.name or who.id, "until": row.muted_until.isoformat()}))
            await self._audit.record(s, actor=who, action="incident_mute", host=row.host,
                                     detail={"incident": row.id, "minutes": minutes})
            return to_info(row)

    async def unmute_expired(self, now: datetime | None = None) -> list[IncidentInfo]:
        """Clear mutes that have run out (each one audited); returns the incidents concerned."""
        now = now or utcnow()
        out = []
        async with self._db.session() as s:
            stmt = select(Incident).where(Incident.muted_until.is_not(None), Incident.muted_until <= now)
            if not self._db.is_sqlite:
                stmt = stmt.with_for_update(skip_locked=True)  # one replica clears (and audits) each mute
            rows = (await s.execute(stmt)).scalars().all()
            for row in rows:
                row.muted_until = None
                s.add(IncidentEvent(incident_id=row.id, kind="unmuted", detail={}))
                await self._audit.record(s, actor=SYSTEM, action="incident_unmute", host=row.host,
                                         detail={"incident": row.id})
                out.append(to_info(row))
        return out

    async def acknowledge(self, incident_id: int, actor: AuditActor | str) -> IncidentInfo:
        who = _actor(actor)
        async with self._db.session() as s:
            row = await self._row(s, incident_id)
            if row.state == RESOLVED:
                raise Conflict(f"incident #{incident_id} is already resolved")
            row.state = ACKED
            row.acknowledged_by = who.name or who.id
            s.add(IncidentEvent(incident_id=row.id, kind="acknowledged", detail={"by": row.acknowledged_by}))
            await self._audit.record(s, actor=who, action="incident_ack", host=row.host,
                                     detail={"incident": row.id})
            return to_info(row)

    async def get(self, incident_id: int) -> IncidentInfo:
        async with self._db.sessions() as s:
            return to_info(await self._row(s, incident_id))

    async def active(self, host: str | None = None, hosts: Sequence[str] | None = None) -> list[IncidentInfo]:
        stmt = select(Incident).where(Incident.state.in_(ACTIVE_STATES)).order_by(Incident.id)
        if host is not None:
            stmt = stmt.where(Incident.host == host)
        if hosts is not None:
            stmt = stmt.where(Incident.host.in_(list(hosts)))
        async with self._db.sessions() as s:
            return [to_info(r) for r in (await s.execute(stmt)).scalars().all()]

    async def events(self, incident_id: int) -> list[tuple[datetime, str, dict[str, Any]]]:
        async with self._db.sessions() as s:
            rows = (await s.execute(select(IncidentEvent).where(IncidentEvent.incident_id == incident_id)
                                    .order_by(IncidentEvent.id))).scalars().all()
            return [(r.at, r.kind, dict(r.detail or {})) for r in rows]

    async def _row(self, s: AsyncSession, incident_id: int) -> Incident:
        row = await s.get(Incident, incident_id)
        if row is None:
            raise NotFound(f"no incident #{incident_id}", incident=incident_id)
        return row
