"""A task cancelled while its write transaction ends (the commit, then the connection's return to the pool) is
cancelled after the end has run: the write is kept, the connection goes back to the pool clean, and SQLAlchemy logs
no "Exception during reset or similar" traceback (the demo's shutdown printed one: a task stopped at shutdown was
cut in the pool's reset of its connection)."""

from __future__ import annotations

import asyncio
import logging
from typing import Any

import pytest
from sqlalchemy import event, text

from services.store import Database

pytestmark = pytest.mark.parametrize("db", ["sqlite", "postgresql"], indirect=True)


async def _cancelled_in_the_pool_reset(db: Database, caplog: pytest.LogCaptureFixture, *, row: str) -> list[str]:
    """Write `row` in a session; cancel the writing task from inside the pool's reset of its connection (the
    reset's own rollback is the next await). Returns what happened to the task, in order."""
    armed = False
    writer: asyncio.Task[None] | None = None
    seen: list[str] = []

    def on_reset(_dbapi: Any, _record: Any, _state: Any) -> None:
        nonlocal armed
        if armed and writer is not None:
            armed = False
            writer.cancel()
            seen.append("cancelled in the reset")

    async def write() -> None:
        nonlocal armed
        async with db.session() as s:
            await s.execute(text("INSERT INTO cancel_probe (v) VALUES (:v)"), {"v": row})
            armed = True
        seen.append("returned")  # not reached: the cancellation is raised once the end has run

    async with db.session() as s:
        await s.execute(text("CREATE TABLE IF NOT EXISTS cancel_probe (v VARCHAR(64))"))
    event.listen(db.engine.sync_engine.pool, "reset", on_reset)
    try:
        with caplog.at_level(logging.ERROR, logger="sqlalchemy.pool"):
            writer = asyncio.create_task(write())
            with pytest.raises(asyncio.CancelledError):
                await writer
    finally:
        event.remove(db.engine.sync_engine.pool, "reset", on_reset)
    return seen


async def test_a_task_cancelled_in_its_commits_pool_reset_keeps_the_write_and_logs_nothing(
        db: Database, caplog: pytest.LogCaptureFixture) -> None:
    seen = await _cancelled_in_the_pool_reset(db, caplog, row="kept-after-cancel")
    assert seen == ["cancelled in the reset"]
    assert not [r for r in caplog.records if r.name.startswith("sqlalchemy")], caplog.text
    async with db.sessions() as s:
        n = (await s.execute(text("SELECT count(*) FROM cancel_probe WHERE v = 'kept-after-cancel'"))).scalar()
    assert n == 1
    assert db.engine.sync_engine.pool.checkedout() == 0


async def test_the_next_write_after_such_a_cancel_uses_the_pool_as_before(
        db: Database, caplog: pytest.LogCaptureFixture) -> None:
    await _cancelled_in_the_pool_reset(db, caplog, row="first")
    async with asyncio.timeout(10), db.session() as s:
        await s.execute(text("INSERT INTO cancel_probe (v) VALUES ('second')"))
    async with db.sessions() as s:
        got = sorted((await s.execute(text("SELECT v FROM cancel_probe")))
                     .scalars())
    assert got == ["first", "second"]
    assert not [r for r in caplog.records if r.name.startswith("sqlalchemy")], caplog.text


async def test_a_write_cancelled_mid_statement_does_not_hold_the_write_lock(db: Database) -> None:
    """A task cancelled while a statement of its write transaction runs: SQLAlchemy invalidates that connection (an
    exit exception leaves its state unknown) and closes it. On SQLite the statement's cursor, in a reference cycle of
    the aiosqlite adapter, outlived the close, so SQLite kept the closed connection as a zombie holding the write lock
    until a garbage collection: the next write waited in SQLite's busy handler (up to its 30 s), as a journal
    follower's final flush did after its flusher was cancelled (session 14). With the collector off, as between two of
    its runs, the next write still goes through at once."""
    import gc

    async with db.session() as s:
        await s.execute(text("CREATE TABLE IF NOT EXISTS cancel_probe (v VARCHAR(64))"))
    slow = ("WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c WHERE x < 3000000) "
            "SELECT count(*) FROM c" if db.is_sqlite else "SELECT pg_sleep(0.5)")
    started = asyncio.Event()

    async def write_then_slow_statement() -> None:
        async with db.session() as s:
            await s.execute(text("INSERT INTO cancel_probe (v) VALUES ('cut')"))
            started.set()
            await s.execute(text(slow))

    gc.disable()
    try:
        writer = asyncio.create_task(write_then_slow_statement())
        await started.wait()
        await asyncio.sleep(0.05)  # the slow statement is running in the connection's thread
        writer.cancel()
        with pytest.raises(asyncio.CancelledError):
            await writer
        async with asyncio.timeout(10), db.session() as s:
            await s.execute(text("INSERT INTO cancel_probe (v) VALUES ('next')"))
    finally:
        gc.enable()
    async with db.sessions() as s:
        got = sorted((await s.execute(text("SELECT v FROM cancel_probe"))).scalars())
    assert got == ["next"]  # the cut transaction was rolled back, the next one committed
