"""The database handle: async engine, sessions, schema upgrades, and the SQLite single-process guard.

`Database(url)` is built by the composition root and passed down; nothing connects at import
time. `migrate()` runs Alembic's upgrade to head on the app's own connection (no nested event
loop). SQLite gets WAL, foreign keys and a busy timeout; PostgreSQL gets a bounded pool.

SQLite's write transactions are taken one at a time in this process (an asyncio lock, then
``BEGIN IMMEDIATE``), so no connection of ours ever sleeps in SQLite's busy handler waiting for another
of ours. That wait holds the connection's mutex, and a cursor of that connection left in a reference
cycle by a failed statement (an expected IntegrityError) is finalized by the garbage collector on the
event loop's thread, which then blocks on that mutex with the GIL held: the whole process froze until
the 30 s busy timeout ran out (seen with ten concurrent lease takes). Reads (`sessions()`) never wait
under WAL.
"""

from __future__ import annotations

import asyncio
import fcntl
import hashlib
import importlib.util
import logging
import os
from collections.abc import AsyncIterator, Coroutine
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

from alembic import command
from alembic.config import Config
from sqlalchemy import event, text
from sqlalchemy.engine import Connection
from sqlalchemy.exc import DBAPIError, OperationalError
from sqlalchemy.ext.asyncio import AsyncEngine, AsyncSession, async_sessionmaker, create_async_engine

from services.errors import Conflict, DatabaseUnavailable

log = logging.getLogger("pitcrew.store")


def migrations_dir() -> Path:
    """Where the Alembic scripts are: the installed top-level `migrations` package (editable or not)."""
    spec = importlib.util.find_spec("migrations")
    if spec is None or not spec.submodule_search_locations:
        raise RuntimeError("the `migrations` package is not installed with pitcrew; reinstall it (`pip install .`)")
    return Path(next(iter(spec.submodule_search_locations)))


class Database:
    """An async SQLAlchemy engine plus a session factory, for SQLite or PostgreSQL."""

    def __init__(self, url: str, *, echo: bool = False, schema: str | None = None) -> None:
        self.url = url
        self.is_sqlite = url.startswith("sqlite")
        kwargs: dict[str, Any] = {"echo": echo}
        if self.is_sqlite:
            kwargs["connect_args"] = {"timeout": 30}
        else:
            connect_args: dict[str, Any] = {"timeout": 10, "command_timeout": 30}
            if schema:
                connect_args["server_settings"] = {"search_path": schema}
            kwargs.update(pool_size=10, max_overflow=10, pool_pre_ping=True, pool_timeout=10,
                          connect_args=connect_args)
        self.engine: AsyncEngine = create_async_engine(url, **kwargs)
        if self.is_sqlite:
            event.listen(self.engine.sync_engine, "connect", _sqlite_pragmas)
            event.listen(self.engine.sync_engine.pool, "invalidate", _sqlite_rollback_before_close)
        self._sessionmaker = async_sessionmaker(self.engine, expire_on_commit=False)
        self._lock_fd: int | None = None
        self._writer = asyncio.Lock()  # SQLite: one write transaction of this process at a time
        self._writer_task: asyncio.Task[Any] | None = None

    @asynccontextmanager
    async def session(self) -> AsyncIterator[AsyncSession]:
        """A session inside one transaction: committed on success, rolled back on error."""
        if not self.is_sqlite:
            async with self._transaction() as s:
                yield s
            return
        task = asyncio.current_task()
        if task is not None and task is self._writer_task:
            raise RuntimeError("a write session was opened inside another one of the same task (SQLite would "
                               "deadlock on its own write lock)")
        async with self._writer:
            self._writer_task = task
            try:
                async with self._transaction(immediate=True) as s:
                    yield s
            finally:
                self._writer_task = None

    @asynccontextmanager
    async def _transaction(self, *, immediate: bool = False) -> AsyncIterator[AsyncSession]:
        try:
            async with self._sessionmaker() as s:  # its close runs to completion (SQLAlchemy shields it)
                await s.begin()
                try:
                    if immediate:  # the write lock up front: a deferred transaction would upgrade its lock mid-way
                        await s.execute(text("BEGIN IMMEDIATE"))
                    yield s
                except BaseException:
                    await _to_completion(s.rollback())
                    raise
                await _to_completion(s.commit())
        except (OperationalError, DBAPIError, OSError) as e:
            if isinstance(e, OSError) or _is_connection_error(e):
                raise DatabaseUnavailable("the database is not answering; pitcrew keeps retrying") from e
            raise

    @asynccontextmanager
    async def sessions(self) -> AsyncIterator[AsyncSession]:
        """A session for reads (no explicit transaction); a lost database becomes `DatabaseUnavailable`."""
        try:
            async with self._sessionmaker() as s:
                yield s
        except (OperationalError, DBAPIError, OSError) as e:
            if isinstance(e, OSError) or _is_connection_error(e):
                raise DatabaseUnavailable("the database is not answering; pitcrew keeps retrying") from e
            raise

    async def serialize(self, s: AsyncSession, name: str) -> None:
        """Inside a `session()`: no other transaction that serializes on `name` runs until this one ends. PostgreSQL:
        a transaction-scoped advisory lock on a 63-bit hash of `name`; SQLite: nothing to do (its write transactions
        already run one at a time, `BEGIN IMMEDIATE`)."""
        if self.is_sqlite:
            return
        key = int.from_bytes(hashlib.blake2b(name.encode(), digest_size=8).digest(), "big") >> 1
        await s.execute(text("SELECT pg_advisory_xact_lock(:key)"), {"key": key})

    async def migrate(self) -> None:
        """Upgrade the schema to the newest revision (idempotent)."""
        async with self.engine.begin() as conn:
            await conn.run_sync(_upgrade)

    def lock_single_process(self) -> None:
        """Refuse a second bot process on the same SQLite file (PostgreSQL coordinates itself)."""
        if not self.is_sqlite or self._lock_fd is not None:
            return
        path = sqlite_path(self.url)
        if path is None:
            return
        fd = os.open(f"{path}.lock", os.O_RDWR | os.O_CREAT, 0o600)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            os.close(fd)
            raise Conflict(
                f"another pitcrew process is already using {path}; SQLite supports one bot "
                "process — stop the other one or use PostgreSQL for several replicas") from None
        self._lock_fd = fd

    async def ping(self, timeout: float = 5.0) -> bool:  # noqa: ASYNC109
        try:
            async with asyncio.timeout(timeout), self.engine.connect() as conn:
                await conn.execute(text("SELECT 1"))
            return True
        except (TimeoutError, OSError, OperationalError, DBAPIError):
            return False

    async def close(self) -> None:
        await self.engine.dispose()
        if self._lock_fd is not None:
            os.close(self._lock_fd)
            self._lock_fd = None


