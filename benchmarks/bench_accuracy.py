"""Accuracy of pitcrew's benchmark client against the known-truth streaming server.

For 1 and 5.5 tokens per SSE chunk and C = 1, 4, 16, 64, runs `run_benchmark` against a fresh
`support.truth_server` process and compares each measured request with the server's own record
of it (same monotonic clock: arrival, first and last chunk written), and with the nominal
parameters (TTFT 50 ms, 100 tok/s per stream). Prints one row per case.

    .venv/bin/python benchmarks/bench_accuracy.py [--levels 1,4,16,64] [--tpc 1,5.5]
        [--output-len 256] [--rounds 2]
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import sys
from pathlib import Path
from typing import Any

from services.bench.runner import BenchSpec, run_benchmark
from services.bench.stats import LevelResult

sys.path.append(str(Path(__file__).resolve().parents[1] / "tests"))  # the test doubles in tests/support
from support.truth_launch import truth_server
from support.truth_plan import TruthParams, truth_for

TTFT_S = 0.05
RATE = 100.0


def compare(lv: LevelResult, records: list[list[float]]) -> dict[str, Any]:
    """Match each measured request to the server's record of it (by prompt number)."""
    by_tag = {int(r[6]): r for r in records if r[5] == 1.0}
    ttft_err, dec_true, matched = [], [], []
    for rec in lv.records:
        m = by_tag.get(rec.index)
        if m is None:
            continue
        arrival, first, last, n = m[0], m[1], m[2], m[3]
        matched.append(m)
        ttft_err.append((rec.ttft - (first - arrival)) * 1000.0)
        if n > 1 and last > first:
            dec_true.append((n - 1) / (last - first))
    out_true = None
    if matched:
        window = max(m[2] for m in matched) - min(m[0] for m in matched)
        out_true = sum(m[3] for m in matched) / window
    return {"matched": len(matched), "ttft_err_ms": statistics.mean(ttft_err) if ttft_err else None,
            "ttft_err_p99_ms": sorted(ttft_err)[int(0.99 * (len(ttft_err) - 1))] if ttft_err else None,
            "server_ttft_ms": statistics.mean((m[1] - m[0]) * 1000 for m in matched) if matched else None,
            "dec_true": statistics.mean(dec_true) if dec_true else None, "out_true": out_true}


def pct(a: float | None, b: float | None) -> str:
    return "-" if a is None or not b else f"{(a - b) / b * 100:+.2f}%"


async def case(tpc: float, c: int, output_len: int, rounds: int) -> None:
    args = ["--ttft", str(TTFT_S), "--rate", str(RATE), "--tokens-per-chunk", str(tpc)]
    async with truth_server(*args) as srv:
        spec = BenchSpec(url=srv.url, concurrency=(c,), requests_per_level=max(rounds * c, 6), warmup=c,
                         output_len=output_len, input_len=64, timeout_s=60.0)
        res = await run_benchmark(spec)
        facts = await srv.truth()
    lv = res.levels[0]
    cmp = compare(lv, facts["records"])
    nominal = truth_for(output_len, TruthParams(ttft_s=TTFT_S, rate=RATE, tokens_per_chunk=tpc))
    f = lambda v, d=1: "-" if v is None else f"{v:.{d}f}"  # noqa: E731
    print(f"{tpc:>4} {c:>3} {lv.requests:>4}/{cmp['matched']:<4} "
          f"ttft {f(lv.ttft_ms.mean, 2):>6} srv {f(cmp['server_ttft_ms'], 2):>6} "
          f"err {f(cmp['ttft_err_ms'], 2):>5} p99 {f(cmp['ttft_err_p99_ms'], 2):>5} ms | "
          f"dec/req {f(lv.decode_tok_s_per_request.mean, 2):>7} "
          f"vs srv {pct(lv.decode_tok_s_per_request.mean, cmp['dec_true']):>7}"
          f" vs nominal {pct(lv.decode_tok_s_per_request.mean, nominal.decode_tok_s):>7} | "
          f"out {f(lv.output_tok_s):>7} vs srv {pct(lv.output_tok_s, cmp['out_true']):>7} | "
          f"steady {f(lv.steady_tok_s):>7} vs {c * nominal.tokens / nominal.e2e_s:.0f} "
          f"{pct(lv.steady_tok_s, c * nominal.tokens / nominal.e2e_s):>7} | tok/chunk {f(lv.tokens_per_chunk, 3)} "
          f"(truth {nominal.tokens_per_chunk:.3f}) | cpu/1k {f(lv.client.cpu_s_per_1k_tokens, 3)} "
          f"lag p99 {f(lv.client.loop_lag_ms_p99, 1)}{' UNRELIABLE' if lv.unreliable else ''}", flush=True)


async def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--levels", default="1,4,16,64")
    ap.add_argument("--tpc", default="1,5.5")
    ap.add_argument("--output-len", type=int, default=256)
    ap.add_argument("--rounds", type=int, default=2)
    a = ap.parse_args()
    print(f"truth: TTFT {TTFT_S * 1000:.0f} ms, {RATE:.0f} tok/s per stream, {a.output_len} tokens, "
          f"first chunk 1 token then the given mean")
    for tpc in (float(x) for x in a.tpc.split(",")):
        for c in (int(x) for x in a.levels.split(",")):
            await case(tpc, c, a.output_len, a.rounds)


if __name__ == "__main__":
    asyncio.run(main())
