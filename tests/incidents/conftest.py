"""Fixtures of the incident tests (helpers live in `incidents_kit`)."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from incidents_kit import JournalHost, start_journal_host, stop_journal_host


@pytest.fixture
async def journal_host(tmp_path: Path) -> AsyncIterator[JournalHost]:
    jh = await start_journal_host(tmp_path / "host")
    try:
        yield jh
    finally:
        await stop_journal_host(jh)


