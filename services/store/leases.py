"""Leases in the database: one holder per name (a host for jobs, a host's journal, the scheduler).

A lease is a row with a holder, a heartbeat and an expiry. Acquiring succeeds when the row is
absent, expired, or already ours; the conditional UPDATE/INSERT makes this safe across bot
processes on PostgreSQL and SQLite alike. A holder that dies stops heartbeating and its lease
lapses after the TTL.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta

from sqlalchemy import delete, or_, select, update
from sqlalchemy.exc import IntegrityError

from services.store.db import Database
from services.store.models import Lease, utcnow


@dataclass(frozen=True)
class LeaseInfo:
    name: str
    holder: str
    job_id: int | None
    heartbeat_at: datetime
    expires_at: datetime


class Leases:
    """Acquire, renew, release and inspect leases."""

    def __init__(self, db: Database, *, ttl_s: float = 30.0) -> None:
        self._db = db
        self.ttl_s = ttl_s

    async def acquire(self, name: str, holder: str, *, job_id: int | None = None) -> bool:
        now = utcnow()
        expires = now + timedelta(seconds=self.ttl_s)
        async with self._db.session() as s:
            res = await s.execute(
                update(Lease)
                .where(Lease.name == name, or_(Lease.expires_at < now, Lease.holder == holder))
                .values(holder=holder, job_id=job_id, acquired_at=now, heartbeat_at=now, expires_at=expires)
            )
            if res.rowcount == 1:  # type: ignore[attr-defined]
                return True
        try:
            async with self._db.session() as s:
                s.add(Lease(name=name, holder=holder, job_id=job_id, acquired_at=now, heartbeat_at=now,
                            expires_at=expires))
            return True
        except IntegrityError:
            return False

    async def renew(self, name: str, holder: str) -> bool:
        """Heartbeat; False when the lease is no longer ours (expired and taken)."""
        now = utcnow()
        async with self._db.session() as s:
            res = await s.execute(
                update(Lease).where(Lease.name == name, Lease.holder == holder)
                .values(heartbeat_at=now, expires_at=now + timedelta(seconds=self.ttl_s)))
            return bool(res.rowcount == 1)  # type: ignore[attr-defined]

    async def release(self, name: str, holder: str) -> None:
        async with self._db.session() as s:
            await s.execute(delete(Lease).where(Lease.name == name, Lease.holder == holder))

    async def get(self, name: str) -> LeaseInfo | None:
        async with self._db.sessions() as s:
            row = await s.scalar(select(Lease).where(Lease.name == name))
            if row is None:
                return None
            return LeaseInfo(row.name, row.holder, row.job_id, row.heartbeat_at, row.expires_at)

    async def held_by(self, holder: str) -> list[LeaseInfo]:
        async with self._db.sessions() as s:
            rows = (await s.execute(select(Lease).where(Lease.holder == holder))).scalars().all()
            return [LeaseInfo(r.name, r.holder, r.job_id, r.heartbeat_at, r.expires_at) for r in rows]
