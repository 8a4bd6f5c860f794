"""The tune's search on known surfaces: it finds the optimum within its budget, never restarts for a point it
has measured or one a memory failure already rules out, stops when nothing measurable is left to gain; the
forecast refusal, the Pareto front, the table and the chart."""

from __future__ import annotations

import random

import pytest

from handlers import charts, views
from services.experiments.forecast import Forecast
from services.experiments.tune import (
    FAILED,
    OK,
    REFUSED,
    VIOLATES,
    Goal,
    Point,
    TuneKnob,
    TuneSearch,
    default_budget,
    forecast_refusal,
    pareto_front,
    search_loop,
)
from services.experiments.verdicts import measure_noise

A, B = "--speculative-num-steps", "--mem-fraction-static"
KNOBS = (TuneKnob(A, tuple(str(i) for i in range(1, 7))), TuneKnob(B, ("0.80", "0.84", "0.88", "0.92", "0.96", "0.98")))
GOAL = Goal(16, 500.0)


def surface(changes: dict[str, str]) -> tuple[str, float, float]:
    """Fast around steps 4 / mem 0.88; out of memory when both are high; slow TTFT at low mem and high steps."""
    a, b = int(changes[A]), KNOBS[1].values.index(changes[B])
    if a + b >= 8:
        return FAILED, 0.0, 0.0
    thr = max(100.0, 2000.0 - 200.0 * (a - 4) ** 2 - 150.0 * (b - 2) ** 2)
    ttft = 200.0 + (400.0 if b < 1 and a > 2 else 0.0)
    return (OK if ttft < 500 else VIOLATES), thr, ttft


class Evaluator:
    def __init__(self, seed: int) -> None:
        self.rng = random.Random(seed)
        self.restarted: list[dict[str, str]] = []

    async def evaluate(self, changes: dict[str, str]) -> Point:
        self.restarted.append(dict(changes))
        status, thr, ttft = surface(changes)
        if status == FAILED:
            return Point(changes, FAILED, why="CUDA out of memory", restarted=True, memory=True)
        return Point(changes, status, throughput=thr * (1 + self.rng.gauss(0, 0.015)), ttft_p95_ms=ttft,
                     kv_tokens=300_000 - 10_000 * int(changes[A]), restarted=True)

    async def gate(self, changes: dict[str, str]) -> str | None:
        return None


async def _run(seed: int, budget: int | None = None) -> tuple[TuneSearch, Evaluator]:
    ev = Evaluator(seed)
    search = TuneSearch(KNOBS, GOAL, seed=seed, budget=budget or default_budget(KNOBS), noise=measure_noise({}, 16))
    await search_loop(search, ev.evaluate, ev.gate)
    return search, ev


@pytest.mark.parametrize("seed", [0, 1, 2])
async def test_finds_the_optimum_within_noise_in_its_budget(seed: int) -> None:
    search, ev = await _run(seed)
    assert search.budget == 13  # 35 % of 36
    assert search.restarts == len(ev.restarted) <= 13
    best = search.choose().best
    assert best is not None
    status, thr, _ = surface(best.changes)
    assert status == OK and thr >= 2000.0 * 0.958, best.changes  # within the ±4.2 % band of the optimum


async def test_never_restarts_a_measured_point_nor_one_a_memory_failure_rules_out() -> None:
    search, ev = await _run(1, budget=30)
    keys = [tuple(sorted(c.items())) for c in ev.restarted]
    assert len(keys) == len(set(keys))  # duplicates are answered from their measurement
    assert any(p.status == FAILED for p in search.order), "the surface's memory wall was never hit"
    failed: list[Point] = []  # the memory failures known when each restart was decided
    for p in (p for p in search.order if p.restarted):
        for f in failed:
            dominated = all(k.values.index(p.changes[k.flag]) >= k.values.index(f.changes[k.flag]) for k in KNOBS)
            assert not dominated, (p.changes, f.changes)
        if p.status == FAILED:
            failed.append(p)
    refused = [p for p in search.order if p.status == REFUSED]
    assert any("ran out of memory" in p.why for p in refused)
    assert all(not p.restarted for p in refused)


async def test_stops_when_nothing_measurable_is_left_to_gain() -> None:
    ev = Evaluator(0)

    async def flat(changes: dict[str, str]) -> Point:
        ev.restarted.append(changes)
        return Point(changes, OK, throughput=1000.0 * (1 + ev.rng.gauss(0, 0.005)), ttft_p95_ms=100.0,
                     restarted=True)

    search = TuneSearch(KNOBS, GOAL, seed=0, budget=30, noise=measure_noise({}, 16), patience=6)
    await search_loop(search, flat, ev.gate)
    assert search.restarts == 7  # the first point, then 6 that were not measurably better
    assert "measurably better" in search.stopped


