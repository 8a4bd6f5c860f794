"""Fixtures of the simulated-host tests."""

from __future__ import annotations

from pathlib import Path

import pytest
from simhost_kit import SCALE

from simhost.host import SimHost


@pytest.fixture
async def healthy_host(tmp_path: Path):  # type: ignore[no-untyped-def]
    async with SimHost(tmp_path / "host", scenario="healthy", time_scale=SCALE, ssh=False) as host:
        await host.wait_ready(20)
        yield host
