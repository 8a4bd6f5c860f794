"""Does `tune` find the true optimum in a fraction of a grid's restarts? Against the simulator's known surface.

The space is the simulated SGLang host's (`simhost/sglang/model.py`): `--speculative-num-steps` 1..8 and
`--mem-fraction-static` 0.80..0.94 by 0.02 (64 configurations), the goal is the aggregate output throughput at
C=16 with TTFT p95 < 500 ms, starting from the seed scenario's unit (steps 5, mem 0.88). The simulator's model
gives each configuration's truth:

* capacity: KV tokens and max running requests (`max_total_num_tokens`, `max_running_requests`);
* start-up failure when the draft worker's workspace is negative ("Not enough memory");
* a crash under load when a batch of min(C, max running) needs more workspace than there is (CUDA OOM: the ramp
  stops it);
* throughput at C: B x the per-request rate at batch B = min(C, max running) (the model's batch slowdown);
* TTFT p95: the prefill of the batch; when max running < C the queued requests wait a whole request
  (output 256 tokens) for their first token.

Each measured throughput is the truth times 1 + N(0, 1.5 %) (the run-to-run noise pitcrew assumes without repeats,
`verdicts.PRIOR_RUN_SD_PCT`). The search runs through the same code the `tune` job runs
(`services.experiments.tune.TuneSearch` + `search_loop` + `forecast_refusal` with the real capacity forecast fitted
on the tune's own measured starts), then the job's confirmation of the pick (`confirm_best`: one more restart,
measured with the same noise; the verdict and the recommendation are that run's); only the trial itself (deploy,
ramp, benchmark) is replaced by the model. Restarts count the confirming ones. For comparison the same loop runs
with Optuna's `RandomSampler` in place of TPE (same budget, same gates and stopping rules). The grid evaluates all
64 configurations with the same noise and chooses with the same rule (`TuneSearch.choose`; the grid is not
confirmed). A run is "within noise" when its recommendation (after the confirmation: the start when the pick was not
measurably better) truly meets the constraint and its true throughput is within the 95 % noise band (1.96 x sqrt(2)
x 1.5 % = 4.2 %) of the true optimum's; `pick_within_noise` judges the search's pick before the confirmation, and
`search_bias_pct_mean` / `confirm_bias_pct_mean` how far the pick's search figure and its confirming run read above
its truth.

`left_down` cannot come from the model: the script also runs one full `tune` job (the real router, job runner,
SQLite and a SimHost over SSH at time scale 0.01, the `healthy` scenario: steps 3, mem 0.88) over steps 2..4 x mem
0.84,0.90 for throughput at 16 with TTFT p95 under 250 ms, whose grid holds a configuration that dies of CUDA OOM
under the ramp. `left_down` is the number of trials after which the job found the unit not active (it reads
`systemctl show` after every trial, then puts the start back), plus 1 if after the job the unit file is not the
starting one or the server does not answer a completion. `--no-job` skips it; `--job-engine vllm` runs it on the
simulated vLLM host instead (`tune spec tokens 2..4, mem 0.9,0.95 ...`: spec tokens 4 at 0.95 of the GPU dies of
CUDA OOM under the ramp).

    .venv/bin/python benchmarks/bench_tune.py [--runs 10] [--no-job] [--chart docs/img/tune-example.png]

**`--llamacpp`: the acceptance check on the real llama.cpp engine** (needs `make engine`). A SimHost whose unit is
the real `llama-server` (SmolLM2-135M on the CPU, scenario `healthy`: ngram-simple draft length 3, `-np 2`), the
real bot core (router, job runner, SQLite) over SSH:

1. `bench` the start `--repeats` times at the goal's concurrency, so the tune's verdict uses this host's measured
   run-to-run noise instead of the assumed ±1.5 %;
2. `tune draft tokens 1..6, max running 1..4 for throughput at C` (the default budget: 35 % of the 24
   configurations), to its end: best, verdict, chart; the unit must end on the start;
3. the follow-up: the tune's *Apply* command (a normal `try` of the best, benchmarked at C), then `bench c=C`
   `--repeats` times on it;
4. consistent when the follow-up's median throughput at C is within the noise band (the verdicts' band for two
   runs, with the noise measured from every repeat at the end) of the tune's figure for the best, and its verdict
   against the start (the pre-tune benches and the tune's own start measurement, their median: the job's own
   baseline) is the tune's, both judged with that same noise (`tune_outcome`, `follow_up_outcome`; the job's own
   words, with the noise it knew then, are `tune_job_outcome`).

    .venv/bin/python benchmarks/bench_tune.py --llamacpp [--concurrency 4] [--requests 16] [--repeats 3]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import math
import random
import statistics
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import optuna  # noqa: E402

from services.engines import apply_changes  # noqa: E402
from services.experiments.forecast import config_point, forecast  # noqa: E402
from services.experiments.tune import (  # noqa: E402
    FAILED,
    OK,
    Goal,
    Point,
    TuneKnob,
    TuneSearch,
    confirm_best,
    default_budget,
    forecast_refusal,
    goal_status,
    grid_size,
    search_loop,
)
from services.experiments.verdicts import PRIOR_RUN_SD_PCT, Z95, measure_noise  # noqa: E402
from services.units import read_exec_start  # noqa: E402
from simhost.scenarios import unit_text  # noqa: E402
from simhost.sglang import model  # noqa: E402

STEPS = "--speculative-num-steps"
MEM = "--mem-fraction-static"
KNOBS = (TuneKnob(STEPS, tuple(str(s) for s in range(1, 9))),
         TuneKnob(MEM, tuple(f"{0.80 + 0.02 * i:.2f}" for i in range(8))))
GOAL = Goal(16, 500.0)
INPUT_LEN, OUTPUT_LEN = 256, 256
START = {STEPS: "5", MEM: "0.88"}
BAND_PCT = Z95 * math.sqrt(2.0) * PRIOR_RUN_SD_PCT


def truth(changes: dict[str, str]) -> dict[str, Any]:
    """The simulator's model for one configuration (no noise)."""
    steps, f = int(changes[STEPS]), float(changes[MEM])
    d = steps + 1
    tokens = model.max_total_num_tokens(d, f, model.T0_MIB)
    ws = model.workspace_gib(d, f, model.T0_MIB, 0.0)
    if tokens <= 0 or ws < 0:
        return {"status": FAILED, "why": "Not enough memory at start-up"}
    running = model.max_running_requests(tokens, None)
    batch = min(GOAL.concurrency, running)
    cap = {"max_total_num_tokens": tokens, "max_running_requests": running}
    if model.oom_at(batch, d, ws):
        return {"status": FAILED, "why": f"CUDA OOM under the ramp at C={batch}", "capacity": cap}
    rate = model.per_request_rate(model.speed(steps)[1], batch)
    ttft = batch * INPUT_LEN / model.PREFILL_TOK_S * 1000.0
    if running < GOAL.concurrency:
        ttft += OUTPUT_LEN / rate * 1000.0
    thr = batch * rate
    return {"status": goal_status(GOAL, thr, ttft), "throughput": thr, "ttft_p95_ms": ttft, "capacity": cap}