async def test_a_grid_evaluated_on_the_last_restart_of_the_budget_says_so() -> None:
    """The whole grid in exactly its budget: the search ended because nothing was left, not for the budget (CI,
    stop 41: a tune whose last configuration took the budget's last restart said "the budget ... is spent")."""
    knobs = (TuneKnob(A, ("2", "3")), TuneKnob(B, ("0.84", "0.9")))
    ev = Evaluator(0)

    async def ramp(changes: dict[str, str]) -> Point:
        ev.restarted.append(changes)
        return Point(changes, OK, throughput=1000.0 + 300.0 * len(ev.restarted), ttft_p95_ms=100.0, restarted=True)

    search = TuneSearch(knobs, GOAL, seed=0, budget=4, noise=measure_noise({}, 16), patience=10)
    await search_loop(search, ramp, ev.gate)
    assert search.restarts == len(ev.restarted) == 4 and len(search.points) == 4
    assert search.stopped == "every configuration of the grid was evaluated"


async def test_the_budget_stops_a_search_with_configurations_left() -> None:
    ev = Evaluator(0)
    search = TuneSearch(KNOBS, GOAL, seed=0, budget=3, noise=measure_noise({}, 16), patience=10)
    await search_loop(search, ev.evaluate, ev.gate)
    assert search.restarts == 3 and search.stopped == "the budget of 3 restarts is spent"


def test_the_start_outside_the_grid_is_kept_but_not_taught() -> None:
    search = TuneSearch(KNOBS, GOAL, seed=0, budget=5, noise=measure_noise({}, 16))
    search.seed_point(Point({A: "9", B: "0.88"}, OK, throughput=1.0, ttft_p95_ms=1.0, start=True))
    assert len(search.order) == 1 and not search.points and search.restarts == 0
    search.seed_point(Point({A: "2", B: "0.88"}, OK, throughput=1.0, ttft_p95_ms=1.0, start=True))
    assert len(search.points) == 1 and search.restarts == 0


def test_forecast_refuses_only_a_fitted_forecast_below_the_goal() -> None:
    fc = Forecast(tokens=200_000, max_running=11, used=(), extrapolated=False, notes=())
    assert "max running requests ~11 < C=16" in (forecast_refusal(fc, GOAL, {}) or "")
    assert forecast_refusal(fc, Goal(8, 500.0), {}) is None  # enough slots
    assert forecast_refusal(fc, Goal(16), {}) is None  # no TTFT limit: queueing only costs latency
    extrapolated = Forecast(tokens=200_000, max_running=11, used=(), extrapolated=True, notes=("x",))
    assert forecast_refusal(extrapolated, GOAL, {}) is None
    assert forecast_refusal(None, GOAL, {}) is None


def test_a_configurations_own_slot_cap_below_the_goal_is_refused_without_a_forecast() -> None:
    """llama.cpp's --parallel (vLLM's --max-num-seqs) is a setting, not a forecast: below C requests queue."""
    assert "runs at most 2 requests at once < C=4" in (forecast_refusal(None, Goal(4, 500.0), {}, slots=2) or "")
    assert forecast_refusal(None, Goal(4, 500.0), {}, slots=4) is None
    assert forecast_refusal(None, Goal(4), {}, slots=2) is None  # no TTFT limit: queueing only costs latency
    assert forecast_refusal(None, Goal(4, 500.0), {}, slots=-1) is None  # llama.cpp's auto


