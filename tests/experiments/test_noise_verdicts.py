"""Noise-aware verdicts on synthetic per-request samples: the bootstrap interval is calibrated, repeated runs
of one configuration are "no measurable difference", a 10 % change is "better", and a sweep of steps 1..5
with run-to-run jitter picks the same value and calls 4 and 5 a plateau — each over seeded repetitions.

The synthetic runs follow the simulated server: the FIELD-NOTES rates per steps, every run's median moved
by a per-run jitter (sd 1 %), every request by its own noise (sd 2 %), 32 requests per level.
"""

from __future__ import annotations

import random
import statistics
from datetime import UTC, datetime

from handlers.views import compare_reply
from services.bench.noise import change_ci, median_ci
from services.experiments.results import Results, RunSummary, figures_from_json
from services.experiments.sweeps import best_value
from services.experiments.verdicts import (
    BETTER,
    NOISY,
    PRIOR_RUN_SD_PCT,
    SAME,
    RunNoise,
    compare_runs,
    compare_samples,
    measure_noise,
)
from simhost.sglang import model

RATE = {1: 123.0, 2: 186.0, 3: 240.0, 4: 277.0, 5: 282.0}
RUN_SD, REQ_SD, N = 0.01, 0.02, 32
PRIOR = RunNoise(PRIOR_RUN_SD_PCT, 0, "assumed")


def run_samples(rng: random.Random, rate: float, *, run_sd: float = RUN_SD, req_sd: float = REQ_SD,
                n: int = N) -> list[float]:
    run_rate = rate * (1 + rng.gauss(0, run_sd))
    return [run_rate * (1 + rng.gauss(0, req_sd)) for _ in range(n)]


def test_bootstrap_interval_covers_the_true_median_about_95_percent_of_the_time() -> None:
    rng = random.Random(7)
    covered = 0
    for _ in range(120):
        xs = [rng.gauss(280.0, 8.0) for _ in range(N)]
        ci = median_ci(xs)
        assert ci is not None and ci[0] <= statistics.median(xs) <= ci[1]
        covered += ci[0] <= 280.0 <= ci[1]
    assert 0.88 <= covered / 120 <= 0.995, covered
    assert median_ci([1.0, 2.0]) is None  # too few requests to say anything


def test_bootstrap_is_reproducible_and_narrows_with_more_requests() -> None:
    rng = random.Random(1)
    xs = [rng.gauss(280.0, 8.0) for _ in range(16)]
    assert median_ci(xs) == median_ci(list(xs))
    many = [rng.gauss(280.0, 8.0) for _ in range(256)]
    a, b = median_ci(xs), median_ci(many)
    assert a is not None and b is not None and (b[1] - b[0]) < (a[1] - a[0]) / 2
    ci = change_ci([x * 1.1 for x in many], many)
    assert ci is not None and ci[0] < 10.0 < ci[1]


def test_same_configuration_twice_is_no_measurable_difference_in_19_of_20() -> None:
    outcomes = []
    for seed in range(20):
        rng = random.Random(seed)
        a, b = run_samples(rng, 282.0), run_samples(rng, 282.0)
        cmp = compare_samples(a, b, noise=PRIOR)
        assert cmp is not None
        outcomes.append(cmp.outcome)
    assert outcomes.count(SAME) >= 19, outcomes


def test_a_ten_percent_change_is_better_in_19_of_20_and_says_how_sure() -> None:
    outcomes = []
    for seed in range(20):
        rng = random.Random(100 + seed)
        old, new = run_samples(rng, 250.0), run_samples(rng, 275.0)
        cmp = compare_samples(new, old, noise=PRIOR)
        assert cmp is not None
        outcomes.append(cmp.outcome)
        if cmp.outcome == BETTER:
            assert cmp.text().startswith("+") and "— better" in cmp.text() and "% sure" in cmp.text()
            assert cmp.sure_pct > 97.5
    assert outcomes.count(BETTER) >= 19, outcomes


def test_verdict_text_reads_like_the_issue() -> None:
    rng = random.Random(3)
    old = run_samples(rng, 240.0, run_sd=0)
    new = [x * 1.15 for x in old]
    assert compare_samples(new, old, noise=RunNoise(0.7, 6, "6 runs")).text().startswith("+15 % (±2 %) — better")
    same = compare_samples([x * 0.99 for x in old], old, noise=PRIOR)
    assert same is not None and same.text() == "−1 % (±4 %) — no measurable difference"


