"""Leases in the database: one holder per name (a host for jobs, a host's journal, the scheduler).

A lease is a row with a holder, a heartbeat, an expiry and a fencing token. Acquiring succeeds when
the row is absent, expired, or already ours; the conditional UPDATE/INSERT makes this safe across
bot processes on PostgreSQL and SQLite alike. Every acquisition gets a new random fencing token:
a holder that acts on what the lease protects first asks `check` whether the row still carries its
token and is not about to expire. Time is the database's clock (``clock_timestamp()`` on
PostgreSQL), never a replica's own, so replicas whose clocks disagree still agree on who holds a
lease; SQLite serves one process, whose clock is the database's. A holder that dies stops
heartbeating and its lease lapses after the TTL.
"""

from __future__ import annotations

import secrets
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from sqlalchemy import Interval, delete, func, insert, literal, or_, select, update
from sqlalchemy.exc import IntegrityError

from services.store.db import Database
from services.store.models import Lease, UTCDateTime, utcnow


@dataclass(frozen=True)
class LeaseInfo:
    name: str
    holder: str
    job_id: int | None
    heartbeat_at: datetime
    expires_at: datetime
    expired: bool = False  # by the database's clock when it was read
    token: str = ""


def db_now(db: Database) -> Any:
    """A SQL expression for "now" on the database's clock (a bound value on SQLite: one process)."""
    if db.is_sqlite:
        return literal(utcnow(), UTCDateTime())
    return func.clock_timestamp(type_=UTCDateTime())


def db_after(db: Database, seconds: float) -> Any:
    """The database's "now" plus ``seconds``."""
    if db.is_sqlite:
        return literal(utcnow() + timedelta(seconds=seconds), UTCDateTime())
    return func.clock_timestamp(type_=UTCDateTime()) + literal(timedelta(seconds=seconds), Interval())


class Leases:
    """Acquire, renew, check, release and inspect leases."""

    def __init__(self, db: Database, *, ttl_s: float = 30.0) -> None:
        self._db = db
        self.ttl_s = ttl_s

    async def acquire(self, name: str, holder: str, *, job_id: int | None = None) -> bool:
        return await self.take(name, holder, job_id=job_id) is not None

    async def take(self, name: str, holder: str, *, job_id: int | None = None) -> str | None:
        """Acquire and return the new fencing token, or None when someone else holds the lease."""
        token = secrets.token_hex(8)
        db = self._db
        async with db.session() as s:
            res = await s.execute(
                update(Lease)
                .where(Lease.name == name, or_(Lease.expires_at < db_now(db), Lease.holder == holder))
                .values(holder=holder, job_id=job_id, fence=token, acquired_at=db_now(db),
                        heartbeat_at=db_now(db), expires_at=db_after(db, self.ttl_s))
            )
            if res.rowcount == 1:  # type: ignore[attr-defined]
                return token
        try:
            async with db.session() as s:
                await s.execute(insert(Lease).values(
                    name=name, holder=holder, job_id=job_id, fence=token, acquired_at=db_now(db),
                    heartbeat_at=db_now(db), expires_at=db_after(db, self.ttl_s)))
            return token
        except IntegrityError:
            return None

    async def renew(self, name: str, holder: str, token: str | None = None) -> bool:
        """Heartbeat; False when the lease is no longer ours (expired and taken, or another token)."""
        db = self._db
        cond = [Lease.name == name, Lease.holder == holder]
        if token is not None:
            cond.append(Lease.fence == token)
        async with db.session() as s:
            res = await s.execute(update(Lease).where(*cond).values(
                heartbeat_at=db_now(db), expires_at=db_after(db, self.ttl_s)))
            return bool(res.rowcount == 1)  # type: ignore[attr-defined]

    async def check(self, name: str, holder: str, token: str, *, margin_s: float = 0.0) -> bool:
        """True when the lease still carries ``token`` and stays valid for ``margin_s`` more seconds,
        by the database's clock (the fencing test before an action on what the lease protects)."""
        db = self._db
        async with db.sessions() as s:
            n = await s.scalar(select(func.count()).select_from(Lease).where(
                Lease.name == name, Lease.holder == holder, Lease.fence == token,
                Lease.expires_at > db_after(db, margin_s)))
        return bool(n)

    async def release(self, name: str, holder: str) -> None:
        async with self._db.session() as s:
            await s.execute(delete(Lease).where(Lease.name == name, Lease.holder == holder))

    async def get(self, name: str) -> LeaseInfo | None:
        async with self._db.sessions() as s:
            row = (await s.execute(select(Lease, Lease.expires_at < db_now(self._db)).where(Lease.name == name))
                   ).first()
            if row is None:
                return None
            return _info(row[0], bool(row[1]))

    async def held_by(self, holder: str) -> list[LeaseInfo]:
        async with self._db.sessions() as s:
            rows = (await s.execute(select(Lease, Lease.expires_at < db_now(self._db))
                                    .where(Lease.holder == holder))).all()
            return [_info(r[0], bool(r[1])) for r in rows]


def _info(r: Lease, expired: bool) -> LeaseInfo:
    return LeaseInfo(r.name, r.holder, r.job_id, r.heartbeat_at, r.expires_at, expired, r.fence)
