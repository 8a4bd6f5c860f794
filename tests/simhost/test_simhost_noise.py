"""The simulated server's noise setting: per-run speed jitter of a few percent, seeded, off by default."""

from __future__ import annotations

import statistics

from simhost.sglang import model
from simhost.sglang.engine import Engine


def _engine(noise_pct: float, seed: str, steps: int = 4) -> Engine:
    return Engine(steps=steps, draft_tokens=steps + 1, max_running=8, max_total_tokens=200_000, workspace_gib=5.0,
                  decode_log_interval=40, log=lambda m: None, on_oom=lambda b: None, spec=True,
                  noise_pct=noise_pct, noise_seed=seed)


def _factors(e: Engine, n: int) -> list[float]:
    out = []
    for _ in range(n):
        e.new_run()
        out.append(e.rate_c1 / model.speed(4)[1])
    return out


async def test_noise_off_keeps_the_model_speed() -> None:
    e = _engine(0.0, "1:0")
    assert _factors(e, 5) == [1.0] * 5 and e.jitter == 0.0


async def test_noise_moves_each_run_by_a_few_percent_reproducibly() -> None:
    a = _factors(_engine(2.0, "7:0"), 400)
    assert a == _factors(_engine(2.0, "7:0"), 400)  # the same seed, the same runs
    assert a != _factors(_engine(2.0, "7:1"), 400)  # the next server start draws other runs
    assert 1.6 < statistics.stdev(a) * 100 < 2.4 and abs(statistics.fmean(a) - 1) < 0.005
    assert _engine(2.0, "7:0").jitter == 0.04  # and each request's accept length varies within ±4 %
