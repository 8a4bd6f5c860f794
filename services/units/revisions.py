"""Unit revisions: every unit file pitcrew saw or deployed on a host, with hash, author, engine and known-good flag.

A revision is stored once per (host, unit, sha256); observing the same text again returns the
existing row. Each revision records the engine its ``ExecStart=`` launches (`unit_engine`). Known-good
marks the revisions that served and benchmarked cleanly; rollback
targets the newest known-good one unless a revision is named.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from sqlalchemy import select, update
from sqlalchemy.exc import IntegrityError
from sqlalchemy.ext.asyncio import AsyncSession

from services.errors import NotFound
from services.store import Database, UnitRevision, utcnow
from services.units.editor import unit_engine, unit_hash


@dataclass(frozen=True)
class Revision:
    id: int
    host: str
    unit: str
    sha256: str
    text: str
    source: str
    created_by: str
    created_at: datetime
    known_good: bool
    engine: str = ""  # "sglang", "vllm", "unknown"; "" for a row stored before engines were recorded


def _view(r: UnitRevision) -> Revision:
    return Revision(r.id, r.host, r.unit, r.sha256, r.text, r.source, r.created_by, r.created_at, r.known_good,
                    r.engine)


class Revisions:
    """Store and look up unit revisions."""

    def __init__(self, db: Database) -> None:
        self._db = db

    async def observe(self, host: str, unit: str, text: str, *, source: str = "observed",
                      by: str = "", session: AsyncSession | None = None) -> Revision:
        """The revision for this exact text, stored if new."""
        digest = unit_hash(text)
        engine = unit_engine(text)
        found = await self._find(host, unit, digest)
        if found is not None:
            return found
        try:
            if session is not None:
                row = UnitRevision(host=host, unit=unit, sha256=digest, text=text, source=source, created_by=by,
                                   engine=engine)
                session.add(row)
                await session.flush()
                return _view(row)
            async with self._db.session() as s:
                row = UnitRevision(host=host, unit=unit, sha256=digest, text=text, source=source, created_by=by,
                                   engine=engine)
                s.add(row)
                await s.flush()
                return _view(row)
        except IntegrityError:
            again = await self._find(host, unit, digest)
            if again is None:
                raise
            return again

    async def _find(self, host: str, unit: str, digest: str) -> Revision | None:
        async with self._db.sessions() as s:
            row = await s.scalar(select(UnitRevision).where(
                UnitRevision.host == host, UnitRevision.unit == unit, UnitRevision.sha256 == digest))
            return None if row is None else _view(row)

    async def get(self, revision_id: int, *, host: str | None = None) -> Revision:
        async with self._db.sessions() as s:
            row = await s.get(UnitRevision, revision_id)
        if row is None or (host is not None and row.host != host):
            where = f" on {host}" if host else ""
            raise NotFound(f"there is no unit revision {revision_id}{where}")
        return _view(row)

    async def mark_known_good(self, revision_id: int) -> None:
        async with self._db.session() as s:
            await s.execute(update(UnitRevision).where(UnitRevision.id == revision_id)
                            .values(known_good=True, known_good_at=utcnow()))

    async def last_known_good(self, host: str, unit: str) -> Revision | None:
        async with self._db.sessions() as s:
            row = await s.scalar(select(UnitRevision).where(
                UnitRevision.host == host, UnitRevision.unit == unit, UnitRevision.known_good.is_(True))
                .order_by(UnitRevision.known_good_at.desc(), UnitRevision.id.desc()).limit(1))
            return None if row is None else _view(row)

    async def drift(self, host: str, unit: str, text: str) -> Revision | None:
        """When `text` (the live unit) is no revision pitcrew ever wrote or saw on this host while it has seen
        others, the revision it was changed from: the last known-good one (what pitcrew last ran there), else the
        newest. None when the text is known, or on first contact."""
        if await self._find(host, unit, unit_hash(text)) is not None:
            return None
        reference = await self.last_known_good(host, unit)
        if reference is None:
            newest = await self.list(host, limit=1)
            reference = newest[0] if newest and newest[0].unit == unit else None
        return reference

    async def baseline(self, host: str, unit: str) -> Revision | None:
        """The host's baseline: the first revision of the unit pitcrew recorded (what labels are named against)."""
        async with self._db.sessions() as s:
            row = await s.scalar(select(UnitRevision).where(UnitRevision.host == host, UnitRevision.unit == unit)
                                 .order_by(UnitRevision.id.asc()).limit(1))
            return None if row is None else _view(row)

    async def list(self, host: str, limit: int = 20) -> list[Revision]:
        async with self._db.sessions() as s:
            rows = (await s.execute(select(UnitRevision).where(UnitRevision.host == host)
                                    .order_by(UnitRevision.id.desc()).limit(limit))).scalars().all()
            return [_view(r) for r in rows]
