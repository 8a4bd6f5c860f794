"""Waiting in a test for a job to end: woken by the bus's `JobFinished` (published once the end is committed), with a
read of the job every second besides. The scenario harnesses read the job every 50-100 ms before: ~3 ms of CPU a read
on SQLite, for the whole of every scenario (and twenty reads at a time in the overlap test, most of a core)."""

from __future__ import annotations

import asyncio
import contextlib
import time
from typing import Any

from services.jobs import JobFinished

NOT_ENDED = ("queued", "running", "awaiting_confirmation")


class JobEnds:
    """Built with the bot's core before the jobs it waits for end (it subscribes to their ends)."""

    def __init__(self, core: Any) -> None:
        self._core = core
        self._ended = asyncio.Event()
        core.bus.subscribe(JobFinished, self._on_end)

    async def _on_end(self, _event: JobFinished) -> None:
        self._ended.set()

    async def wait(self, job_id: int, timeout: float = 120.0, *, not_ended: tuple[str, ...] = NOT_ENDED) -> Any:
        """The job once its state is none of `not_ended`; AssertionError after `timeout` seconds."""
        t_end = time.monotonic() + timeout
        while True:
            self._ended.clear()  # before the read: an end after it wakes the wait below
            job = await self._core.jobs.get(job_id)
            if job.state not in not_ended:
                return job
            left = t_end - time.monotonic()
            if left <= 0:
                raise AssertionError(f"job {job_id} did not finish in {timeout} s (still {job.state})")
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._ended.wait(), min(1.0, left))
