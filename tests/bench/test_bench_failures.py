"""Failures are counted per level, the run never hangs, and a cancel returns what was measured."""

from __future__ import annotations

import asyncio
import time

import pytest

from services.bench.runner import BenchSpec, run_benchmark
from services.errors import BenchmarkError


def _spec(url: str, **kw: object) -> BenchSpec:
    base: dict[str, object] = {"concurrency": (1,), "requests_per_level": 6, "warmup": 0, "output_len": 10,
                               "input_len": 8, "timeout_s": 5.0}
    base.update(kw)
    return BenchSpec(url=url, **base)  # type: ignore[arg-type]


async def test_server_error_mid_run_is_counted(truth) -> None:
    srv = await truth("--rate", "500", "--ttft", "0.005", "--fault", "error", "--fault-from", "2",
                      "--fault-every", "2")
    res = await run_benchmark(_spec(srv.url, concurrency=(1, 2)))
    first, second = res.levels
    assert first.failures == {"http_500": 2} and first.requests == 4
    assert second.failed + second.requests == 6 and second.failures.get("http_500", 0) >= 2
    assert any("failed" in w for w in first.warnings)
    assert res.to_json()["levels"][0]["failed"] == 2


async def test_dropped_stream_is_counted(truth) -> None:
    srv = await truth("--rate", "500", "--ttft", "0.005", "--fault", "drop", "--fault-from", "1",
                      "--fault-every", "3", "--drop-after", "2")
    lv = (await run_benchmark(_spec(srv.url))).levels[0]
    assert lv.failures == {"dropped": 2} and lv.requests == 4


async def test_hung_server_times_out(truth) -> None:
    srv = await truth("--rate", "500", "--ttft", "0.005", "--fault", "hang", "--fault-from", "1")
    t = time.monotonic()
    lv = (await run_benchmark(_spec(srv.url, requests_per_level=3, timeout_s=0.5))).levels[0]
    assert time.monotonic() - t < 4.0
    assert lv.requests == 1 and lv.failures == {"timeout": 2}


async def test_dead_server_mid_run_stops_the_run(truth) -> None:
    srv = await truth("--rate", "500", "--ttft", "0.005", "--fault", "die", "--fault-from", "3")
    t = time.monotonic()
    res = await run_benchmark(_spec(srv.url, concurrency=(2, 4), requests_per_level=50))
    assert time.monotonic() - t < 5.0
    assert len(res.levels) == 1
    lv = res.levels[0]
    assert lv.requests >= 2 and lv.failed >= 1
    assert set(lv.failures) <= {"dropped", "connect"}
    assert any("server unreachable" in w for w in lv.warnings)


async def test_unreachable_server_is_a_clear_error(truth) -> None:
    srv = await truth()
    url = srv.url
    await srv.stop()
    with pytest.raises(BenchmarkError, match="cannot reach"):
        await run_benchmark(_spec(url))


async def test_cancel_returns_promptly_with_what_was_measured(truth) -> None:
    srv = await truth("--rate", "200", "--ttft", "0.01")
    cancel = asyncio.Event()
    seen: list[int] = []

    async def progress(p: object) -> None:
        seen.append(getattr(p, "done", 0))

    task = asyncio.create_task(run_benchmark(
        _spec(srv.url, concurrency=(2, 4), requests_per_level=1000, output_len=20), progress=progress,
        cancel=cancel))
    await asyncio.sleep(1.2)
    cancel.set()
    t = time.monotonic()
    res = await asyncio.wait_for(task, 2.0)
    assert time.monotonic() - t < 0.5
    assert len(res.levels) == 1 and res.cancelled
    lv = res.levels[0]
    assert lv.requests >= 5 and "cancelled: partial level" in lv.warnings
    assert seen  # the progress callback ran
    facts = await srv.truth()
    await asyncio.sleep(0.1)
    assert (await srv.truth())["in_server"] == 0 or facts["in_server"] <= 2


def test_bad_parameters_are_refused() -> None:
    with pytest.raises(BenchmarkError):
        BenchSpec(url="localhost:1")
    with pytest.raises(BenchmarkError):
        BenchSpec(url="http://x", concurrency=(0,))
    with pytest.raises(BenchmarkError):
        BenchSpec(url="http://x", requests_per_level=0)
    assert BenchSpec(url="http://x", requests_per_level=None, duration_s=None).requests_at(16) == 64  # default
    assert BenchSpec(url="http://x", duration_s=3.0).requests_per_level is None