def true_optimum() -> tuple[dict[str, str], float]:
    grid = [{STEPS: s, MEM: m} for s in KNOBS[0].values for m in KNOBS[1].values]
    ok = [(c, truth(c)) for c in grid]
    best = max((t for t in ok if t[1]["status"] == OK), key=lambda t: t[1]["throughput"])
    return best[0], float(best[1]["throughput"])


class ModelHost:
    """A trial on the model: the point's truth with measurement noise, and the host's recorded starts."""

    def __init__(self, rng: random.Random) -> None:
        self.rng = rng
        self.argv = read_exec_start(unit_text(5, Path("/models/q"), 30000)).argv
        self.history: list[Any] = []

    def argv_of(self, changes: dict[str, str]) -> tuple[str, ...]:
        return apply_changes(self.argv, changes).new_argv

    def measure(self, changes: dict[str, str], *, restarted: bool = True) -> Point:
        t = truth(changes)
        cap = t.get("capacity") or {}
        if cap:
            self.history.append(config_point(self.argv_of(changes), cap, label=str(changes)))
        if t["status"] == FAILED:
            return Point(changes, FAILED, why=t["why"], kv_tokens=cap.get("max_total_num_tokens"),
                         max_running=cap.get("max_running_requests"), restarted=restarted, memory=True)
        thr = t["throughput"] * (1.0 + self.rng.gauss(0.0, PRIOR_RUN_SD_PCT / 100.0))
        return Point(changes, goal_status(GOAL, thr, t["ttft_p95_ms"]), throughput=thr, ttft_p95_ms=t["ttft_p95_ms"],
                     kv_tokens=cap["max_total_num_tokens"], max_running=cap["max_running_requests"],
                     restarted=restarted, start=not restarted)

    async def evaluate(self, changes: dict[str, str]) -> Point:
        return self.measure(changes)

    async def confirm(self, candidate: Point) -> Point:
        """The confirming run: a restart of the candidate and a fresh measurement with the model's noise."""
        return self.measure(candidate.changes)

    async def gate(self, changes: dict[str, str]) -> str | None:
        fc = forecast(config_point(self.argv_of(changes)), self.history)
        return forecast_refusal(fc, GOAL, changes)