def test_the_memory_region_follows_the_units_engine() -> None:
    """A context the unit's MemoryMax= cannot hold (llama.cpp, the host's OOM killer) rules out every configuration
    at least as demanding in llama.cpp's own flags; a knob with no known direction must be equal."""
    from services.engines import engine_named
    from services.errors import DeployFailed
    from services.experiments.tune import failed_point

    llama = engine_named("llamacpp")
    ctx, draft, threads = "--ctx-size", "--spec-draft-n-max", "--threads"
    knobs = (TuneKnob(ctx, ("4096", "131072")), TuneKnob(draft, ("2", "3")), TuneKnob(threads, ("1", "2")))
    search = TuneSearch(knobs, Goal(2), seed=0, budget=8, noise=measure_noise({}, 2),
                        memory_direction=llama.memory_direction)
    oom = failed_point({ctx: "131072", draft: "2", threads: "1"},
                       DeployFailed("context 128k on gpu-1: the server did not start",
                                    result={"diagnosis": {"cause": "host_oom_kill"}}))
    assert oom.memory and oom.status == FAILED
    search.tell(oom)
    assert "ran out of memory" in (search.in_failed_region({ctx: "131072", draft: "3", threads: "1"}) or "")
    assert search.in_failed_region({ctx: "4096", draft: "3", threads: "1"}) is None  # less context
    assert search.in_failed_region({ctx: "131072", draft: "3", threads: "2"}) is None  # threads: no direction
    # the same flags on the default engine (SGLang) have no direction: nothing is ruled out but the point itself
    plain = TuneSearch(knobs, Goal(2), seed=0, budget=8, noise=measure_noise({}, 2))
    plain.tell(oom)
    assert plain.in_failed_region({ctx: "131072", draft: "3", threads: "1"}) is None


def test_the_knobs_and_the_start_are_read_in_the_units_own_flags() -> None:
    """The chat words become the unit's flags; the start values are read the engine's way (vLLM's spec tokens in
    its JSON and 0.90 as the grid's 0.9; llama.cpp's draft length of its --spec-type and its short -np)."""
    from pathlib import Path

    from services.engines import engine_for
    from services.experiments.tune import start_values, unit_knobs
    from services.units import changes_label, read_exec_start
    from simhost.scenarios import llamacpp_unit_text, vllm_unit_text

    asked = (TuneKnob(A, ("2", "3", "4")), TuneKnob(B, ("0.9", "0.95")))
    vllm = read_exec_start(vllm_unit_text(3, Path("/models/q"), 8000)).argv
    knobs = unit_knobs(asked, engine_for(vllm))
    assert [k.flag for k in knobs] == ["--num-speculative-tokens", "--gpu-memory-utilization"]
    start = start_values(vllm, knobs, engine_for(vllm))
    assert start == {"--num-speculative-tokens": "3", "--gpu-memory-utilization": "0.9"}
    assert changes_label(start) == "spec tokens 3 · mem 0.9"
    llama = read_exec_start(llamacpp_unit_text(3, Path("/host"), 8080)).argv
    knobs = unit_knobs((TuneKnob("--speculative-num-draft-tokens", ("1", "2", "3")),
                        TuneKnob("--max-running-requests", ("1", "2", "4"))), engine_for(llama))
    assert [k.flag for k in knobs] == ["--spec-draft-n-max", "--parallel"]
    start = start_values(llama, knobs, engine_for(llama))
    assert start == {"--spec-draft-n-max": "3", "--parallel": "2"}
    assert changes_label(start) == "draft tokens 3 · max running 2"


def _result() -> dict[str, object]:
    pts = [Point({A: "3", B: "0.88"}, OK, 1800.0, 200.0, kv_tokens=295_931, max_running=17, start=True),
           Point({A: "4", B: "0.88"}, VIOLATES, 2100.0, 900.0, kv_tokens=243_470, max_running=14, restarted=True),
           Point({A: "2", B: "0.88"}, OK, 1500.0, 150.0, kv_tokens=377_207, max_running=21, restarted=True),
           Point({A: "3", B: "0.84"}, OK, 1400.0, 300.0, kv_tokens=250_000, max_running=14, restarted=True),
           Point({A: "5", B: "0.96"}, FAILED, why="crashed under the ramp at C=16", restarted=True, memory=True)]
    return {"goal": {"concurrency": 16, "ttft_p95_ms": 500.0, "text": "throughput at C=16 with TTFT p95 < 500 ms"},
            "points": [p.to_json() for p in pts], "pareto": pareto_front(pts), "restarts": 4,
            "best": pts[0].to_json()}


