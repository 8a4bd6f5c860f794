"""The journal follower against systemd's own `journalctl` reading a real journal (written by
systemd-journal-remote, `simhost.journal_real`): rotation, vacuum, reboot, wrong cursors, a wall clock
jumping back, journald's rate limiting. Where systemd-journal-remote is not installed (or
``SIMHOST_JOURNAL=python``) the cases that need journal files (rotation, vacuum) are skipped with the reason
shown and the others run against the sim's Python `journalctl`, which must agree with systemd's."""

from __future__ import annotations

import asyncio
import subprocess
import sys
import time
from collections import Counter
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path

import pytest
from incidents_kit import UNIT, JournalHost, RecordingOutbox, spawn_ssh_server, spec_for
from sqlalchemy import select
from support.truth_launch import child_env

from handlers.incident_view import IncidentNotifier
from services.events import EventBus
from services.hosts.ssh import SshHost
from services.journal import HostRebooted, JournalAuditor, JournalEntry, JournalGap
from services.journal.follower import JournalFollower
from services.store import AuditLog, Database, JournalCursor, utcnow
from simhost.journal import COREDUMP_MESSAGE_ID, JournalWriter
from simhost.journal_real import JOURNALCTL, backend, real_dir

real_only = pytest.mark.skipif(
    backend() != "journald",
    reason="no real journal: systemd-journal-remote is not installed (or SIMHOST_JOURNAL=python)")


async def wait_for(cond: Callable[[], bool], limit_s: float, what: str | Callable[[], str]) -> None:
    deadline = time.monotonic() + limit_s
    while not cond():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what() if callable(what) else what}")
        await asyncio.sleep(0.02)


class Seen:
    """Entries handed to the follower's handler, and the events it published (through the chat/audit path)."""

    def __init__(self, db: Database) -> None:
        self.entries: list[JournalEntry] = []
        self.bus = EventBus()
        self.outbox = RecordingOutbox()
        self.events: list[object] = []
        IncidentNotifier(self.outbox, "alerts").subscribe(self.bus)
        JournalAuditor(AuditLog(db)).subscribe(self.bus)
        for kind in (HostRebooted, JournalGap):
            self.bus.subscribe(kind, self._event)

    async def _event(self, ev: object) -> None:
        self.events.append(ev)

    async def on_entry(self, entry: JournalEntry) -> None:
        self.entries.append(entry)

    @property
    def messages(self) -> list[str]:
        return [e.message for e in self.entries]

    def of(self, kind: type) -> list[object]:
        return [e for e in self.events if isinstance(e, kind)]


def write(writer: JournalWriter, tag: str, count: int) -> list[str]:
    out = [f"{tag} {i}" for i in range(count)]
    for msg in out:
        writer.append({"_SYSTEMD_UNIT": UNIT, "_PID": "4242", "_UID": "1000", "_COMM": "python3", "PRIORITY": "6",
                       "_TRANSPORT": "stdout", "SYSLOG_IDENTIFIER": "python3", "MESSAGE": msg})
    return out


def follower(jh: JournalHost, db: Database, seen: Seen, holder: str = "t") -> JournalFollower:
    return JournalFollower(db, jh.host, UNIT, on_entry=seen.on_entry, holder=holder, bus=seen.bus,
                           flush_interval_s=0.1, backoff_initial_s=0.02, backoff_max_s=0.2)


async def start(f: JournalFollower) -> asyncio.Task[None]:
    task = asyncio.create_task(f.run())
    await wait_for(lambda: f.status().connected, 10, "the follower connects")
    await asyncio.sleep(0.3)  # `journalctl -f` runs
    return task


async def stop(f: JournalFollower, task: asyncio.Task[None]) -> None:
    f.stop()
    await asyncio.wait_for(task, 10)


def archived(jh: JournalHost) -> list[Path]:
    return sorted(real_dir(jh.root).glob("system@*.journal"))


@real_only
async def test_rotation_while_following_loses_nothing_and_repeats_nothing(
        journal_host: JournalHost, sqlite_db: Database) -> None:
    seen = Seen(sqlite_db)
    f = follower(journal_host, sqlite_db, seen)
    task = await start(f)
    expected: list[str] = []
    for r in range(3):
        expected += write(journal_host.writer, f"r{r}", 200)
        journal_host.writer.rotate()  # journald's rotation: archived under its journald name, new active file
        await journal_host.server.drop_connections()  # and a reconnect that resumes in an archived file
    expected += write(journal_host.writer, "last", 200)
    await wait_for(lambda: len(seen.entries) >= len(expected), 30,
                   lambda: f"{len(expected)} entries (got {len(seen.entries)})")
    await asyncio.sleep(0.3)
    await stop(f, task)
    assert len(archived(journal_host)) == 3
    assert seen.messages == expected
    assert len({e.cursor for e in seen.entries}) == len(expected)
    assert seen.of(JournalGap) == [] and seen.of(HostRebooted) == []