def judge(best: Point | None, opt_thr: float) -> bool:
    if best is None:
        return False
    t = truth(best.changes)
    return t["status"] == OK and t["throughput"] >= opt_thr * (1.0 - BAND_PCT / 100.0)


async def one_tune(seed: int, opt_thr: float, *, random_sampler: bool = False) -> dict[str, Any]:
    host = ModelHost(random.Random(1000 + seed))
    sampler = optuna.samplers.RandomSampler(seed=seed) if random_sampler else None
    search = TuneSearch(KNOBS, GOAL, seed=seed, budget=default_budget(KNOBS), noise=measure_noise({}, 16),
                        sampler=sampler)
    start = host.measure(START, restarted=False)
    search.seed_point(start)
    t0 = time.process_time()
    await search_loop(search, host.evaluate, host.gate)
    cpu = time.process_time() - t0
    pick = search.choose().best
    failed = sum(1 for p in search.order if p.status == FAILED)
    refused = sum(1 for p in search.order if p.status == "refused")
    # the job's confirmation of the pick before the verdict (the start's one measurement is the baseline)
    conf = await confirm_best(search, start, host.confirm, baseline=start.throughput)
    best = conf.recommended
    run = conf.runs[-1] if conf.runs else {}
    bias = {}  # how far the pick's search figure and its confirming run read above its truth (the winner's curse)
    if run.get("throughput") and run.get("search_throughput"):
        t = truth(run["changes"])["throughput"]
        bias = {"search_bias_pct": 100.0 * (run["search_throughput"] / t - 1.0),
                "confirm_bias_pct": 100.0 * (run["throughput"] / t - 1.0)}
    return {"seed": seed, "restarts": search.restarts + conf.restarts, "search_restarts": search.restarts,
            "confirm_restarts": conf.restarts, "confirmation": conf.status, "failed": failed,
            "refused_before_restart": refused, "pick": pick.changes if pick else None,
            "pick_within_noise": judge(pick, opt_thr), "best": best.changes if best else None,
            "within_noise": judge(best, opt_thr), "stopped": search.stopped, "cpu_s": round(cpu, 2), **bias}