def test_pareto_front_table_and_chart() -> None:
    result = _result()
    assert result["pareto"] == [2, 0, 1]  # by TTFT; steps 3 at mem 0.84 is beaten on both
    table = views.tune_table(result)
    assert [r[0] for r in table.rows] == ["steps 3 · mem 0.88 ✓", "steps 4 · mem 0.88 ◆", "steps 2 · mem 0.88 ◆",
                                          "steps 3 · mem 0.84", "steps 5 · mem 0.96 ✗"]
    assert table.rows[1][-1] == "over the TTFT limit" and table.rows[0][-1] == "meets the goal (start)"
    assert views.tune_failures(result) == ["✗ steps 5 · mem 0.96: crashed under the ramp at C=16"]
    fig = charts.tune_figure(result)
    assert fig is not None
    ax = fig.axes[0]
    (front,) = [ln for ln in ax.get_lines() if ln.get_label() == "Pareto front"]
    assert list(front.get_xdata()) == [150.0, 200.0, 900.0]
    assert any(t.get_text() == "steps 2 · mem 0.88\nKV 377,207" for t in ax.texts)
    assert "failed or refused: steps 5 · mem 0.96" in ax.get_title()
    labels = ax.get_legend_handles_labels()[1]
    assert "best: steps 3 · mem 0.88" in labels and "TTFT limit 500 ms" in labels
    assert charts.render_png(fig).startswith(b"\x89PNG")


def test_a_trial_failure_becomes_a_point() -> None:
    """The preflight gate's refusal costs no restart; a crash diagnosed as out of memory marks its region."""
    from services.errors import BenchmarkError, DeployFailed
    from services.experiments.tune import failed_point

    refused = failed_point({A: "4"}, DeployFailed("preflight refused the new configuration on gpu-1: bad flag",
                                                  result={"host_untouched": True}))
    assert (refused.status, refused.restarted, refused.memory) == (REFUSED, False, False)
    crash = failed_point({A: "9"}, DeployFailed("steps 9 on gpu-1: the server crashed under the ramp at C=2",
                                                result={"diagnosis": {"cause": "cuda_oom_runtime"},
                                                        "capacity": {"max_total_num_tokens": 120_000,
                                                                     "max_running_requests": 6}}))
    assert (crash.status, crash.restarted, crash.memory, crash.kv_tokens) == (FAILED, True, True, 120_000)
    assert crash.why.endswith("(diagnosis: cuda_oom_runtime)")
    other = failed_point({A: "5"}, BenchmarkError("the server on gpu-1 answered none of the benchmark's requests"))
    assert (other.status, other.restarted, other.memory) == (FAILED, True, False)
    assert Point.from_json(crash.to_json()) == crash
    assert crash.run_id is None  # died under the ramp: no benchmark run was stored
    # died under the benchmark's load: the levels it served are a stored run, and the point names it (a fresh-clone
    # run of session 11 found a tune whose stored runs outnumbered its points' and confirming runs' references)
    under_load = failed_point({A: "9"}, DeployFailed("steps 9 on gpu-1: the server crashed under load at C=16 (it "
                                                     "served lower levels; results above)",
                                                     result={"run_id": 7, "crashed_at": 16}))
    assert (under_load.status, under_load.run_id) == (FAILED, 7)
    assert Point.from_json(under_load.to_json()) == under_load


# ---- the confirming run of the pick (confirm_best) ------------------------------------------------------------

def _searched(*extra: Point) -> tuple[TuneSearch, Point]:
    """A search that measured the start (1,000 tok/s), steps 4 (the fastest: 1,200), steps 2 (1,150: within noise
    of it, less KV cache) and steps 3 at mem 0.80 (900)."""
    search = TuneSearch(KNOBS, GOAL, seed=0, budget=10, noise=measure_noise({}, 16))
    start = Point({A: "3", B: "0.88"}, OK, 1000.0, 200.0, kv_tokens=300_000, start=True)
    search.seed_point(start)
    for p in (Point({A: "4", B: "0.88"}, OK, 1200.0, 200.0, kv_tokens=250_000, restarted=True),
              Point({A: "2", B: "0.88"}, OK, 1180.0, 200.0, kv_tokens=200_000, restarted=True),
              Point({A: "3", B: "0.80"}, OK, 900.0, 200.0, kv_tokens=100_000, restarted=True), *extra):
        search.tell(p)
    return search, start


class Confirmer:
    """The confirming runs' answers, in order (the trial itself is the job's; here its outcome is given)."""

    def __init__(self, *answers: tuple[str, float | None, str]) -> None:
        self.answers = list(answers)
        self.asked: list[dict[str, str]] = []

    async def __call__(self, candidate: Point) -> Point:
        status, thr, why = self.answers[len(self.asked)]
        self.asked.append(dict(candidate.changes))
        return Point(dict(candidate.changes), status, throughput=thr, ttft_p95_ms=200.0 if thr else None, why=why,
                     restarted=True, memory="out of memory" in why)


