"""`support.stacks.finish_within`: a wait that runs out says where the task stands (its coroutine chain) and what the
threads do, instead of a bare TimeoutError from a cancelled task."""

from __future__ import annotations

import asyncio
import threading

import pytest
from support.stacks import finish_within


async def _stuck_in_here(gate: asyncio.Event) -> None:
    await gate.wait()


async def _outer(gate: asyncio.Event) -> str:
    await _stuck_in_here(gate)
    return "done"


async def test_a_wait_that_runs_out_names_the_awaiting_frames_and_the_threads() -> None:
    release = threading.Event()
    worker = threading.Thread(target=release.wait, name="a-worker-thread", daemon=True)
    worker.start()
    gate = asyncio.Event()
    task = asyncio.create_task(_outer(gate))
    with pytest.raises(AssertionError) as err:
        await finish_within(task, 0.2, "the stuck task")
    release.set()
    text = str(err.value)
    assert text.startswith("the stuck task did not end within 0.2 s")
    assert text.index("in _outer") < text.index("in _stuck_in_here")  # innermost last
    assert "-- thread a-worker-thread" in text
    await asyncio.sleep(0)
    assert task.cancelled() or task.cancelling()


async def test_a_task_that_ends_in_time_gives_its_result() -> None:
    gate = asyncio.Event()
    task = asyncio.create_task(_outer(gate))
    gate.set()
    assert await finish_within(task, 5, "the task") == "done"