async def _to_completion(end: Coroutine[Any, Any, None]) -> None:
    """Await a transaction's end (commit or rollback) to its completion even if the task is cancelled meanwhile,
    then re-raise the cancellation. The end returns the connection to the pool, whose reset awaits the driver: cut
    there, SQLAlchemy logged "Exception during reset or similar" with a traceback, invalidated the connection and
    left its aiosqlite thread running (a task cancelled at shutdown mid-commit; a commit cut is also a write
    whose outcome the caller never learns). `AsyncSession.__aexit__` does the same for the session's close."""
    task = asyncio.ensure_future(end)
    cancelled: asyncio.CancelledError | None = None
    while True:
        try:
            await asyncio.shield(task)
            break
        except asyncio.CancelledError as e:
            if task.done():
                raise
            cancelled = e
    if cancelled is not None:
        raise cancelled


def sqlite_path(url: str) -> Path | None:
    """The file behind a sqlite URL, or None for an in-memory database."""
    rest = url.split(":///", 1)[1] if ":///" in url else ""
    if not rest or rest.startswith(":memory:"):
        return None
    return Path(rest.split("?", 1)[0]).resolve()


def _sqlite_pragmas(dbapi_conn: Any, _record: Any) -> None:
    cur = dbapi_conn.cursor()
    cur.execute("PRAGMA journal_mode=WAL")
    cur.execute("PRAGMA foreign_keys=ON")
    cur.execute("PRAGMA busy_timeout=30000")
    cur.execute("PRAGMA synchronous=NORMAL")
    cur.close()


def _sqlite_rollback_before_close(dbapi_conn: Any, _record: Any, _exc: BaseException | None) -> None:
    """Pool event `invalidate`, before the connection is closed: roll its transaction back first. SQLAlchemy
    invalidates a connection whose statement an exit exception cut (a task cancelled mid-statement); sqlite3's close
    then leaves the connection a zombie while any statement of it is alive — the aiosqlite adapter's cursor sits in a
    reference cycle until the garbage collector runs — and a zombie keeps its write lock: every other write of the
    process waited in SQLite's busy handler until a collection (a journal follower's final flush, past 10 s). The
    rollback runs after the cut statement in the connection's thread; a failure here changes nothing (the close
    follows either way)."""
    try:
        dbapi_conn.rollback()
    except Exception as e:  # e.g. called outside an awaitable context: the close is all there is
        log.debug("rollback before closing an invalidated SQLite connection failed: %s", e)


def _is_connection_error(e: Exception) -> bool:
    if isinstance(e, DBAPIError) and e.connection_invalidated:
        return True
    msg = str(e).lower()
    return any(w in msg for w in ("connection refused", "connection was closed", "cannot connect",
                                  "terminating connection", "connection is closed"))


def alembic_config(connection: Connection | None = None) -> Config:
    cfg = Config()
    cfg.set_main_option("script_location", str(migrations_dir()))
    cfg.attributes["connection"] = connection
    return cfg


def _upgrade(connection: Connection) -> None:
    command.upgrade(alembic_config(connection), "head")
