"""The journal follower against the sim's SSH server and `journalctl`: exactly-once delivery across
connection cuts and restarts, persisted cursors, bad lines skipped, contact loss announced."""

from __future__ import annotations

import asyncio
import sys
import time
from collections.abc import Awaitable, Callable
from pathlib import Path

import pytest
from incidents_kit import UNIT, JournalHost, spawn_ssh_server, spec_for, start_journal_host, stop_journal_host
from support.stacks import finish_within
from support.truth_launch import child_env

from services.errors import DatabaseUnavailable
from services.events import EventBus
from services.hosts.ssh import SshHost
from services.journal.entries import JournalEntry
from services.journal.follower import HostContactLost, HostContactRestored, JournalFollower
from services.store.db import Database
from services.store.models import JournalCursor
from simhost.journal import JournalWriter, cursor_seqnum


def write(jh: JournalHost, start: int, count: int, unit: str = UNIT) -> None:
    for i in range(start, start + count):
        jh.writer.append({"_SYSTEMD_UNIT": unit, "_PID": "4242", "PRIORITY": "6", "_TRANSPORT": "stdout",
                          "SYSLOG_IDENTIFIER": "python3", "MESSAGE": f"line {i}"})


async def until(cond: Callable[[], bool], limit_s: float, what: str | Callable[[], str]) -> None:
    deadline = time.monotonic() + limit_s
    while not cond():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what() if callable(what) else what}")
        await asyncio.sleep(0.02)


async def warm_up(jh: JournalHost | JournalWriter, seen: list[int]) -> int:
    """Write marker entries until the follower shows one (a first start follows from now: `-n 0`)."""
    deadline = time.monotonic() + 10
    written = 0
    while not seen:
        assert time.monotonic() < deadline, "follower never started"
        (jh if isinstance(jh, JournalWriter) else jh.writer).append({"_SYSTEMD_UNIT": UNIT, "MESSAGE": "warm-up"})
        written += 1
        await asyncio.sleep(0.1)
    await asyncio.sleep(0.15)
    return len(seen)


def recorder(seen: list[int], messages: list[str] | None = None) -> Callable[[JournalEntry], Awaitable[None]]:
    async def on_entry(entry: JournalEntry) -> None:
        seq = cursor_seqnum(entry.cursor)
        assert seq is not None
        seen.append(seq)
        if messages is not None:
            messages.append(entry.message)
    return on_entry


async def stored(db: Database, host: str) -> JournalCursor | None:
    async with db.sessions() as s:
        return await s.get(JournalCursor, (host, UNIT))


@pytest.mark.slow
async def test_flood_with_20_connection_cuts_processes_every_entry_exactly_once(
        tmp_path: Path, sqlite_db: Database) -> None:
    root = tmp_path / "flood-host"
    server = await spawn_ssh_server(root)
    host = SshHost(spec_for("sim-1", root, server.port), keepalive_interval=2.0, keepalive_count_max=2)
    try:
        seen: list[int] = []
        follower = JournalFollower(sqlite_db, host, UNIT, on_entry=recorder(seen), holder="t1",
                                   flush_interval_s=0.2, backoff_initial_s=0.02, backoff_max_s=0.2)
        task = asyncio.create_task(follower.run())
        await until(lambda: follower.status().connected, 10, "the first connection")
        writer = JournalWriter(root, "sim-1")
        base = await warm_up(writer, seen)
        writer.close()
        total, cuts = 100_000, 20
        chunk = total // cuts
        flood = await asyncio.create_subprocess_exec(
            sys.executable, "-m", "support.journal_flood", str(root), UNIT, str(total),
            stdout=asyncio.subprocess.PIPE, env=child_env())
        for n in range(cuts):
            # cut while the follower is mid-stream: after it took some of this slice of the flood
            mark = base + n * chunk + chunk // 4
            await until(lambda m=mark: len(seen) > m, 30, f"progress past {mark}")  # type: ignore[misc]
            server.drop_connections()
        out, _ = await flood.communicate()
        assert flood.returncode == 0 and int(out) == seen[base - 1] + total
        await until(lambda: len(seen) >= base + total, 45, lambda: f"{total} entries (got {len(seen) - base})")
        await asyncio.sleep(0.3)  # nothing extra may arrive
        follower.stop()
        await asyncio.wait_for(task, 10)
        assert len(seen) == base + total
        assert seen == list(range(seen[0], seen[0] + base + total)), "cursor sequence has a gap or a duplicate"
        assert follower.status().reconnects >= cuts
        row = await stored(sqlite_db, "sim-1")
        assert row is not None and cursor_seqnum(row.cursor) == seen[-1] and row.entries == base + total
    finally:
        await host.close()
        await server.close()


