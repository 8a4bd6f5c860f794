"""Following one unit's journal on one host, with persisted cursors: no entry lost, none handled twice.

`JournalFollower` keeps one long-lived ``journalctl -u UNIT -o json -f --merge`` over SSH per (host,
unit). ``journalctl -u`` also matches systemd's own messages about the unit (PID 1 with ``UNIT=``) and
journald's ``Suppressed N messages`` about it, so the restart-loop signals arrive on the same stream.
``--merge`` because systemd's ``-f`` without it implies ``-b`` (the current boot only): resuming after
a host reboot would silently skip the rest of the previous boot (journalctl.c, checked with 252).
``--no-tail`` with every start position: systemd's ``-f`` implies ``-n 10`` even after ``--cursor``,
printing 10 entries of the backlog and the rest only when the journal next changes (observed with 252).
Start position:

- with a stored cursor: ``--cursor C`` and the entry C itself (printed first) is skipped. Not
  ``--after-cursor``: when C's entry was vacuumed away, journalctl seeks to the nearest entry and
  ``--after-cursor`` skips one more, so the first entry still in the journal would be lost. When the
  first entry is not C, the stored position is gone: a `JournalGap` (``vacuumed``) names the interval
  between C's time and the first entry found, and following goes on from there;
- a cursor journalctl rejects (``Failed to seek to cursor``: corrupted, or not a cursor) restarts the
  stream with ``--since`` the last entry's time (the cursor's ``t=``, else the stored row's time minus
  the flush interval), never from the journal's start;
- first start (no cursor): from now on (default: the unit's newest entry is read with ``-n 1`` and used
  as the start cursor, so nothing written while ``journalctl -f`` starts is missed; when the unit has no
  entry yet, ``--no-tail``: every entry of it is new. Not ``-n 0``: on a journal without entries,
  systemd's ``-f -n 0`` resolves its tail position only when the first burst arrives and prints just
  the last entry of that burst), or ``-n TAIL`` with ``initial_tail`` > 0 to handle the last entries too.

Entries are ordered by the journal (cursor), never by timestamp, so a wall clock jumping back does
not reorder or repeat anything. A new ``_BOOT_ID`` (the cursor's ``b=``) between two entries publishes
`HostRebooted`; journald's rate-limit report (``N_DROPPED``) publishes a `JournalGap`
(``rate-limited``) and is counted in ``suppressed``.

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

Over 400 lines on purpose (about 90 of them this text): the start positions, the cursor's exactly-once
bookkeeping and the session loop are one state machine over the same few fields; split across modules its
invariants (which cursor is stored, when a gap or a reboot is said) would no longer be readable in one place.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import Awaitable, Callable
from datetime import UTC, datetime
from typing import Protocol

from sqlalchemy import select

from services.errors import CommandFailed, DatabaseUnavailable, HostError, HostKeyMismatch, LeaseLost
from services.events import EventBus
from services.hosts import Host
from services.journal.entries import JournalEntry, parse_entry
from services.journal.types import (
    STATE_PROPERTIES,
    FollowerCounters,
    FollowerStatus,
    HostContactLost,
    HostContactRestored,
    HostRebooted,
    JournalGap,
    UnitState,
    UnitStateRead,
    cursor_field,
    cursor_realtime_us,
    parse_show,
)
from services.retry import Backoff
from services.store import Database, JournalCursor, Lease, db_now, utcnow

__all__ = ["STATE_PROPERTIES", "CursorSink", "FollowerStatus", "HostContactLost", "HostContactRestored",
           "HostRebooted", "JournalFollower", "JournalGap", "LeaseLost", "OnEntry", "UnitState",
           "UnitStateRead", "parse_show"]

SEEK_FAILED = "Failed to seek to cursor"  # journalctl's answer to a cursor it cannot parse

log = logging.getLogger("pitcrew.journal")

OnEntry = Callable[[JournalEntry], Awaitable[None]]


class CursorSink(Protocol):
    """Writes the cursors of many followers in one transaction (see `services.journal.fleet`)."""

    async def flush(self) -> None: ...


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
        self.backoff = Backoff(initial_s=backoff_initial_s, max_s=backoff_max_s)
        self.lost_after_s = lost_after_s
        self.command_timeout_s = command_timeout_s
        self._cursor: str | None = None
        self._stored_cursor: str | None = None
        self._stored_at: datetime | None = None
        self._since_us: int | None = None
        self._resume_from: str | None = None
        self._boot: str | None = None
        self._boot_tag = ""
        self._from_head = False
        self._loaded = False
        self._n = FollowerCounters()
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
        n = self._n
        return FollowerStatus(self.host_name, self.unit, self._connected, n.entries,
                              n.bad_lines, n.handler_errors, n.reconnects,
                              self._cursor, n.last_realtime_us,
                              self._lost_wall if self._lost_announced else None,
                              n.gaps, n.suppressed, n.reboots, n.cursor_rejected)

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
                    if SEEK_FAILED in str(e) and self._cursor is not None:
                        self._cursor_rejected()
                        attempt = -1  # retry at once, from the time
                    else:
                        log.warning("journal %s: %s", self.host_name, e)
                except HostError as e:
                    await self._contact_failed(e)
                finally:
                    self._connected = False
                if self._stop.is_set():
                    break
                attempt = 0 if healthy else attempt + 1
                self._n.reconnects += 1
                delay = self.backoff.delay(attempt)
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
                    row_now = (await s.execute(select(Lease, Lease.expires_at < db_now(self.db))
                                               .where(Lease.name == self._lease_name))).first()
                    if row_now is None or row_now[0].holder != self.holder or row_now[1]:
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
                self._stored_at = row.updated_at
                self._n.stored_entries = int(row.entries or 0)
                self._set_boot(cursor_field(row.cursor, "b"))
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
        argv = ["journalctl", "-u", self.unit, "-o", "json", "-f", "--merge"]
        if self._cursor:
            argv += ["--cursor", self._cursor, "--no-tail"]
        elif self._since_us is not None:
            argv += ["--since", f"@{self._since_us // 1_000_000}.{self._since_us % 1_000_000:06d}", "--no-tail"]
        elif self._from_head:
            argv += ["--no-tail"]
        else:
            argv += ["-n", str(self.initial_tail)]
        return argv

    def _cursor_rejected(self) -> None:
        """journalctl cannot seek to the cursor: start again from the last entry's time instead."""
        cursor = self._cursor or ""
        since = cursor_realtime_us(cursor)
        if since is None and self._n.last_realtime_us is not None:
            since = self._n.last_realtime_us
        if since is None and self._stored_at is not None:
            stored = self._stored_at if self._stored_at.tzinfo else self._stored_at.replace(tzinfo=UTC)
            since = int((stored.timestamp() - self.flush_interval_s - 1.0) * 1e6)
        if since is None:
            since = int(time.time() * 1e6)
        self._n.cursor_rejected += 1
        log.warning("journal %s: journalctl rejected the cursor %.40s; resuming from the time %s",
                    self.host_name, cursor, datetime.fromtimestamp(since / 1e6, UTC).isoformat())
        self._cursor = None
        self._resume_from = None
        self._since_us = since + 1  # the entry at `since` was handled

    def _set_boot(self, boot: str | None) -> None:
        self._boot = boot
        self._boot_tag = f";b={boot};" if boot else ""

    async def _check_position(self, entry: JournalEntry) -> None:
        """First entry after resuming from a cursor that is not that cursor: the position is gone."""
        resumed_from, self._resume_from = self._resume_from, None
        if resumed_from is None or entry.cursor == resumed_from:
            return
        before = cursor_realtime_us(resumed_from)
        since = datetime.fromtimestamp(before / 1e6, UTC) if before is not None else None
        gap = JournalGap(self.host_name, self.unit, since, datetime.fromtimestamp(entry.realtime_us / 1e6, UTC),
                         "vacuumed")
        self._n.gaps += 1
        log.warning("journal %s: the entry of the stored cursor is gone; could not read %s .. %s (%s -> %s)",
                    self.host_name, gap.since, gap.until, resumed_from, entry.cursor)
        if self._bus is not None:
            await self._bus.publish(gap)

    async def _check_boot(self, entry: JournalEntry) -> None:
        boot = cursor_field(entry.cursor, "b")
        previous = self._boot
        self._set_boot(boot)
        if previous is None or boot is None or boot == previous:
            return
        self._n.reboots += 1
        last = self._n.last_realtime_us
        event = HostRebooted(self.host_name, self.unit, previous, boot,
                             datetime.fromtimestamp(last / 1e6, UTC) if last is not None else None,
                             datetime.fromtimestamp(entry.realtime_us / 1e6, UTC))
        log.info("journal %s: host rebooted (boot %s -> %s)", self.host_name, previous[:8], boot[:8])
        if self._bus is not None:
            await self._bus.publish(event)

    async def _suppressed(self, entry: JournalEntry, dropped: str) -> None:
        try:
            n_dropped = int(dropped)
        except ValueError:
            return
        self._n.suppressed += n_dropped
        self._n.gaps += 1
        last = self._n.last_realtime_us
        gap = JournalGap(self.host_name, self.unit, datetime.fromtimestamp(last / 1e6, UTC) if last else None,
                         datetime.fromtimestamp(entry.realtime_us / 1e6, UTC), "rate-limited", n_dropped)
        if self._bus is not None:
            await self._bus.publish(gap)

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
        if self._cursor is None and self._since_us is None and self.initial_tail == 0 and not self._from_head:
            await self._anchor_at_tail()  # once: a reconnect before the first entry keeps the position
        self._connected = True
        before = self._n.entries
        on_entry = self._on_entry
        n = self._n
        self._resume_from = self._cursor
        async with self.host.stream(self._command()) as lines:
            async for line in lines:
                entry = parse_entry(line)
                if entry is None:
                    if line.strip():
                        n.bad_lines += 1
                        log.debug("journal %s: skipped a bad line (%d chars)", self.host_name, len(line))
                    continue
                if self._resume_from is not None:
                    await self._check_position(entry)
                if entry.cursor == self._cursor:
                    continue
                self._since_us = None
                if not self._boot_tag or self._boot_tag not in entry.cursor:
                    await self._check_boot(entry)
                if entry.fields and (dropped := entry.fields.get("N_DROPPED")) is not None:
                    await self._suppressed(entry, dropped)
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
                self._set_boot(cursor_field(entry.cursor, "b"))
                return
        if result.ok:
            self._from_head = True  # the unit has no entry yet: all of its entries are new ones

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
