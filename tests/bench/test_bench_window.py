"""Issue 19: output tok/s, req/s and achieved concurrency describe what the server did in the window.

Each case runs `run_benchmark` against the known-truth server (a separate process, real HTTP on
loopback) and recomputes the three figures from the server's own per-request record (arrival,
last chunk written, N) of the measured requests: tokens / (last write - first arrival). The
server's record also shows that no other request (warmup, padding) was streaming in that window,
and the "fewer in flight" warning appears exactly when the server had fewer than C on average.
"""

from __future__ import annotations

import math
from typing import Any

import pytest

from services.bench.runner import BenchSpec, run_benchmark
from services.bench.stats import CONCURRENCY_WARN, LevelResult

TTFT_S = 0.01
OUT_LEN = 56  # first chunk 1 token, then 5.5 per chunk: 11 chunks of decode


def server_view(lv: LevelResult, records: list[list[float]]) -> dict[str, Any]:
    """The server's figures for the window of the measured requests, from its own record."""
    measured = {r.index for r in lv.records}
    mine = [r for r in records if int(r[6]) in measured]
    assert len(mine) == len(lv.records) and all(r[5] == 1.0 for r in mine)
    start = min(r[0] for r in mine)
    end = max(r[2] for r in mine)
    window = end - start
    others = [r for r in records if int(r[6]) not in measured and r[2] > start and r[0] < end]
    return {"tok_s": sum(r[3] for r in mine) / window, "req_s": len(mine) / window,
            "inflight": sum(r[2] - r[0] for r in mine) / window, "window": window, "others": others,
            "tokens": sum(int(r[3]) for r in mine)}


def rel(a: float | None, b: float) -> float:
    assert a is not None
    return abs(a - b) / b


async def _case(truth: Any, n: int, c: int, spread: float) -> tuple[LevelResult, dict[str, Any]]:
    rounds = math.ceil(n / c)
    e2e = max(1.0 / rounds, 0.05)  # a window of about one second (five at C=1 with 100 requests)
    rate = (OUT_LEN - 1) / (e2e - TTFT_S)
    srv = await truth("--ttft", str(TTFT_S), "--rate", f"{rate:.3f}", "--tokens-per-chunk", "5.5",
                      "--eos-spread", str(spread))
    spec = BenchSpec(url=srv.url, concurrency=(c,), requests_per_level=n, warmup=c, output_len=OUT_LEN,
                     input_len=16, timeout_s=20.0)
    lv = (await run_benchmark(spec)).levels[0]
    return lv, server_view(lv, (await srv.truth())["records"])


CASES = [(n, c, 0.0) for n in (24, 32, 100) for c in (1, 16, 64)] + [(48, 16, 0.6), (100, 64, 0.6)]


@pytest.mark.parametrize(("n", "c", "spread"), CASES, ids=[f"N{n}-C{c}-spread{s}" for n, c, s in CASES])
async def test_throughput_is_what_the_server_did(truth: Any, n: int, c: int, spread: float) -> None:
    lv, srv = await _case(truth, n, c, spread)
    assert lv.requests == n and lv.failed == 0
    assert lv.output_tokens == srv["tokens"]
    assert srv["others"] == []  # no warmup or padding request streamed inside the window
    # 0.5 %, plus two of the client's own loop-lag p99 over the window (the machine is shared)
    tol = 0.005 + 2 * (lv.client.loop_lag_ms_p99 or 0.0) / 1000.0 / srv["window"]
    assert rel(lv.output_tok_s, srv["tok_s"]) < tol, (lv.output_tok_s, srv["tok_s"])
    assert rel(lv.request_per_s, srv["req_s"]) < tol, (lv.request_per_s, srv["req_s"])
    # concurrency sums each request's own span, whose two ends the client and the server stamp in
    # different processes (~0.1-0.3 ms apart each): allow 0.5 ms per request on top
    e2e = lv.e2e_ms.mean
    assert e2e is not None
    conc_tol = tol + 0.5 / e2e
    assert rel(lv.achieved_concurrency, srv["inflight"]) < conc_tol, (lv.achieved_concurrency, srv["inflight"])
    fewer = any("fewer than" in w for w in lv.warnings)
    if abs(srv["inflight"] / c - CONCURRENCY_WARN) > 0.02:  # clear of the threshold: no coin toss
        assert fewer == (srv["inflight"] < CONCURRENCY_WARN * c), (srv["inflight"], lv.warnings)