@real_only
async def test_vacuum_while_stopped_resumes_at_the_oldest_entry_and_names_the_gap_once(
        journal_host: JournalHost, sqlite_db: Database) -> None:
    writer = journal_host.writer
    seen = Seen(sqlite_db)
    writer.clock_offset_s = -30 * 60
    f = follower(journal_host, sqlite_db, seen)
    task = await start(f)
    write(writer, "read", 5)
    await wait_for(lambda: len(seen.entries) == 5, 10, "5 entries")
    await stop(f, task)
    last_read = seen.entries[-1].realtime_us
    # while the bot is down: 10 minutes of entries, then the file holding them is rotated and vacuumed
    for minute in range(10):
        writer.clock_offset_s = -30 * 60 + 60 * minute + 30
        write(writer, f"lost{minute}", 3)
    writer.rotate()
    writer.clock_offset_s = -20 * 60
    kept = write(writer, "kept", 5)
    writer.sync()
    subprocess.run([str(JOURNALCTL), f"--directory={real_dir(journal_host.root)}", "--vacuum-files=1"],
                   capture_output=True, timeout=30, check=True)
    assert archived(journal_host) == []
    seen.entries.clear()
    f = follower(journal_host, sqlite_db, seen, "t2")
    task = await start(f)
    await wait_for(lambda: len(seen.entries) >= 5, 10, "the entries still in the journal")
    await asyncio.sleep(0.3)
    await stop(f, task)
    # the first entry still there is handled (journalctl's --after-cursor would have skipped it)
    assert seen.messages == kept
    gaps = seen.of(JournalGap)
    assert len(gaps) == 1
    gap = gaps[0]
    assert isinstance(gap, JournalGap) and gap.reason == "vacuumed" and gap.partial
    assert gap.since == datetime.fromtimestamp(last_read / 1e6, UTC)
    assert gap.until == datetime.fromtimestamp(seen.entries[0].realtime_us / 1e6, UTC)
    assert 9.9 * 60 < (gap.seconds or 0) < 10.1 * 60
    posted = [s for s in seen.outbox.sent if s.key.startswith("gap:")]
    assert len(posted) == 1
    text = posted[0].reply.text
    span = f"{gap.since:%H:%M}–{gap.until:%H:%M} UTC" if gap.since else ""
    assert "Could not read 10 min" in text and span in text and "partial" in text, text
    audit = await AuditLog(sqlite_db).query()
    assert [(a.action, a.outcome) for a in audit] == [("journal_gap", "partial")]
    assert f.status().gaps == 1


async def test_reboot_while_following_and_while_stopped(journal_host: JournalHost, sqlite_db: Database) -> None:
    writer = journal_host.writer
    seen = Seen(sqlite_db)
    f = follower(journal_host, sqlite_db, seen)
    task = await start(f)
    expected = write(writer, "boot1", 20)
    first_boot = writer.boot_id
    second_boot = writer.reboot()
    expected += write(writer, "boot2", 20)
    await wait_for(lambda: len(seen.entries) >= 40, 10, "both boots' entries")
    await stop(f, task)
    # stopped in boot 2; the host writes more of boot 2, reboots again, writes boot 3: the restart must read
    # the rest of boot 2 too (systemd's `-f` alone would start at the current boot)
    expected += write(writer, "boot2-late", 10)
    third_boot = writer.reboot()
    expected += write(writer, "boot3", 10)
    f = follower(journal_host, sqlite_db, seen, "t2")
    task = await start(f)
    await wait_for(lambda: len(seen.entries) >= len(expected), 10, "the restart's entries")
    await asyncio.sleep(0.3)
    await stop(f, task)
    assert seen.messages == expected
    assert [e.monotonic_us for e in seen.entries][20] < seen.entries[19].monotonic_us  # clock restarted
    reboots = seen.of(HostRebooted)
    assert [(r.previous_boot, r.boot) for r in reboots if isinstance(r, HostRebooted)] == [
        (first_boot, second_boot), (second_boot, third_boot)]
    assert len([s for s in seen.outbox.sent if s.key.startswith("reboot:")]) == 2
    assert "rebooted" in seen.outbox.sent[0].reply.text
    audit = await AuditLog(sqlite_db).query()
    assert sorted(a.action for a in audit) == ["host_rebooted", "host_rebooted"]


