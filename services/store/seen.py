"""Keys seen by any bot process, until they expire: chat event and interaction ids already answered
(so a retry delivered to another replica is not answered twice) and per-user command counters of
the rate limit (so the limit holds across replicas).

One row per key in `seen_keys`, written with one atomic upsert (``INSERT … ON CONFLICT``, on
PostgreSQL and SQLite alike); expiry is judged by the database's clock (`services.store.leases`).
Expired rows are reused in place and purged now and then.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any

from sqlalchemy import case, delete, select
from sqlalchemy.dialects.postgresql import insert as pg_insert
from sqlalchemy.dialects.sqlite import insert as sqlite_insert

from services.store.db import Database
from services.store.leases import db_after, db_now
from services.store.models import SeenKey


@dataclass(frozen=True)
class Window:
    """A counter's value in its current window and when that window ends."""

    count: int
    ends_at: datetime
    now: datetime


class SeenKeys:
    """First-time checks and windowed counters shared by every process on one database."""

    def __init__(self, db: Database, *, holder: str = "", purge_every: int = 500) -> None:
        self._db = db
        self.holder = holder[:128]
        self._purge_every = purge_every
        self._calls = 0

    def _insert(self, **values: Any) -> Any:
        """The dialect's INSERT (both have ``on_conflict_do_update``)."""
        return (sqlite_insert if self._db.is_sqlite else pg_insert)(SeenKey).values(**values)

    async def first(self, key: str, ttl_s: float) -> bool:
        """True when no process saw `key` in the last `ttl_s` seconds (and records it); False for a repeat."""
        db = self._db
        ins = self._insert(key=key[:200], count=1, holder=self.holder, expires_at=db_after(db, ttl_s))
        stmt = ins.on_conflict_do_update(
            index_elements=[SeenKey.key],
            set_={"count": 1, "holder": ins.excluded.holder, "expires_at": ins.excluded.expires_at},
            where=SeenKey.expires_at < db_now(db),
        ).returning(SeenKey.key)
        async with db.session() as s:
            got = (await s.execute(stmt)).first()
        await self._maybe_purge()
        return got is not None

    async def count(self, key: str, window_s: float) -> Window:
        """Add one to `key`'s counter in its current window (a new window starts when the last one ended)."""
        db = self._db
        ins = self._insert(key=key[:200], count=1, holder=self.holder, expires_at=db_after(db, window_s))
        expired = SeenKey.expires_at < db_now(db)
        stmt = ins.on_conflict_do_update(
            index_elements=[SeenKey.key],
            set_={"count": case((expired, 1), else_=SeenKey.count + 1),
                  "expires_at": case((expired, ins.excluded.expires_at), else_=SeenKey.expires_at)},
        ).returning(SeenKey.count, SeenKey.expires_at)
        async with db.session() as s:
            row = (await s.execute(stmt)).one()
            now = await s.scalar(select(db_now(db)))
        await self._maybe_purge()
        return Window(int(row[0]), row[1], now or row[1])

    async def purge(self) -> int:
        """Delete expired keys; returns how many."""
        async with self._db.session() as s:
            res = await s.execute(delete(SeenKey).where(SeenKey.expires_at < db_now(self._db)))
            return int(res.rowcount or 0)  # type: ignore[attr-defined]

    async def _maybe_purge(self) -> None:
        self._calls += 1
        if self._calls % self._purge_every == 0:
            await self.purge()
