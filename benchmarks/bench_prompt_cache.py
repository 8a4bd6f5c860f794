"""Does a repeated benchmark read faster because the server's prompt cache remembers its prompts? On the real
llama.cpp `llama-server` (`make engine`; the `healthy` unit: SmolLM2-135M on the CPU, `-np 2`, ngram-simple).

Four runs of the same synthetic prompts (seed 0 every time, what every job's benchmark sent before the per-run
seed), then four runs with prompts of their own (a new seed per run, what jobs send now), each at C=4 with 16
measured requests of 64 tokens in and out (the chat API, as jobs use), one after the other on the same server. If
the server's prompt cache serves a repeated run, the first series climbs while the second stays flat.

    .venv/bin/python benchmarks/bench_prompt_cache.py [--runs 4]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from services.bench import BenchSpec  # noqa: E402
from services.bench.runner import run_benchmark  # noqa: E402
from simhost.host import SimHost  # noqa: E402


async def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--runs", type=int, default=4)
    args = ap.parse_args()
    out: dict[str, list[float]] = {}
    with tempfile.TemporaryDirectory() as tmp:
        async with SimHost(Path(tmp) / "sim", scenario="healthy", time_scale=0.01, engine="llamacpp") as sim:
            await sim.wait_ready(60)
            for name, seeds in (("same_prompts", [0] * args.runs), ("new_prompts", list(range(11, 11 + args.runs)))):
                figures = []
                for seed in seeds:
                    r = await run_benchmark(BenchSpec(url=sim.info["server_url"], concurrency=(4,),
                                                      requests_per_level=16, warmup=1, input_len=64, output_len=64,
                                                      seed=seed))
                    figures.append(round(r.levels[0].output_tok_s or 0.0, 1))
                    print(f"{name} seed {seed}: {figures[-1]} tok/s at C=4", flush=True)
                out[name] = figures
    print(json.dumps({**out, **{f"{k}_spread_pct": round(100 * (max(v) - min(v)) / statistics.median(v), 1)
                                for k, v in out.items()}}))


if __name__ == "__main__":
    asyncio.run(main())