async def test_cursor_journalctl_rejects_falls_back_to_the_time_of_the_last_entry(
        journal_host: JournalHost, sqlite_db: Database) -> None:
    writer = journal_host.writer
    write(writer, "old", 30)
    writer.sync()
    await asyncio.sleep(2.0)  # the cursor was stored (flushed) well after the last entry it stands for
    async with sqlite_db.session() as s:
        s.add(JournalCursor(host="sim-1", unit=UNIT, cursor="not-a-cursor;from another tool", entries=30,
                            updated_at=utcnow()))
    newer = write(writer, "new", 10)
    seen = Seen(sqlite_db)
    f = JournalFollower(sqlite_db, journal_host.host, UNIT, on_entry=seen.on_entry, holder="t", bus=seen.bus,
                        flush_interval_s=0.1, backoff_initial_s=0.02)
    task = asyncio.create_task(f.run())
    await wait_for(lambda: len(seen.entries) >= 10, 10, "the entries after the stored time")
    more = write(writer, "live", 5)
    await wait_for(lambda: len(seen.entries) >= 15, 10, "live entries after the fallback")
    await asyncio.sleep(0.3)
    await stop(f, task)
    assert seen.messages == newer + more
    assert f.status().cursor_rejected == 1
    async with sqlite_db.sessions() as s:
        row = (await s.scalars(select(JournalCursor))).one()
    assert row.cursor == seen.entries[-1].cursor


async def test_real_journalctl_answers_a_corrupted_cursor_with_failed_to_seek(journal_host: JournalHost) -> None:
    write(journal_host.writer, "x", 1)
    journal_host.writer.sync()
    result = await journal_host.host.run(["journalctl", "-u", UNIT, "-o", "json", "--cursor", "garbage"], timeout=10)
    assert result.exit_status == 1 and "Failed to seek to cursor" in result.stderr


async def test_clock_jump_backwards_neither_repeats_nor_reorders(journal_host: JournalHost,
                                                                 sqlite_db: Database) -> None:
    writer = journal_host.writer
    seen = Seen(sqlite_db)
    f = follower(journal_host, sqlite_db, seen)
    task = await start(f)
    expected = write(writer, "before", 20)
    writer.clock_offset_s = -5 * 60  # the wall clock jumps back by 5 minutes
    expected += write(writer, "after-jump", 20)
    await wait_for(lambda: len(seen.entries) >= 30, 10, "entries around the jump")
    await journal_host.server.drop_connections()
    expected += write(writer, "after-cut", 20)
    await wait_for(lambda: len(seen.entries) >= 60, 10, "entries after the cut")
    await asyncio.sleep(0.3)
    await stop(f, task)
    assert seen.messages == expected
    times = [e.realtime_us for e in seen.entries]
    assert times[20] < times[19] - 4 * 60 * 1_000_000
    assert f.status().reconnects >= 1 and seen.of(JournalGap) == []


async def test_rate_limited_messages_are_counted_and_surfaced_as_a_gap(journal_host: JournalHost,
                                                                       sqlite_db: Database) -> None:
    writer = journal_host.writer
    seen = Seen(sqlite_db)
    f = follower(journal_host, sqlite_db, seen)
    task = await start(f)
    write(writer, "burst", 5)
    writer.suppressed(UNIT, 1234)
    writer.suppressed("other.service", 99)  # not this unit: `journalctl -u` does not show it
    write(writer, "after", 2)
    await wait_for(lambda: len(seen.entries) >= 8, 10, "the burst, journald's report and what follows")
    await asyncio.sleep(0.3)
    await stop(f, task)
    assert seen.messages[5] == f"Suppressed 1234 messages from {UNIT}"
    assert len(seen.entries) == 8
    assert f.status().suppressed == 1234
    gaps = [g for g in seen.of(JournalGap) if isinstance(g, JournalGap)]
    assert [(g.reason, g.dropped) for g in gaps] == [("rate-limited", 1234)]
    texts = [s.reply.text for s in seen.outbox.sent if s.key.startswith("gap:")]
    assert len(texts) == 1 and "suppressed 1234 messages" in texts[0]


