"""Are pitcrew's verdicts calibrated? Noise-aware verdicts vs the old fixed 3 % rule, on runs with a known truth.

Synthetic runs follow the simulated server: a configuration's true median rate, every run moved by a
per-run jitter (sd `run_sd`), every request by its own noise (sd 2 %), 32 requests per level. For each
noise level the script prints, against the ground truth it generated:

* coverage of the bootstrap 95 % interval of a run's median (no run jitter; goal ~95 %);
* false alarms: two runs of the same configuration called "better"/"worse" (goal ≤ 5 %);
* power: a true +10 % change called "better" (goal ≥ 95 %), and a true +5 % change;
* sweeps of steps 1..5 (FIELD-NOTES rates) that pick 4 (goal ≥ 90 %) and call 4 and 5 within noise;

for the noise-aware rule when the run-to-run noise is measured from 5 repeats of the configuration
(as history provides), when it is only assumed (the prior, no repeats), and for the old rule (any
change of 3 % or more is a difference; within 3 % the smallest value wins a sweep).

    .venv/bin/python benchmarks/bench_noise.py [--draws 400]
"""

from __future__ import annotations

import argparse
import random
import statistics
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from services.bench.noise import median_ci  # noqa: E402
from services.experiments.sweeps import best_value  # noqa: E402
from services.experiments.verdicts import BETTER, PRIOR_RUN_SD_PCT, RunNoise, compare_samples, measure_noise  # noqa: E402

RATE = {1: 123.0, 2: 186.0, 3: 240.0, 4: 277.0, 5: 282.0}
KV = {1: 521_000, 2: 377_207, 3: 295_931, 4: 243_470, 5: 206_809}
REQ_SD, N = 0.02, 32
OLD_PCT = 3.0


def run(rng: random.Random, rate: float, run_sd: float) -> list[float]:
    r = rate * (1 + rng.gauss(0, run_sd))
    return [r * (1 + rng.gauss(0, REQ_SD)) for _ in range(N)]


def old_rule(new: list[float], old: list[float]) -> str:
    change = (statistics.median(new) / statistics.median(old) - 1) * 100
    return "same" if abs(change) < OLD_PCT else ("better" if change > 0 else "worse")


def measured_noise(rng: random.Random, run_sd: float) -> RunNoise:
    meds = [statistics.median(run(rng, 250.0, run_sd)) for _ in range(5)]
    return measure_noise({"rev:1": {1: meds}}, 1, "rev:1")


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--draws", type=int, default=400)
    draws = ap.parse_args().draws
    prior = RunNoise(PRIOR_RUN_SD_PCT, 0, "assumed")
    print(f"{draws} draws per cell; per-request noise sd {REQ_SD:.0%}, {N} requests per level")
    rng = random.Random(1)
    cover = 0
    for _ in range(draws):
        ci = median_ci(run(rng, 250.0, 0.0))
        cover += ci is not None and ci[0] <= 250.0 <= ci[1]
    print(f"bootstrap 95 % interval of the median covers the true median in {cover / draws:.1%} of runs "
          "(goal ~95 %)")
    print(f"{'run sd':>6} | {'rule':<22} | {'false alarm':>11} | {'+5 % seen':>9} | "
          f"{'+10 % seen':>10} | {'sweep picks 4':>13} | {'4~5 plateau':>11}")
    for run_sd in (0.0, 0.01, 0.02, 0.03):
        for rule in ("noise-aware, measured", "noise-aware, assumed", "old fixed 3 %"):
            rng = random.Random(7 + int(run_sd * 1000))
            fa = p5 = p10 = picks4 = plateau = 0
            for _ in range(draws):
                noise = measured_noise(rng, run_sd) if rule.endswith("measured") else prior

                def verdict(new: list[float], old: list[float], noise: RunNoise = noise, rule: str = rule) -> str:
                    if rule.startswith("old"):
                        return old_rule(new, old)
                    c = compare_samples(new, old, noise=noise)
                    return "same" if c is None or not c.significant else c.outcome

                fa += verdict(run(rng, 250.0, run_sd), run(rng, 250.0, run_sd)) != "same"
                p5 += verdict(run(rng, 262.5, run_sd), run(rng, 250.0, run_sd)) == BETTER
                p10 += verdict(run(rng, 275.0, run_sd), run(rng, 250.0, run_sd)) == BETTER
                rows = []
                for s, rate in RATE.items():
                    xs = run(rng, rate, run_sd)
                    rows.append({"value": str(s), "ok": True, "capacity": {"max_total_num_tokens": KV[s]},
                                 "levels": {"1": {"decode_tok_s": statistics.median(xs), "samples": xs}}})
                if rule.startswith("old"):
                    meds = {r["value"]: r["levels"]["1"]["decode_tok_s"] for r in rows}  # type: ignore[index]
                    top = max(meds.values())
                    ties = [v for v, m in meds.items() if m >= top * (1 - OLD_PCT / 100)]
                    picks4 += ties[0] == "4"
                    plateau += {"4", "5"} <= set(ties)
                else:
                    ch = best_value(rows, 1, noise, flag_short="steps")
                    picks4 += ch.best == "4"
                    plateau += {"4", "5"} <= set(ch.within_noise)
            print(f"{run_sd:>6.0%} | {rule:<22} | {fa / draws:>11.1%} | {p5 / draws:>9.0%} | "
                  f"{p10 / draws:>10.0%} | {picks4 / draws:>13.0%} | {plateau / draws:>11.0%}")


if __name__ == "__main__":
    main()