async def test_restart_resumes_from_stored_cursor_and_handler_db_outage_redelivers(
        journal_host: JournalHost, sqlite_db: Database) -> None:
    seen: list[int] = []
    first = JournalFollower(sqlite_db, journal_host.host, UNIT, on_entry=recorder(seen), holder="t1",
                            flush_interval_s=0.1)
    task = asyncio.create_task(first.run())
    await until(lambda: first.status().connected, 10, "connection")
    base = await warm_up(journal_host, seen)
    write(journal_host, 0, 50)
    await until(lambda: len(seen) == base + 50, 10, "50 entries")
    first.stop()
    await finish_within(task, 10, "the first follower's run after stop()")
    write(journal_host, 50, 30)  # written while no bot follows

    fail_once = {"armed": True}
    seen2: list[int] = []
    inner = recorder(seen2)

    async def flaky(entry: JournalEntry) -> None:
        if fail_once["armed"] and len(seen2) == 10:
            fail_once["armed"] = False
            raise DatabaseUnavailable("db down")
        await inner(entry)

    second = JournalFollower(sqlite_db, journal_host.host, UNIT, on_entry=flaky, holder="t2",
                             flush_interval_s=0.1, backoff_initial_s=0.02)
    task2 = asyncio.create_task(second.run())
    await until(lambda: len(seen2) == 30, 10, "the 30 entries written while stopped")
    write(journal_host, 80, 20)
    await until(lambda: len(seen2) == 50, 10, "20 more")
    second.stop()
    await finish_within(task2, 10, "the second follower's run after stop()")
    assert seen + seen2 == list(range(seen[0], seen[0] + base + 100))
    row = await stored(sqlite_db, "sim-1")
    assert row is not None and cursor_seqnum(row.cursor) == seen2[-1] and row.entries == base + 100


async def test_garbage_huge_and_odd_lines_are_counted_and_skipped(tmp_path: Path, sqlite_db: Database) -> None:
    extra = tmp_path / "extra-bin"
    extra.mkdir()
    real = tmp_path / "host" / "bin" / "journalctl"
    wrapper = extra / "journalctl"
    wrapper.write_text(
        "#!/bin/sh\n"
        "printf 'this is not json\\n{\"truncated\": \\n-- cursor: s=abc;i=1\\n'\n"
        "head -c 300000 /dev/zero | tr '\\0' 'x'; echo\n"
        f"exec {real} \"$@\"\n")
    wrapper.chmod(0o755)
    jh = await start_journal_host(tmp_path / "host", extra_bin=extra)
    try:
        seen: list[int] = []
        messages: list[str] = []
        follower = JournalFollower(sqlite_db, jh.host, UNIT, on_entry=recorder(seen, messages), holder="t")
        task = asyncio.create_task(follower.run())
        await until(lambda: follower.status().connected, 10, "connection")
        base = await warm_up(jh, seen)
        del seen[:], messages[:]
        write(jh, 0, 3)
        jh.writer.append({"_SYSTEMD_UNIT": UNIT, "_PID": "7", "MESSAGE": "\x1b[1;36m(APIServer pid=7)\x1b[0;0m hi"})
        jh.writer.append({"_SYSTEMD_UNIT": UNIT, "_PID": "7", "MESSAGE": "y" * 5000})
        jh.writer.append({"_SYSTEMD_UNIT": "other.service", "_PID": "8", "MESSAGE": "not ours"})
        write(jh, 3, 2)
        await until(lambda: len(seen) == 7, 10, "7 entries")
        follower.stop()
        await asyncio.wait_for(task, 10)
        st = follower.status()
        assert st.bad_lines >= 4 and st.bad_lines % 4 == 0 and base >= 1
        assert messages[3] == "(APIServer pid=7) hi"
        assert messages[4] == ""  # a field of 4096 bytes or more is printed as null
        assert "not ours" not in messages
    finally:
        await stop_journal_host(jh)


async def test_contact_lost_and_restored_are_published(tmp_path: Path, sqlite_db: Database) -> None:
    jh = await start_journal_host(tmp_path / "host")
    bus = EventBus()
    events: list[object] = []

    async def keep(ev: object) -> None:
        events.append(ev)

    bus.subscribe(HostContactLost, keep)
    bus.subscribe(HostContactRestored, keep)
    follower = JournalFollower(sqlite_db, jh.host, UNIT, on_entry=recorder([]), holder="t", bus=bus,
                               lost_after_s=0.3, backoff_initial_s=0.05, backoff_max_s=0.1)
    task = asyncio.create_task(follower.run())
    try:
        await until(lambda: follower.status().connected, 10, "connection")
        port = jh.server.port
        await jh.server.close()
        await until(lambda: any(isinstance(e, HostContactLost) for e in events), 10, "contact lost")
        assert follower.status().lost_since is not None
        server2 = await __import__("simhost.ssh", fromlist=["start_ssh_server"]).start_ssh_server(
            jh.root, env={"SIMHOST_DIR": str(jh.root), "HOME": str(jh.root)},
            path_prefix=[jh.root / "bin"], port=port)
        try:
            await until(lambda: any(isinstance(e, HostContactRestored) for e in events), 10, "restored")
        finally:
            follower.stop()
            await asyncio.wait_for(task, 10)
            await server2.close()
    finally:
        await jh.host.close()
        jh.writer.close()


async def test_first_start_follows_from_now_without_a_gap(journal_host: JournalHost, sqlite_db: Database) -> None:
    write(journal_host, 0, 5)  # history: not handled on a first start
    seen: list[int] = []
    messages: list[str] = []
    follower = JournalFollower(sqlite_db, journal_host.host, UNIT, on_entry=recorder(seen, messages), holder="t")
    task = asyncio.create_task(follower.run())
    await until(lambda: follower.status().connected, 10, "connection")
    write(journal_host, 5, 20)  # at once, possibly before `journalctl -f` runs
    await until(lambda: len(seen) == 20, 10, lambda: f"20 entries (got {len(seen)})")
    follower.stop()
    await asyncio.wait_for(task, 10)
    assert messages == [f"line {i}" for i in range(5, 25)]
