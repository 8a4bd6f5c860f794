"""Fixtures for the benchmark tests: known-truth streaming servers as child processes."""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable

import pytest
from support.truth_launch import TruthServer, start_truth_server


@pytest.fixture
async def truth() -> AsyncIterator[Callable[..., Awaitable[TruthServer]]]:
    """`await truth("--rate", "100", ...)` starts a truth server; all are stopped at teardown."""
    started: list[TruthServer] = []

    async def start(*args: str) -> TruthServer:
        srv = await start_truth_server(*args)
        started.append(srv)
        return srv

    yield start
    for srv in started:
        await srv.stop()