def test_when_the_noise_is_too_wide_the_verdict_says_so_and_offers_bench_again() -> None:
    rng = random.Random(5)
    old, new = run_samples(rng, 280.0, req_sd=0.25, n=8), run_samples(rng, 270.0, req_sd=0.25, n=8)
    cmp = compare_samples(new, old, noise=RunNoise(4.0, 5, "5 runs"))
    assert cmp is not None and cmp.outcome == NOISY
    assert "too noisy to tell" in cmp.text() and "`bench` again" in cmp.text()


def test_run_to_run_noise_comes_from_this_configuration_then_the_host_then_the_prior() -> None:
    assert measure_noise({}, 1).runs == 0 and measure_noise({}, 1).sd_pct == PRIOR_RUN_SD_PCT
    repeats = {"rev:3": {1: [270.0, 280.0, 290.0, 275.0, 285.0]}, "rev:4": {1: [200.0, 200.5]}}
    own = measure_noise(repeats, 1, "rev:3")
    sd3 = statistics.stdev([270.0, 280.0, 290.0, 275.0, 285.0]) / 280.0 * 100
    assert own.runs == 5 and "this configuration" in own.source
    assert PRIOR_RUN_SD_PCT < own.sd_pct < sd3  # shrunk towards the prior, mostly measured
    host = measure_noise(repeats, 1, "rev:9")
    assert host.runs == 7 and "this host" in host.source
    assert measure_noise(repeats, 16, "rev:3").runs == 0  # nothing repeated at C=16


def _capacity(steps: int) -> dict[str, int]:
    tokens = model.max_total_num_tokens(steps + 1, 0.88, model.T0_MIB)
    return {"max_total_num_tokens": tokens, "max_running_requests": model.max_running_requests(tokens, None)}


def _sweep_rows(rng: random.Random) -> list[dict[str, object]]:
    rows: list[dict[str, object]] = []
    for steps, rate in RATE.items():
        xs = run_samples(rng, rate)
        rows.append({"value": str(steps), "ok": True, "capacity": _capacity(steps),
                     "levels": {"1": {"decode_tok_s": statistics.median(xs), "samples": xs}}})
    return rows


def test_sweep_with_jitter_picks_the_same_value_in_9_of_10_and_calls_4_and_5_within_noise() -> None:
    picks, plateaus = [], 0
    for seed in range(10):
        choice = best_value(_sweep_rows(random.Random(1000 + seed)), 1, PRIOR, flag_short="steps")
        picks.append(choice.best)
        plateaus += {"4", "5"} <= set(choice.within_noise) and "3" not in choice.within_noise
    assert max(picks.count(v) for v in set(picks)) >= 9 and picks.count("4") >= 9, picks
    assert plateaus >= 9


def test_sweep_choice_says_why() -> None:
    choice = best_value(_sweep_rows(random.Random(1003)), 1, PRIOR, flag_short="steps")
    assert choice.best == "4"
    assert "4 and 5 are within noise of each other" in choice.why, choice.why
    assert "plateau from 4" in choice.why
    cap4, cap5 = _capacity(4), _capacity(5)
    assert (f"4 uses fewer draft tokens and leaves more KV cache than 5: {cap4['max_running_requests']} vs "
            f"{cap5['max_running_requests']} running requests") in choice.why
    assert "run-to-run noise ±1.5 % (assumed" in choice.why


def test_noise_free_sweep_still_picks_4_and_a_clear_winner_wins() -> None:
    rows = _sweep_rows(random.Random(0))
    for r in rows:
        lv = r["levels"]["1"]  # type: ignore[index]
        lv["samples"] = [RATE[int(str(r["value"]))]] * N
        lv["decode_tok_s"] = RATE[int(str(r["value"]))]
    assert best_value(rows, 1, PRIOR, flag_short="steps").best == "4"
    rows[2]["levels"]["1"]["samples"] = [400.0] * N  # type: ignore[index]
    rows[2]["levels"]["1"]["decode_tok_s"] = 400.0  # type: ignore[index]
    choice = best_value(rows, 1, PRIOR, flag_short="steps")
    assert choice.best == "3" and choice.within_noise == ("3",)