def one_grid(seed: int, opt_thr: float) -> dict[str, Any]:
    host = ModelHost(random.Random(1000 + seed))
    search = TuneSearch(KNOBS, GOAL, seed=seed, budget=grid_size(KNOBS), noise=measure_noise({}, 16))
    for s in KNOBS[0].values:
        for m in KNOBS[1].values:
            search.tell(host.measure({STEPS: s, MEM: m}))
    best = search.choose().best
    return {"seed": seed, "restarts": search.restarts, "best": best.changes if best else None,
            "within_noise": judge(best, opt_thr)}


JOB_BENCH = {"concurrency": [16], "requests_per_level": 32, "warmup": 1, "input_len": 32, "output_len": 96}
JOB_TUNE = "tune steps 2..4, mem 0.84,0.90 for throughput at 16 with ttft p95 under 250ms in 6 restarts"
# the simulated vLLM host (`--job-engine vllm`): spec tokens in its --speculative-config, mem = gpu-memory-utilization
JOB_TUNES = {"sglang": JOB_TUNE,
             "vllm": "tune spec tokens 2..4, mem 0.9,0.95 for throughput at 16 with ttft p95 under 250ms in 6 restarts"}


async def run_job(chart: str | None = None, engine: str = "sglang") -> dict[str, Any]:
    """One full tune job on a simulated host (see the module docstring)."""
    import tempfile
    from contextlib import AsyncExitStack

    import httpx

    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests" / "reliability"))
    from rel_kit import RelBot, job_id_of, settings_for

    from bot.app import build_core
    from simhost.host import SimHost

    scale = 0.01
    with tempfile.TemporaryDirectory() as tmp:
        async with AsyncExitStack() as stack:
            sim = await stack.enter_async_context(SimHost(Path(tmp) / "sim", scenario="healthy", time_scale=scale,
                                                          engine=engine))
            core = await build_core(settings_for(sim.info, f"sqlite+aiosqlite:///{tmp}/bot.db", bench=JOB_BENCH),
                                    stack, transport="bench", time_scale=scale, watch_journals=False,
                                    start_scheduler=False)
            await sim.wait_ready(60)
            before = Path(sim.unit_path).read_text()
            t0 = time.monotonic()
            job_id = job_id_of(await RelBot(core, sim).say(JOB_TUNES[engine]))
            while (job := await core.jobs.get(job_id)).state in ("queued", "running"):  # noqa: ASYNC110
                await asyncio.sleep(0.1)
            wall = time.monotonic() - t0
            async with httpx.AsyncClient(timeout=10) as client:
                r = await client.post(f"{sim.info['server_url']}/v1/completions",
                                      json={"model": "x", "prompt": "hi", "max_tokens": 4})
            restored = Path(sim.unit_path).read_text() == before and r.status_code == 200
            res = job.result or {}
            pts = res.get("points") or []
            if chart:
                from handlers import charts

                png = await charts.tune_png(res)
                if png:
                    Path(chart).write_bytes(png)
            conf = res.get("confirmation") or {}
            return {"state": job.state, "wall_s": round(wall, 1), "restarts": res.get("restarts"),
                    "search_restarts": res.get("search_restarts"), "grid": res.get("grid"),
                    "best": (res.get("best") or {}).get("label"),
                    "search_best": (conf.get("search_best") or {}).get("label"), "confirmation": conf.get("status"),
                    "confirming_runs": [(r.get("label"), r.get("search_throughput"), r.get("throughput"),
                                         r.get("outcome")) for r in conf.get("runs") or []],
                    "verdict": res.get("verdict"),
                    "failed": [p["label"] for p in pts if p["status"] == FAILED],
                    "refused": [p["label"] for p in pts if p["status"] == "refused"],
                    "left_down": int(res.get("left_down") or 0) + (0 if restored else 1), "restored": restored}


