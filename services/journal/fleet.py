"""Following the whole fleet's journals from one or several bot processes, one follower per host.

`JournalSupervisor` runs one `JournalFollower` task per host whose lease ``journal:<host>`` it holds.
Every ``heartbeat_s`` it renews the leases it holds and tries to acquire the others; a lease that
could not be renewed stops its follower (which then refuses to write its cursor: the cursor write is
fenced by the lease). A bot process that dies stops heartbeating; its leases lapse after
``lease_ttl_s`` and another process takes the hosts over at its next tick, resuming from the stored
cursors — failover within ``lease_ttl_s + heartbeat_s`` (10 + 3 s by default). On SQLite there is
one bot process, so the leases are simply always held.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Awaitable, Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from sqlalchemy import select, update

from services.events import EventBus
from services.hosts import Host
from services.journal.entries import JournalEntry
from services.journal.follower import FollowerStatus, JournalFollower
from services.store import Database, JournalCursor, Lease, Leases, db_after, db_now, utcnow

log = logging.getLogger("pitcrew.journal")

OnEntryFactory = Callable[[str, str], Callable[[JournalEntry], Awaitable[None]]]


def lease_name(host: str) -> str:
    return f"journal:{host}"


class BatchCursorSink:
    """Writes every follower's moved cursor in ONE transaction (a fleet of 100 hosts would otherwise
    make 100 small write transactions per second). Each write is fenced by the follower's lease: a
    follower whose lease is not held (by this holder, unexpired) is told to stop and is not written."""

    def __init__(self, db: Database, holder: str) -> None:
        self.db = db
        self.holder = holder
        self.followers: dict[str, JournalFollower] = {}
        self._lock = asyncio.Lock()

    async def flush(self) -> None:
        async with self._lock:
            dirty = [(f, p) for f in list(self.followers.values()) if (p := f.pending_cursor()) is not None]
            if not dirty:
                return
            written: list[tuple[JournalFollower, str]] = []
            async with self.db.session() as s:
                names = [f.lease_name for f, _ in dirty if f.lease_name]
                held: set[str] = set()
                if names:
                    now = utcnow()
                    rows = (await s.execute(select(Lease).where(Lease.name.in_(names)))).scalars().all()
                    held = {r.name for r in rows if r.holder == self.holder and r.expires_at >= now}
                keys = [(f.host_name, f.unit) for f, _ in dirty]
                existing = {(r.host, r.unit): r for r in (await s.execute(select(JournalCursor).where(
                    JournalCursor.host.in_([k[0] for k in keys])))).scalars().all()}
                for f, (cursor, count) in dirty:
                    if f.lease_name and f.lease_name not in held:
                        f.lease_lost()
                        continue
                    row = existing.get((f.host_name, f.unit))
                    if row is None:
                        s.add(JournalCursor(host=f.host_name, unit=f.unit, cursor=cursor, entries=count,
                                            updated_at=utcnow()))
                    else:
                        row.cursor, row.entries, row.updated_at = cursor, count, utcnow()
                    written.append((f, cursor))
            for f, cursor in written:
                f.cursor_stored(cursor)

    async def run(self, interval_s: float = 1.0) -> None:
        while True:
            await asyncio.sleep(interval_s)
            try:
                await self.flush()
            except Exception as e:  # the next tick retries
                log.warning("journal cursor flush failed: %s", e)


@dataclass
class _Running:
    follower: JournalFollower
    task: asyncio.Task[None]


class JournalSupervisor:
    """Keeps one follower per leased host running; see the module docstring."""

    def __init__(self, db: Database, hosts: Iterable[Host] | Callable[[], Iterable[Host]], *, holder: str,
                 on_entry_for: OnEntryFactory, bus: EventBus | None = None, lease_ttl_s: float = 10.0,
                 heartbeat_s: float = 3.0, follower_options: Mapping[str, Any] | None = None) -> None:
        self.db = db
        self.holder = holder
        if callable(hosts):
            self._hosts: Callable[[], Iterable[Host]] = hosts
        else:
            fixed = tuple(hosts)
            self._hosts = lambda: fixed
        self._on_entry_for = on_entry_for
        self._bus = bus
        self.leases = Leases(db, ttl_s=lease_ttl_s)
        self.heartbeat_s = heartbeat_s
        self._options = dict(follower_options or {})
        self._running: dict[str, _Running] = {}
        self._stopped = False
        self.sink = BatchCursorSink(db, holder)
        self._flush_interval_s = float(self._options.pop("flush_interval_s", 1.0))

    def owned(self) -> set[str]:
        """The hosts whose journal this process follows now."""
        return set(self._running)

    def statuses(self) -> list[FollowerStatus]:
        return [r.follower.status() for _, r in sorted(self._running.items())]

    def follower(self, host: str) -> JournalFollower | None:
        r = self._running.get(host)
        return r.follower if r is not None else None

    async def run(self) -> None:
        """Tick until cancelled; on the way out every follower is stopped and its lease released."""
        flusher = asyncio.create_task(self.sink.run(self._flush_interval_s))
        try:
            while not self._stopped:
                try:
                    await self.tick()
                except Exception:
                    log.exception("journal supervisor tick failed")
                await asyncio.sleep(self.heartbeat_s)
        finally:
            flusher.cancel()
            await self.close()

    async def tick(self) -> None:
        hosts = {h.spec.name: h for h in self._hosts()}
        for name, r in list(self._running.items()):
            if r.task.done() or name not in hosts:
                await self._drop(name, release=True)
        lost = await self._renew_all(sorted(self._running))
        for name in lost:
            log.warning("journal lease of %s lost; stopping its follower", name)
            await self._drop(name, release=False)
        if self._stopped:
            return
        wanted = [n for n in hosts if n not in self._running]
        if not wanted:
            return
        async with self.db.sessions() as s:
            rows = (await s.execute(select(Lease.name, Lease.holder, Lease.expires_at < db_now(self.db)).where(
                Lease.name.in_([lease_name(n) for n in wanted])))).all()
            taken = {name for name, holder, expired in rows if not expired and holder != self.holder}
        for name in wanted:
            if lease_name(name) not in taken and await self.leases.acquire(lease_name(name), self.holder):
                self._start(hosts[name])

    async def _renew_all(self, names: list[str]) -> list[str]:
        """Heartbeat every held lease in one statement; the names whose lease is no longer ours."""
        if not names:
            return []
        leases = [lease_name(n) for n in names]
        async with self.db.session() as s:
            res = await s.execute(update(Lease).where(Lease.name.in_(leases), Lease.holder == self.holder).values(
                heartbeat_at=db_now(self.db), expires_at=db_after(self.db, self.leases.ttl_s)))
            if res.rowcount == len(leases):  # type: ignore[attr-defined]
                return []
            ours = set((await s.execute(select(Lease.name).where(Lease.name.in_(leases),
                                                                 Lease.holder == self.holder))).scalars())
        return [n for n in names if lease_name(n) not in ours]

    def _start(self, host: Host) -> None:
        name, unit = host.spec.name, host.spec.unit
        follower = JournalFollower(self.db, host, unit, on_entry=self._on_entry_for(name, unit),
                                   holder=self.holder, bus=self._bus, lease_name=lease_name(name),
                                   sink=self.sink, **self._options)
        self.sink.followers[name] = follower
        task = asyncio.create_task(follower.run(), name=f"journal:{name}")
        self._running[name] = _Running(follower, task)
        log.info("following the journal of %s (%s) as %s", name, unit, self.holder)

    async def _drop(self, name: str, *, release: bool) -> None:
        r = self._running.pop(name, None)
        if r is None:
            return
        if not release:
            r.follower.lease_lost()
        r.follower.stop()
        with contextlib.suppress(Exception):
            await asyncio.wait_for(asyncio.shield(r.task), 10)
        if not r.task.done():
            r.task.cancel()
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await r.task
        self.sink.followers.pop(name, None)
        if release:
            with contextlib.suppress(Exception):
                await self.leases.release(lease_name(name), self.holder)

    async def close(self) -> None:
        """Stop every follower (cursors flushed) and release the leases."""
        self._stopped = True
        await asyncio.gather(*(self._drop(name, release=True) for name in list(self._running)))
