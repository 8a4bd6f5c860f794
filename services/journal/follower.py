"""Following one unit's journal on one host, with persisted cursors: no entry lost, none handled twice.

`JournalFollower` keeps one long-lived ``journalctl -u UNIT -o json -f`` over SSH per (host, unit).
``journalctl -u`` also matches systemd's own messages about the unit (PID 1 with ``UNIT=``), so the
restart-loop signals arrive on the same stream. Start position:

- with a stored cursor: ``--after-cursor C`` (resumes exactly after the last processed entry);
- first start (no cursor): from now on (default: the unit's newest entry is read with ``-n 1`` and used
  as the start cursor, so nothing written while ``journalctl -f`` starts is missed; with an empty
  journal ``-n 0``), or ``-n TAIL`` with ``initial_tail`` > 0 to handle the last entries too.

Exactly once: entries are handed to ``on_entry`` one at a time, in journal order; the cursor
advances only after ``on_entry`` returned, and is persisted (batched, at least every
``flush_interval_s``, and on stop) to ``journal_cursors``. A reconnect resumes from the in-memory
cursor, a bot restart from the stored one. A process killed between a flush and the next can see
at most ``flush_interval_s`` of entries again: consumers that must survive ``kill -9`` dedupe by
cursor or invocation id (the incident monitor does). When the follower holds a lease
(``lease_name``), the cursor write is fenced by it: a follower that lost its lease stops without
writing, so two bot processes never both advance a host's cursor.

Defensive parsing (`services.journal.entries.parse_entry`): lines that are not journal records are
counted in ``bad_lines`` and skipped. ``on_entry`` raising `DatabaseUnavailable` ends the session
and the entry is delivered again after reconnecting; any other exception is logged, counted in
``handler_errors`` and the entry is skipped (a bug must not stall the host's journal).

Reconnects back off exponentially with full jitter. A host that stays unreachable for
``lost_after_s`` publishes `HostContactLost` (once), and `HostContactRestored` when it answers
again. ``systemctl show`` is read on every connect and after each systemd message about the
unit (coalesced), and published as `UnitStateRead`.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import random
import time
from collections.abc import Awaitable, Callable
from datetime import UTC, datetime
from typing import Protocol

from sqlalchemy import select

from services.errors import CommandFailed, DatabaseUnavailable, HostError, HostKeyMismatch, PitcrewError
from services.events import EventBus
from services.hosts import Host
from services.journal.entries import JournalEntry, parse_entry
from services.journal.types import (
    STATE_PROPERTIES,
    FollowerStatus,
    HostContactLost,
    HostContactRestored,
    UnitState,
    UnitStateRead,
    _Counters,
    parse_show,
)
from services.store import Database, JournalCursor, Lease, utcnow

__all__ = ["STATE_PROPERTIES", "CursorSink", "FollowerStatus", "HostContactLost", "HostContactRestored",
           "JournalFollower", "LeaseLost", "OnEntry", "UnitState", "UnitStateRead", "parse_show"]

log = logging.getLogger("pitcrew.journal")

OnEntry = Callable[[JournalEntry], Awaitable[None]]


class CursorSink(Protocol):
    """Writes the cursors of many followers in one transaction (see `services.journal.fleet`)."""

    async def flush(self) -> None: ...


class LeaseLost(PitcrewError):
    """This process no longer holds the lease for a host's journal."""


