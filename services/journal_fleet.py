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

from services.db import Database
from services.events import EventBus
from services.hosts import Host
from services.journal import FollowerStatus, JournalFollower
from services.journal_format import JournalEntry
from services.leases import Leases

log = logging.getLogger("pitcrew.journal")

OnEntryFactory = Callable[[str, str], Callable[[JournalEntry], Awaitable[None]]]


def lease_name(host: str) -> str:
    return f"journal:{host}"


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
        try:
            while not self._stopped:
                try:
                    await self.tick()
                except Exception:
                    log.exception("journal supervisor tick failed")
                await asyncio.sleep(self.heartbeat_s)
        finally:
            await self.close()

    async def tick(self) -> None:
        hosts = {h.spec.name: h for h in self._hosts()}
        for name, r in list(self._running.items()):
            if r.task.done() or name not in hosts:
                await self._drop(name, release=True)
                continue
            if not await self.leases.renew(lease_name(name), self.holder):
                log.warning("journal lease of %s lost; stopping its follower", name)
                await self._drop(name, release=False)
        for name, host in hosts.items():
            if name in self._running or self._stopped:
                continue
            if await self.leases.acquire(lease_name(name), self.holder):
                self._start(host)

    def _start(self, host: Host) -> None:
        name, unit = host.spec.name, host.spec.unit
        follower = JournalFollower(self.db, host, unit, on_entry=self._on_entry_for(name, unit),
                                   holder=self.holder, bus=self._bus, lease_name=lease_name(name),
                                   **self._options)
        task = asyncio.create_task(follower.run(), name=f"journal:{name}")
        self._running[name] = _Running(follower, task)
        log.info("following the journal of %s (%s) as %s", name, unit, self.holder)

    async def _drop(self, name: str, *, release: bool) -> None:
        r = self._running.pop(name, None)
        if r is None:
            return
        r.follower.stop()
        with contextlib.suppress(Exception):
            await asyncio.wait_for(asyncio.shield(r.task), 10)
        if not r.task.done():
            r.task.cancel()
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await r.task
        if release:
            with contextlib.suppress(Exception):
                await self.leases.release(lease_name(name), self.holder)

    async def close(self) -> None:
        """Stop every follower (cursors flushed) and release the leases."""
        self._stopped = True
        await asyncio.gather(*(self._drop(name, release=True) for name in list(self._running)))