async def test_the_verdict_is_the_confirming_runs_not_the_search_figure_that_selected_it() -> None:
    from services.experiments.tune import CONFIRMED, confirm_best

    search, start = _searched()
    measure = Confirmer((OK, 1100.0, ""))
    conf = await confirm_best(search, start, measure, baseline=1000.0, baseline_runs=3)
    assert measure.asked == [{A: "4", B: "0.88"}]  # the search's pick (the most KV cache within noise of the top)
    assert conf.status == CONFIRMED and conf.recommended is not None
    assert conf.recommended.changes == {A: "4", B: "0.88"} and conf.restarts == 1
    # +10 % from the confirmation, not the +20 % the search's 1,200 would say
    assert conf.verdict.startswith("+10 % (±4 %) — better"), conf.verdict
    assert "over the start (the median of its 3 runs on this host)" in conf.verdict
    assert "the search read 1200 tok/s, its confirming run 1100" in conf.verdict
    j = conf.to_json()
    assert (j["throughput"], j["search_throughput"], j["status"]) == (1100.0, 1200.0, CONFIRMED)
    assert j["search_best"]["label"] == "steps 4 · mem 0.88" and j["runs"][0]["change_pct"] == 10.0


async def test_a_confirmation_within_noise_of_the_start_keeps_the_start() -> None:
    from services.experiments.tune import NOT_BETTER, confirm_best

    search, start = _searched()
    measure = Confirmer((OK, 1020.0, ""))  # +2 %: within the ±4.2 % band of two runs
    conf = await confirm_best(search, start, measure, baseline=1000.0)
    assert len(measure.asked) == 1  # the next best is slower by the search's own figures: no second run
    assert conf.status == NOT_BETTER and conf.recommended is start
    assert conf.verdict.startswith("not measurably better than the start: steps 4 · mem 0.88's confirming run "
                                   "read +2 % (±4 %) (no measurable difference)"), conf.verdict
    assert conf.verdict.endswith("keep the start")
    worse = await confirm_best(_searched()[0], start, Confirmer((OK, 900.0, "")), baseline=1000.0)
    assert worse.status == NOT_BETTER and worse.recommended is start and "(worse)" in worse.verdict


async def test_a_failed_confirmation_marks_the_point_and_confirms_the_next_best_once() -> None:
    from services.experiments.tune import CONFIRMED, UNCONFIRMED, confirm_best

    # steps 5 at mem 0.96 ran out of memory after the pick's search run: the confirmation's OOM names it
    crash = Point({A: "5", B: "0.96"}, FAILED, why="crashed under the ramp at C=16 (diagnosis: cuda_oom_runtime)",
                  restarted=True, memory=True)
    search, start = _searched(crash)
    oom = "the server crashed under the ramp at C=16 (diagnosis: cuda_oom_runtime): out of memory"
    measure = Confirmer((FAILED, None, oom), (OK, 1150.0, ""))
    conf = await confirm_best(search, start, measure, baseline=1000.0)
    assert measure.asked == [{A: "4", B: "0.88"}, {A: "2", B: "0.88"}]
    assert conf.status == CONFIRMED and conf.recommended is not None
    assert conf.recommended.changes == {A: "2", B: "0.88"} and conf.restarts == 2
    failed = search.points[(("--mem-fraction-static", "0.88"), ("--speculative-num-steps", "4"))]
    assert failed.status == FAILED and failed.throughput == 1200.0  # the search's figure stays on record
    assert failed.why.startswith(f"its confirming run: {oom}; its run in the search did not fail, and steps 5 · "
                                 "mem 0.96 ran out of memory after it in this tune"), failed.why
    assert "(the search's run read 1200 tok/s)" in failed.why
    assert pareto_front(search.order) and 1 not in pareto_front(search.order)  # off the front
    assert conf.runs[0]["outcome"] == "failed" and conf.runs[1]["outcome"] == CONFIRMED
    assert [ln.split(":")[0] for ln in views.tune_confirmation({"goal": {"concurrency": 16},
                                                               "confirmation": conf.to_json()})] == \
        ["Confirming steps 4 · mem 0.88", "Confirming steps 2 · mem 0.88"]
    # both fail: at most two confirming runs (steps 1, also faster than the start, is not tried), then the answer
    # says so and keeps the start
    search, start = _searched(Point({A: "1", B: "0.88"}, OK, 1100.0, 200.0, kv_tokens=350_000, restarted=True))
    measure = Confirmer((FAILED, None, "not ready within 600 s"), (VIOLATES, 1150.0, "TTFT p95 900 ms is over"))
    conf = await confirm_best(search, start, measure, baseline=1000.0)
    assert len(measure.asked) == 2 and conf.status == UNCONFIRMED and conf.recommended is start
    assert conf.verdict == ("nothing confirmed: steps 4 · mem 0.88's confirming run failed: not ready within 600 s; "
                            "steps 2 · mem 0.88's confirming run failed: TTFT p95 900 ms is over; 2 confirming runs "
                            "were tried: keep the start")
    assert "ran out of memory after it" not in conf.verdict  # no crash in this tune to blame