class JournalFollower:
    """Follows ``unit``'s journal on ``host``; see the module docstring for the guarantees."""

    def __init__(
        self,
        db: Database,
        host: Host,
        unit: str,
        *,
        on_entry: OnEntry,
        holder: str,
        bus: EventBus | None = None,
        lease_name: str | None = None,
        flush_interval_s: float = 1.0,
        initial_tail: int = 0,
        backoff_initial_s: float = 0.2,
        backoff_max_s: float = 30.0,
        lost_after_s: float = 60.0,
        command_timeout_s: float = 10.0,
        sink: CursorSink | None = None,
    ) -> None:
        self.db = db
        self.host = host
        self.host_name = host.spec.name
        self.unit = unit
        self.holder = holder
        self._on_entry = on_entry
        self._bus = bus
        self._lease_name = lease_name
        self.flush_interval_s = flush_interval_s
        self.initial_tail = max(0, int(initial_tail))
        self.backoff_initial_s = backoff_initial_s
        self.backoff_max_s = backoff_max_s
        self.lost_after_s = lost_after_s
        self.command_timeout_s = command_timeout_s
        self._cursor: str | None = None
        self._stored_cursor: str | None = None
        self._loaded = False
        self._n = _Counters()
        self._connected = False
        self._lost_mono: float | None = None
        self._lost_wall: datetime | None = None
        self._lost_announced = False
        self._stop = asyncio.Event()
        self._idle = asyncio.Event()
        self._idle.set()
        self._state_task: asyncio.Task[None] | None = None
        self._state_dirty = False
        self._flush_lock = asyncio.Lock()
        self._sink = sink
        self.last_state: UnitState | None = None

    # -- public ---------------------------------------------------------------------------------

    @property
    def cursor(self) -> str | None:
        return self._cursor

    def status(self) -> FollowerStatus:
        return FollowerStatus(self.host_name, self.unit, self._connected, self._n.entries,
                              self._n.bad_lines, self._n.handler_errors, self._n.reconnects,
                              self._cursor, self._n.last_realtime_us,
                              self._lost_wall if self._lost_announced else None)

    def stop(self) -> None:
        """Ask `run` to end (it flushes the cursor before returning)."""
        self._stop.set()

    async def run(self) -> None:
        """Follow until `stop()` (or cancellation, or the lease is lost); always flushes on exit."""
        flusher = asyncio.create_task(self._flush_loop(), name=f"journal-flush:{self.host_name}")
        if self._sink is not None:
            flusher.cancel()  # the shared sink flushes every follower's cursor in one transaction
        try:
            await self._load_cursor()
            attempt = 0
            while not self._stop.is_set():
                healthy = False
                try:
                    healthy = await self._session_until_stopped()
                except LeaseLost:
                    log.info("journal %s: lease lost, stopping", self.host_name)
                    return
                except DatabaseUnavailable as e:
                    log.warning("journal %s: database unavailable (%s); will resume from the cursor",
                                self.host_name, e)
                except CommandFailed as e:
                    log.warning("journal %s: %s", self.host_name, e)
                except HostError as e:
                    await self._contact_failed(e)
                finally:
                    self._connected = False
                if self._stop.is_set():
                    break
                attempt = 0 if healthy else attempt + 1
                self._n.reconnects += 1
                delay = random.uniform(0, min(self.backoff_max_s, self.backoff_initial_s * 2 ** attempt))
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(self._stop.wait(), delay)
        finally:
            flusher.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await flusher
            if self._state_task is not None:
                self._state_task.cancel()
            with contextlib.suppress(Exception):
                await asyncio.shield(self.flush())

    async def flush(self) -> None:
        """Persist the cursor of the last processed entry (no-op when unchanged)."""
        if self._sink is not None:
            await self._sink.flush()
            return
        async with self._flush_lock:
            cursor = self._cursor
            if cursor is None or cursor == self._stored_cursor:
                return
            count = self._n.stored_entries + self._n.entries
            async with self.db.session() as s:
                if self._lease_name is not None:
                    lease = await s.scalar(select(Lease).where(Lease.name == self._lease_name))
                    if lease is None or lease.holder != self.holder or lease.expires_at < utcnow():
                        self._stop.set()
                        raise LeaseLost(f"lease {self._lease_name} is not held by {self.holder}")
                row = await s.get(JournalCursor, (self.host_name, self.unit))
                if row is None:
                    s.add(JournalCursor(host=self.host_name, unit=self.unit, cursor=cursor, entries=count,
                                        updated_at=utcnow()))
                else:
                    row.cursor = cursor
                    row.entries = count
                    row.updated_at = utcnow()
            self._stored_cursor = cursor

    # -- for a shared cursor sink -----------------------------------------------------------------

    @property
    def lease_name(self) -> str | None:
        return self._lease_name

    def pending_cursor(self) -> tuple[str, int] | None:
        """(cursor, total entries) when the cursor moved since it was last stored."""
        cursor = self._cursor
        if cursor is None or cursor == self._stored_cursor or not self._loaded:
            return None
        return cursor, self._n.stored_entries + self._n.entries

    def cursor_stored(self, cursor: str) -> None:
        self._stored_cursor = cursor

    def lease_lost(self) -> None:
        """The sink found this follower's lease gone: stop without writing the cursor again."""
        self._stop.set()

    # -- internals ------------------------------------------------------------------------------

    async def _load_cursor(self) -> None:
        if self._loaded:
            return
        async with self.db.sessions() as s:
            row = await s.get(JournalCursor, (self.host_name, self.unit))
            if row is not None:
                self._cursor = self._stored_cursor = row.cursor
                self._n.stored_entries = int(row.entries or 0)
        self._loaded = True

    async def _flush_loop(self) -> None:
        while True:
            await asyncio.sleep(self.flush_interval_s)
            try:
                await self.flush()
            except LeaseLost:
                return
            except Exception as e:  # keep flushing; the next tick retries
                log.warning("journal %s: cursor flush failed: %s", self.host_name, e)

    def _command(self) -> list[str]:
        argv = ["journalctl", "-u", self.unit, "-o", "json", "-f"]
        if self._cursor:
            argv += ["--after-cursor", self._cursor]
        else:
            argv += ["-n", str(self.initial_tail)]
        return argv

    async def _session_until_stopped(self) -> bool:
        """Run one session; `stop()` ends it, but never while an entry is being handled."""
        session = asyncio.create_task(self._session())
        stopper = asyncio.create_task(self._stop.wait())
        try:
            await asyncio.wait({session, stopper}, return_when=asyncio.FIRST_COMPLETED)
            if not session.done():
                await self._idle.wait()
                session.cancel()
                with contextlib.suppress(asyncio.CancelledError):
                    await session
                return False
            return session.result()
        finally:
            stopper.cancel()
            if not session.done():
                session.cancel()
                with contextlib.suppress(asyncio.CancelledError, Exception):
                    await session

    async def _session(self) -> bool:
        """One connection: read the unit state, then stream. True when entries were processed."""
        await self._read_state()
        await self._contact_ok()
        if self._cursor is None and self.initial_tail == 0:
            await self._anchor_at_tail()
        self._connected = True
        before = self._n.entries
        on_entry = self._on_entry
        n = self._n
        async with self.host.stream(self._command()) as lines:
            async for line in lines:
                entry = parse_entry(line)
                if entry is None:
                    if line.strip():
                        n.bad_lines += 1
                        log.debug("journal %s: skipped a bad line (%d chars)", self.host_name, len(line))
                    continue
                if entry.cursor == self._cursor:
                    continue
                self._idle.clear()
                try:
                    await on_entry(entry)
                except DatabaseUnavailable:
                    raise
                except Exception:
                    n.handler_errors += 1
                    log.exception("journal %s: entry handler failed; entry skipped", self.host_name)
                finally:
                    self._idle.set()
                self._cursor = entry.cursor
                n.entries += 1
                n.last_realtime_us = entry.realtime_us
                if entry.pid == 1 or entry.identifier == "systemd":
                    self._schedule_state_read()
        return n.entries > before

    async def _anchor_at_tail(self) -> None:
        """First start: take the unit's newest entry as the start point, so that following "from now"
        has no gap even if entries arrive before `journalctl -f` runs (the entry itself is not handled)."""
        argv = ["journalctl", "-u", self.unit, "-o", "json", "-n", "1", "--no-pager"]
        result = await self.host.run(argv, timeout=self.command_timeout_s)
        for line in reversed(result.stdout.splitlines()):
            entry = parse_entry(line)
            if entry is not None:
                self._cursor = entry.cursor
                return

    async def _read_state(self) -> UnitState | None:
        """Read and publish the unit's state; None when `systemctl show` failed on a reachable host."""
        argv = ["systemctl", "show", self.unit, "-p", ",".join(STATE_PROPERTIES)]
        result = await self.host.run(argv, timeout=self.command_timeout_s)
        if not result.ok:
            log.info("journal %s: systemctl show %s exited %d", self.host_name, self.unit, result.exit_status)
            return None
        state = UnitState(parse_show(result.stdout), datetime.now(UTC))
        self.last_state = state
        if self._bus is not None:
            await self._bus.publish(UnitStateRead(self.host_name, self.unit, state))
        return state

    def _schedule_state_read(self) -> None:
        if self._state_task is not None and not self._state_task.done():
            self._state_dirty = True
            return
        self._state_task = asyncio.create_task(self._state_reader())

    async def _state_reader(self) -> None:
        while True:
            self._state_dirty = False
            try:
                await self._read_state()
            except (HostError, OSError) as e:
                log.debug("journal %s: state read failed: %s", self.host_name, e)
            if not self._state_dirty:
                return

    async def _contact_ok(self) -> None:
        if self._lost_announced and self._bus is not None and self._lost_wall is not None:
            await self._bus.publish(HostContactRestored(self.host_name, self._lost_wall, datetime.now(UTC)))
        self._lost_mono = None
        self._lost_wall = None
        self._lost_announced = False

    async def _contact_failed(self, error: HostError) -> None:
        now = time.monotonic()
        if self._lost_mono is None:
            self._lost_mono = now
            self._lost_wall = datetime.now(UTC)
        log.info("journal %s: %s", self.host_name, error)
        lost_for = now - self._lost_mono
        if (not self._lost_announced and (lost_for >= self.lost_after_s or isinstance(error, HostKeyMismatch))
                and self._lost_wall is not None):
            self._lost_announced = True
            if self._bus is not None:
                await self._bus.publish(HostContactLost(self.host_name, self._lost_wall, str(error)))