async def run_llamacpp(concurrency: int, requests: int, repeats: int, chart: str | None) -> dict[str, Any]:
    """The acceptance check on the real llama.cpp engine (see the module docstring)."""
    import tempfile
    from contextlib import AsyncExitStack

    import httpx

    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests" / "reliability"))
    from rel_kit import RelBot, job_id_of, settings_for

    from bot.app import build_core
    from services.experiments.verdicts import BETTER, NOISY, SAME, WORSE, compare_samples
    from simhost.host import SimHost

    bench = {"concurrency": [concurrency], "requests_per_level": requests, "warmup": 1, "input_len": 64,
             "output_len": 64}
    scale = 0.01
    c = concurrency
    with tempfile.TemporaryDirectory() as tmp:
        async with AsyncExitStack() as stack:
            sim = await stack.enter_async_context(SimHost(Path(tmp) / "sim", scenario="healthy", time_scale=scale,
                                                          engine="llamacpp"))
            core = await build_core(settings_for(sim.info, f"sqlite+aiosqlite:///{tmp}/bot.db", bench=bench),
                                    stack, transport="bench", time_scale=scale, watch_journals=False,
                                    start_scheduler=False)
            await sim.wait_ready(60)
            bot = RelBot(core, sim)
            host = sim.info["name"]
            before = Path(sim.unit_path).read_text()

            async def run(text: str) -> Any:
                job_id = job_id_of(await bot.say(text))
                while (job := await core.jobs.get(job_id)).state in ("queued", "running"):  # noqa: ASYNC110
                    await asyncio.sleep(0.2)
                return job

            async def throughput(job: Any) -> float | None:
                runs = await core.results.for_job(job.id)
                lv = runs[-1].level(c) if runs else None
                return lv.output_tok_s if lv is not None else None

            t0 = time.monotonic()
            start_benches = []
            for _ in range(repeats):
                job = await run(f"bench c={c}")
                start_benches.append(await throughput(job))
                print(f"start bench: {start_benches[-1]} tok/s at C={c}", flush=True)
            tune = await run(f"tune draft tokens 1..6, max running 1..4 for throughput at {c}")
            tune_wall = time.monotonic() - t0
            res = tune.result or {}
            for p in res.get("points") or []:
                print(f"  {p['label']:<34} {p['status']:<8} {p.get('throughput') or 0:7.1f} tok/s  TTFT p95 "
                      f"{p.get('ttft_p95_ms') or 0:7.0f} ms  {'start' if p.get('start') else ''}"
                      f"{(p.get('why') or '')[:80]}", flush=True)
            print(f"tune job {tune.id}: {tune.state}; {tune.summary}", flush=True)
            if chart and res:
                from handlers import charts

                png = await charts.tune_png(res)
                if png:
                    Path(chart).write_bytes(png)
            async with httpx.AsyncClient(timeout=30) as client:
                r = await client.post(f"{sim.info['server_url']}/v1/completions",
                                      json={"model": "x", "prompt": "hi", "max_tokens": 4})
            restored = Path(sim.unit_path).read_text() == before and r.status_code == 200
            best = res.get("best") or {}
            conf = res.get("confirmation") or {}
            for r in conf.get("runs") or []:
                print(f"  confirming {r.get('label')}: search read {r.get('search_throughput') or 0:.1f}, confirmation "
                      f"{r.get('throughput') or 0:.1f} tok/s ({r.get('outcome')})", flush=True)
            # the tune's figure for its recommendation: its confirming run's (the verdict's), not the search's
            tune_figure = conf.get("throughput") if conf.get("status") == "confirmed" else best.get("throughput")
            follow: list[float | None] = []
            if best and not best.get("start"):
                from handlers.commands import Try
                from handlers.grammar_render import render_try

                applied = await run(render_try(Try(changes=tuple((best.get("changes") or {}).items()), host=host)))
                follow.append(await throughput(applied))
                print(f"apply ({applied.state}): {follow[-1]} tok/s at C={c}; {applied.summary}", flush=True)
            for _ in range(repeats if best else 0):
                job = await run(f"bench c={c}")
                follow.append(await throughput(job))
                print(f"follow-up bench: {follow[-1]} tok/s at C={c}", flush=True)
            model = next((x.model for x in await core.results.for_job(tune.id)), "")
            noise = measure_noise(await core.results.repeats(host, model), c)
            start_figs = [x for x in [*start_benches, (res.get("start") or {}).get("throughput")] if x]
            follow_figs = [x for x in follow if x]
            out: dict[str, Any] = {
                "engine": "llamacpp", "concurrency": c, "requests": requests, "tune_state": tune.state,
                "tune_wall_s": round(tune_wall, 1), "restarts": res.get("restarts"), "grid": res.get("grid"),
                "left_down": int(res.get("left_down") or 0) + (0 if restored else 1),
                "tune_noise_pct": res.get("noise_pct"), "best": best.get("label"),
                "search_best": (conf.get("search_best") or {}).get("label"), "confirmation": conf.get("status"),
                "search_tok_s": (conf.get("search_best") or {}).get("throughput"),
                "confirm_tok_s": conf.get("throughput"),
                "search_restarts": res.get("search_restarts"),
                "best_tok_s": tune_figure, "start_tok_s": (res.get("start") or {}).get("throughput"),
                "tune_verdict": res.get("verdict"), "start_benches": start_benches, "follow_up": follow,
                "noise_pct_end": round(noise.sd_pct, 2), "noise_source": noise.source}
            if tune_figure and not best.get("start") and follow_figs and start_figs:
                follow_med = statistics.median(follow_figs)
                start_med = statistics.median(start_figs)
                same = compare_samples((), (), new_median=follow_med, old_median=float(tune_figure),
                                       noise=noise, concurrency=c)
                tune_cmp = compare_samples((), (), new_median=float(tune_figure), old_median=start_med,
                                           noise=noise, concurrency=c)
                follow_cmp = compare_samples((), (), new_median=follow_med, old_median=start_med, noise=noise,
                                             concurrency=c)
                assert same is not None and tune_cmp is not None and follow_cmp is not None
                out.update(follow_up_median=round(follow_med, 1), start_median=round(start_med, 1),
                           follow_vs_tune_pct=round(same.change_pct, 1), band_pct=round(same.band_pct, 1),
                           within_band=abs(same.change_pct) <= same.band_pct,
                           tune_job_outcome=next((o for o in (BETTER, WORSE, SAME, NOISY)
                                                  if o in str(res.get("verdict"))), None),
                           tune_outcome=tune_cmp.outcome, follow_up_outcome=follow_cmp.outcome,
                           follow_up_verdict=follow_cmp.text(),
                           consistent=abs(same.change_pct) <= same.band_pct
                           and tune_cmp.outcome == follow_cmp.outcome)
            elif best.get("start"):
                # the tune recommends keeping the start (the start was the best found, or its pick's confirmation
                # was not measurably better or failed): consistent when the follow-up benches of the start, which
                # the script then runs on the restored unit, are not measurably different from the start before
                out.update(consistent=None, note=f"the tune kept the start ({conf.get('status')}): nothing to apply")
                if follow_figs and start_figs:
                    keep = compare_samples((), (), new_median=statistics.median(follow_figs),
                                           old_median=statistics.median(start_figs), noise=noise, concurrency=c)
                    if keep is not None:
                        out.update(follow_up_vs_start=keep.text(), consistent=keep.outcome not in (BETTER, WORSE))
            return out