async def test_nothing_to_confirm_when_the_start_is_the_pick_or_is_next() -> None:
    from services.experiments.tune import START_BEST, UNCONFIRMED, confirm_best

    search = TuneSearch(KNOBS, GOAL, seed=0, budget=10, noise=measure_noise({}, 16))
    start = Point({A: "3", B: "0.88"}, OK, 1000.0, 200.0, kv_tokens=300_000, start=True)
    search.seed_point(start)
    search.tell(Point({A: "4", B: "0.88"}, OK, 1010.0, 200.0, kv_tokens=250_000, restarted=True))
    measure = Confirmer()
    conf = await confirm_best(search, start, measure, baseline=1000.0)
    assert not measure.asked and conf.status == START_BEST and conf.recommended is start and conf.restarts == 0
    assert conf.verdict == "the starting configuration is the best found"
    search.tell(Point({A: "5", B: "0.88"}, OK, 1300.0, 200.0, kv_tokens=200_000, restarted=True))
    conf = await confirm_best(search, start, Confirmer((FAILED, None, "crashed")), baseline=1000.0)
    assert conf.status == UNCONFIRMED and conf.recommended is start
    assert conf.verdict.endswith("the next best is the start itself: keep the start"), conf.verdict


async def test_no_restart_for_a_candidate_whose_search_figure_already_loses_to_the_start() -> None:
    from services.experiments.tune import NOT_BETTER, UNCONFIRMED, confirm_best

    def outside(thr: float) -> tuple[TuneSearch, Point]:  # a start off the grid (mem 0.90): not among the choices
        search = TuneSearch(KNOBS, GOAL, seed=0, budget=10, noise=measure_noise({}, 16))
        start = Point({A: "3", B: "0.90"}, OK, thr, 200.0, start=True)
        search.seed_point(start)
        search.tell(Point({A: "4", B: "0.88"}, OK, 1200.0, 200.0, kv_tokens=250_000, restarted=True))
        search.tell(Point({A: "3", B: "0.80"}, OK, 900.0, 200.0, kv_tokens=100_000, restarted=True))
        return search, start

    search, start = outside(1000.0)
    measure = Confirmer((FAILED, None, "crashed"))
    conf = await confirm_best(search, start, measure, baseline=1000.0)
    assert len(measure.asked) == 1 and conf.status == UNCONFIRMED and conf.recommended is start
    assert conf.verdict.endswith("; the next best, steps 3 · mem 0.80, read −10 % (±4 %) against the start in the "
                                 "search: keep the start"), conf.verdict
    search, start = outside(1300.0)
    measure = Confirmer()
    conf = await confirm_best(search, start, measure, baseline=1300.0)
    assert not measure.asked and conf.status == NOT_BETTER and conf.recommended is start and conf.restarts == 0
    assert conf.verdict == ("not measurably better than the start: the search's best, steps 4 · mem 0.88, read −8 % "
                            "(±4 %) (worse) at C=16 over the start; keep the start")


async def test_a_resumed_tune_answers_a_confirmation_its_earlier_job_finished_without_a_restart() -> None:
    from services.experiments.tune import CONFIRMED, confirm_best

    search, start = _searched()
    earlier = Point({A: "4", B: "0.88"}, FAILED, why="crashed under the ramp", restarted=True)  # job 1's, as stored
    measure = Confirmer((OK, 1150.0, ""))
    conf = await confirm_best(search, start, measure, baseline=1000.0, earlier=[Point.from_json(earlier.to_json())])
    assert measure.asked == [{A: "2", B: "0.88"}]  # steps 4's confirmation is job 1's: not restarted again
    assert [(r["label"], r["resumed"], r["outcome"]) for r in conf.runs] == [
        ("steps 4 · mem 0.88", True, "failed"), ("steps 2 · mem 0.88", False, CONFIRMED)]
    assert conf.restarts == 2  # its restart counts, as a resumed point's does