async def test_results_store_the_interval_and_group_repeats_by_configuration(db) -> None:
    results = Results(db)
    rng = random.Random(11)
    for rev in (1, 1, 2):
        xs = run_samples(rng, 280.0)
        ci = median_ci(xs)
        level = {"concurrency": 1, "requests": N, "failed": 0,
                 "decode_tok_s_per_request": {"p50": statistics.median(xs)},
                 "decode_tok_s_ci95": list(ci), "decode_tok_s_samples": xs}
        run = await results.save(host="h", model="m", label=f"steps {rev}", result={"levels": [level]}, ok=True,
                                 revision_id=None)
        assert run.levels[0].decode_ci == tuple(ci) and len(run.levels[0].decode_samples) == N
    repeats = await results.repeats("h", "m")
    assert sorted(len(v[1]) for v in repeats.values()) == [1, 2]
    assert set(repeats) == {"label:steps 1", "label:steps 2"}


def _run(run_id: int, samples: list[float], label: str) -> RunSummary:
    level = figures_from_json({"concurrency": 1, "requests": len(samples),
                               "decode_tok_s_per_request": {"p50": statistics.median(samples)},
                               "decode_tok_s_samples": samples})
    return RunSummary(id=run_id, host="gpu-1", model="m", label=label, job_id=run_id, revision_id=run_id, ok=True,
                      started_at=datetime.now(UTC), capacity={}, flags={}, levels=(level,))


def test_compare_reply_gives_the_verdict_per_level_the_noise_and_bench_again_when_undecided() -> None:
    rng = random.Random(21)
    old = _run(1, run_samples(rng, 250.0), "steps 3")
    new = _run(2, [x * 1.10 for x in old.levels[0].decode_samples], "steps 4")
    reply = compare_reply(new, old, compare_runs(new, old, {}), "job 2 against job 1")
    assert "C=1: +10 % (±" in reply.text and "— better" in reply.text
    assert "run-to-run noise ±1.5 % (assumed" in reply.text and not reply.buttons
    assert reply.tables[0].rows[0][1].endswith("(+10 % (±4 %))")
    wild = [rng.gauss(250.0, 80.0) for _ in range(6)]
    noisy_old, noisy_new = _run(3, wild, "a"), _run(4, [x * 0.97 for x in wild[::-1]], "b")
    noisy = compare_reply(noisy_new, noisy_old, compare_runs(noisy_new, noisy_old, {}), "job 4 against job 3")
    assert "too noisy to tell" in noisy.text
    assert [b.command for b in noisy.buttons] == ["bench on gpu-1"]


def test_a_small_measurable_gain_does_not_cost_kv_cache_but_a_confident_one_does() -> None:
    precise = RunNoise(0.2, 12, "12 runs", dof=13)
    rows = _sweep_rows(random.Random(0))
    for r in rows:  # no noise at all: 5 is +1.8 % over 4, measurably
        rate = RATE[int(str(r["value"]))]
        r["levels"]["1"] = {"decode_tok_s": rate, "samples": [rate * (1 + 0.001 * (i % 5 - 2)) for i in range(N)]}  # type: ignore[index]
    choice = best_value(rows, 1, precise, flag_short="steps")
    assert choice.within_noise == ("5",) and choice.comparisons["4"].outcome == "worse"
    assert choice.best == "4", choice.why
    assert "5 is measurably faster than 4 (+2 % (±1 %)) but not by 2 % with 95 % confidence" in choice.why
    rows[4]["levels"]["1"] = {"decode_tok_s": 300.0, "samples": [300.0] * N}  # type: ignore[index]
    assert best_value(rows, 1, precise, flag_short="steps").best == "5"  # +8 %: worth the KV cache


def test_few_measured_repeats_widen_the_band_with_students_t() -> None:
    rng = random.Random(8)
    a, b = run_samples(rng, 250.0, run_sd=0), run_samples(rng, 250.0, run_sd=0)
    few = compare_samples(a, b, noise=RunNoise(1.5, 3, "3 runs", dof=4))
    many = compare_samples(a, b, noise=RunNoise(1.5, 60, "60 runs", dof=61))
    assert few is not None and many is not None
    assert few.band_pct / many.band_pct > 1.3  # t(4) = 2.78 against 1.96
    assert measure_noise({"rev:1": {1: [250.0, 252.0, 249.0]}}, 1, "rev:1").dof == 2 + 2