async def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--runs", type=int, default=10)
    ap.add_argument("--no-job", action="store_true")
    ap.add_argument("--chart", help="write the tune job's Pareto chart (PNG) here")
    ap.add_argument("--job-engine", choices=sorted(JOB_TUNES), default="sglang",
                    help="the simulated engine of the one full job")
    ap.add_argument("--llamacpp", action="store_true", help="the acceptance check on the real llama.cpp engine")
    ap.add_argument("--concurrency", type=int, default=4, help="--llamacpp: the goal's concurrency")
    ap.add_argument("--requests", type=int, default=16, help="--llamacpp: requests per benchmark")
    ap.add_argument("--repeats", type=int, default=3, help="--llamacpp: benches of the start and of the best")
    args = ap.parse_args()
    if args.llamacpp:
        print(json.dumps(await run_llamacpp(args.concurrency, args.requests, args.repeats, args.chart)))
        return
    opt, opt_thr = true_optimum()
    grid_n = grid_size(KNOBS)
    print(f"space: steps 1..8 x mem 0.80..0.94 ({grid_n} configurations); goal {GOAL.describe()}; "
          f"true optimum {opt} at {opt_thr:.0f} tok/s; noise band ±{BAND_PCT:.1f} %; "
          f"budget {default_budget(KNOBS)} restarts")
    tunes = [await one_tune(seed, opt_thr) for seed in range(args.runs)]
    grids = [one_grid(seed, opt_thr) for seed in range(args.runs)]
    randoms = [await one_tune(seed, opt_thr, random_sampler=True) for seed in range(args.runs)]
    for t in tunes:
        print(f"tune seed {t['seed']}: {t['restarts']} restarts ({t['confirm_restarts']} confirming; {t['failed']} "
              f"failed, {t['refused_before_restart']} refused before a restart), pick {t['pick']} "
              f"({t['confirmation']}), recommended {t['best']}, within noise {t['within_noise']}; {t['stopped']}")
    for g in grids:
        print(f"grid seed {g['seed']}: {g['restarts']} restarts, best {g['best']}, within noise {g['within_noise']}")
    job = None if args.no_job else await run_job(args.chart, args.job_engine)
    if job is not None:
        print(f"tune job on the simulated host: {job}")
    restarts = statistics.fmean(t["restarts"] for t in tunes)
    biased = [t for t in tunes if "search_bias_pct" in t]
    out = {"runs": args.runs, "within_noise": sum(t["within_noise"] for t in tunes),
           "pick_within_noise": sum(t["pick_within_noise"] for t in tunes),
           "restarts_pct_of_grid": round(100.0 * restarts / grid_n, 1),
           "restarts_max_pct_of_grid": round(100.0 * max(t["restarts"] for t in tunes) / grid_n, 1),
           "restarts_mean": round(restarts, 1), "restarts_max": max(t["restarts"] for t in tunes),
           "confirm_restarts_mean": round(statistics.fmean(t["confirm_restarts"] for t in tunes), 2),
           "confirmations": {s: sum(1 for t in tunes if t["confirmation"] == s)
                             for s in sorted({t["confirmation"] for t in tunes})},
           "search_bias_pct_mean": round(statistics.fmean(t["search_bias_pct"] for t in biased), 2) if biased
           else None,
           "confirm_bias_pct_mean": round(statistics.fmean(t["confirm_bias_pct"] for t in biased), 2) if biased
           else None,
           "grid_restarts": grid_n, "grid_within_noise": sum(g["within_noise"] for g in grids),
           "random_sampler_within_noise": sum(r["within_noise"] for r in randoms),
           "random_sampler_restarts_pct_of_grid": round(100.0 * statistics.fmean(r["restarts"] for r in randoms)
                                                        / grid_n, 1),
           "failed_trials_mean": round(statistics.fmean(t["failed"] for t in tunes), 1),
           "grid_failed_trials": sum(1 for s in KNOBS[0].values for m in KNOBS[1].values
                                     if truth({STEPS: s, MEM: m})["status"] == FAILED),
           "search_cpu_s_mean": round(statistics.fmean(t["cpu_s"] for t in tunes), 2),
           "left_down": job["left_down"] if job else None,
           "job_best": job["best"] if job else None, "job_restarts": job["restarts"] if job else None,
           "job_wall_s": job["wall_s"] if job else None, "true_optimum": opt,
           "true_within_band": [f"steps {s} mem {m}" for s in KNOBS[0].values for m in KNOBS[1].values
                                if judge(Point({STEPS: s, MEM: m}, OK), opt_thr)], "band_pct": round(BAND_PCT, 2)}
    print(json.dumps(out))


if __name__ == "__main__":
    asyncio.run(main())
