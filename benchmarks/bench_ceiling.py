"""The ceiling: how many SSE events/s and tokens/s pitcrew's client ingests on one core before its
figures degrade.

Raises the per-stream rate of a known-truth server at C=64 (1 token per event, then 5.5) and
prints, per step: the events/s and tok/s the client took in, its own CPU (share of one core and
CPU seconds per 1000 events), loop lag, and its errors against the truth (decode tok/s per
request against the server's record, TTFT against the server's record). The ceiling is the last
step whose errors stay within 1 % / 2 ms and that the client did not flag unreliable; the
"one core" figure extrapolates events per CPU-second (1000 / CPU-s per 1000 events).

    .venv/bin/python benchmarks/bench_ceiling.py [--concurrency 64] [--rates 25,50,100,200,400]
        [--tpc 1,5.5] [--output-len N (default: 2 s of decoding)]
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import sys
from pathlib import Path

from services.bench.runner import BenchSpec, run_benchmark

sys.path.append(str(Path(__file__).resolve().parents[1] / "tests"))  # the test doubles in tests/support
from support.truth_launch import truth_server


async def step(c: int, rate: float, tpc: float, output_len: int) -> bool:
    async with truth_server("--ttft", "0.05", "--rate", str(rate), "--tokens-per-chunk", str(tpc)) as srv:
        spec = BenchSpec(url=srv.url, concurrency=(c,), requests_per_level=2 * c, warmup=c,
                         output_len=output_len, input_len=32, timeout_s=120.0)
        lv = (await run_benchmark(spec)).levels[0]
        facts = await srv.truth()
    by_tag = {int(r[6]): r for r in facts["records"] if r[5] == 1.0}
    dec_err, ttft_err = [], []
    for rec in lv.records:
        m = by_tag.get(rec.index)
        if m is None or rec.tpot is None:
            continue
        dec_err.append((1.0 / rec.tpot) / ((m[3] - 1) / (m[2] - m[1])) - 1.0)
        ttft_err.append((rec.ttft - (m[1] - m[0])) * 1000.0)
    chunks = sum(r.chunks for r in lv.records)
    window = lv.duration_s or 1.0
    ev_s = chunks / window
    busy = lv.client.cpu_busy or 0.0
    cpu_per_1k_ev = busy / ev_s * 1000 if ev_s else None
    dec = statistics.mean(dec_err) * 100 if dec_err else float("nan")
    ttft = statistics.mean(ttft_err) if ttft_err else float("nan")
    ok = abs(dec) <= 1.0 and abs(ttft) <= 2.0 and not lv.unreliable
    one_core = 1000.0 / cpu_per_1k_ev if cpu_per_1k_ev else float("nan")
    print(f"C={c} rate {rate:>5.0f}/stream tpc {tpc:>3}: {ev_s:>8,.0f} events/s {lv.output_tok_s or 0:>8,.0f} tok/s | "
          f"client CPU {busy:5.1%} of a core, {cpu_per_1k_ev or 0:.3f} CPU-s/1k events "
          f"(one core ~{one_core:,.0f} events/s) | lag p99 {lv.client.loop_lag_ms_p99 or 0:5.1f} ms | "
          f"decode err {dec:+.2f}% TTFT err {ttft:+.2f} ms | {'ok' if ok else 'DEGRADED'}"
          f"{' (flagged unreliable)' if lv.unreliable else ''}", flush=True)
    return ok


async def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--concurrency", type=int, default=64)
    ap.add_argument("--rates", default="25,50,100,200,400")
    ap.add_argument("--tpc", default="1,5.5")
    ap.add_argument("--output-len", type=int, default=0, help="0: 2 s of decoding per request")
    a = ap.parse_args()
    for tpc in (float(x) for x in a.tpc.split(",")):
        for rate in (float(x) for x in a.rates.split(",")):
            await step(a.concurrency, rate, tpc, a.output_len or max(64, int(rate * 2)))


if __name__ == "__main__":
    asyncio.run(main())
