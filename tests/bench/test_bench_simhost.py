"""Acceptance: `run_benchmark` against the simulated SGLang host at C=1 reads the sim's configured
decode rate for the deployed steps within 2 %, and tokens per chunk close to its accept length."""

from __future__ import annotations

from pathlib import Path

from services.bench.runner import BenchSpec, MetricsProbe, run_benchmark
from services.engines import engine_named
from simhost.host import SimHost
from simhost.sglang.model import speed


async def test_c1_decode_rate_and_accept_length_of_the_sim(tmp_path: Path) -> None:
    async with SimHost(tmp_path / "sim", scenario="healthy", time_scale=0.01, ssh=False) as sim:
        await sim.wait_ready(60)
        res = await run_benchmark(BenchSpec(url=sim.server_url, concurrency=(1,), requests_per_level=3,
                                            warmup=1, output_len=256, timeout_s=30.0),
                                  probe=MetricsProbe(sim.server_url, engine_named("sglang")))
    accept_len, rate = speed(3)  # the "healthy" scenario deploys --speculative-num-steps 3
    lv = res.levels[0]
    assert lv.failed == 0 and lv.requests == 3 and not lv.chunk_counted
    d = lv.decode_tok_s_per_request.mean
    assert d is not None and abs(d - rate) / rate < 0.02 + 2 * (lv.client.loop_lag_ms_p99 or 0) / 1000
    assert lv.tokens_per_chunk is not None and abs(lv.tokens_per_chunk - accept_len) / accept_len < 0.05
    assert lv.server.accept_len is not None and abs(lv.server.accept_len - accept_len) < 0.1