async def test_unit_matching_is_systemds_own(journal_host: JournalHost) -> None:
    """`journalctl -u` matches the unit's own lines, PID 1's messages about it (`UNIT=`), journald's
    `OBJECT_SYSTEMD_UNIT=` reports and systemd-coredump's `COREDUMP_UNIT=` (with its MESSAGE_ID); not another
    unit's lines or a non-root object."""
    w = journal_host.writer
    w.append({"_SYSTEMD_UNIT": UNIT, "_PID": "7", "MESSAGE": "own line"})
    w.append({"_SYSTEMD_UNIT": "init.scope", "_PID": "1", "_UID": "0", "_COMM": "systemd", "UNIT": UNIT,
              "SYSLOG_IDENTIFIER": "systemd", "_TRANSPORT": "journal", "MESSAGE": f"{UNIT}: Main process exited"})
    w.suppressed(UNIT, 3)
    w.append({"_SYSTEMD_UNIT": "systemd-coredump@0.service", "_PID": "99", "_UID": "0", "COREDUMP_UNIT": UNIT,
              "MESSAGE_ID": COREDUMP_MESSAGE_ID, "MESSAGE": "Process 7 (python3) dumped core."})
    w.append({"_SYSTEMD_UNIT": "other.service", "_PID": "8", "MESSAGE": "other unit"})
    w.append({"_SYSTEMD_UNIT": "user.service", "_PID": "9", "_UID": "1000", "OBJECT_SYSTEMD_UNIT": UNIT,
              "MESSAGE": "not root"})
    w.sync()
    result = await journal_host.host.run(["journalctl", "-u", UNIT, "-o", "cat", "--no-pager"], timeout=10)
    assert result.stdout.splitlines() == ["own line", f"{UNIT}: Main process exited",
                                          f"Suppressed 3 messages from {UNIT}", "Process 7 (python3) dumped core."]


@real_only
@pytest.mark.slow
async def test_small_flood_with_cuts_and_rotations_is_handled_exactly_once(tmp_path: Path,
                                                                           sqlite_db: Database) -> None:
    """The acceptance run in small (the full one: `benchmarks/bench_journal_real.py`): 10,000 entries,
    4 SSH cuts, 3 rotations while the follower reads; checked by count and by the real cursors' seqnums."""
    root = tmp_path / "flood-host"
    server = await spawn_ssh_server(root)
    host = SshHost(spec_for("sim-1", root, server.port), keepalive_interval=2.0, keepalive_count_max=2)
    entries: list[JournalEntry] = []

    async def on_entry(entry: JournalEntry) -> None:
        entries.append(entry)

    try:
        f = JournalFollower(sqlite_db, host, UNIT, on_entry=on_entry, holder="t", flush_interval_s=0.2,
                            backoff_initial_s=0.02, backoff_max_s=0.2)
        task = asyncio.create_task(f.run())
        await wait_for(lambda: f.status().connected, 10, "the first connection")
        await asyncio.sleep(0.3)
        total, cuts = 10_000, 4
        flood = await asyncio.create_subprocess_exec(
            sys.executable, "-m", "support.journal_flood", str(root), UNIT, str(total), "--rate", "5000",
            "--rotate-every", str(total // 4 + 1), stdout=asyncio.subprocess.PIPE, env=child_env())
        for n in range(cuts):
            mark = (n + 1) * total // (cuts + 1)
            await wait_for(lambda m=mark: len(entries) > m, 30, f"progress past {mark}")  # type: ignore[misc]
            # a cut lands on a live connection only once the follower is back from the previous one (it reads fast
            # enough after a reconnect to pass the next mark first: 3 reconnects for 4 cuts, seen in the suite)
            await wait_for(lambda k=n: f.status().connected and f.status().reconnects >= k, 30,  # type: ignore[misc]
                           f"reconnected after cut {n}")
            server.drop_connections()
        out, _ = await flood.communicate()
        assert flood.returncode == 0, out
        await wait_for(lambda: len(entries) >= total, 30, lambda: f"{total} entries (got {len(entries)})")
        await asyncio.sleep(0.3)
        await stop(f, task)
        assert f.status().reconnects >= cuts
        truth = [line for line in subprocess.run(
            [str(JOURNALCTL), f"--directory={real_dir(root)}", "-u", UNIT, "-o", "cat"], capture_output=True,
            text=True, timeout=60, check=True).stdout.splitlines()]
        assert len(truth) == total and len(list(real_dir(root).glob("system@*.journal"))) == 3
        assert [e.message for e in entries] == truth
        keys = [(e.cursor.split(";")[0], e.cursor.split(";")[1]) for e in entries]  # (seqnum id, seqnum)
        assert len(set(keys)) == total
        by_file = Counter(k[0] for k in keys)
        assert len(by_file) == 4
        for seqnum_id in by_file:
            seqnums = [int(k[1][2:], 16) for k in keys if k[0] == seqnum_id]
            assert seqnums == list(range(seqnums[0], seqnums[0] + len(seqnums)))
    finally:
        await host.close()
        await server.close()
