"""Fixtures for the reliability suite: a bot core around a SimHost over SSH, on SQLite or PostgreSQL."""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from contextlib import AsyncExitStack
from pathlib import Path
from typing import Any

import pytest
from rel_kit import PG_URL, RelBot, drop_pg_database, make_pg_database, settings_for

from bot.app import build_core

SCALE = 0.002


@pytest.fixture
async def rel_bot(tmp_path: Path, migrated_sqlite: Callable[[Path], str]) -> AsyncIterator[Callable[..., Any]]:
    from simhost.host import SimHost

    async with AsyncExitStack() as stack:
        async def make(scenario: str = "healthy", *, db_url: str | None = None, scale: float = SCALE,
                       policy: dict[str, Any] | None = None, bench: dict[str, Any] | None = None,
                       sim_dir: Path | None = None, systemd: str = "python") -> RelBot:
            sim = await stack.enter_async_context(SimHost(sim_dir or tmp_path / "sim", scenario=scenario,
                                                          time_scale=scale, systemd=systemd))
            url = db_url or migrated_sqlite(tmp_path / "bot.db")
            core = await build_core(settings_for(sim.info, url, policy=policy, bench=bench), stack,
                                    transport="test", time_scale=scale, watch_journals=False,
                                    start_scheduler=False)
            return RelBot(core, sim)

        yield make


@pytest.fixture(params=["sqlite", "postgresql"])
async def any_db_url(request: pytest.FixtureRequest, tmp_path: Path,
                     migrated_sqlite: Callable[[Path], str]) -> AsyncIterator[str]:
    """A database URL on each engine: a SQLite file, or a fresh PostgreSQL database (dropped after)."""
    if request.param == "sqlite":
        yield migrated_sqlite(tmp_path / "bot.db")
        return
    if not PG_URL:
        pytest.skip("set PITCREW_TEST_PG_URL for the PostgreSQL half")
    url = await make_pg_database()
    try:
        yield url
    finally:
        await drop_pg_database(url)
