"""pitcrew's own overhead in a `try` cycle, and how soon after SGLang's ready line readiness is seen.

Runs K `try` jobs (alternating `try 4 steps` / `try 5 steps`, so each one deploys) through the real
router and job runner against a simulated host over SSH (SQLite). For each job, from the `job_steps`
table and the host's journal (`__REALTIME_TIMESTAMP` of each entry):

* wall       = job finished_at - started_at
* sim phases = the server's own work, as the journal shows it: stop (`Stopping` -> `Stopped`) and
               load (`Started` -> SGLang's ready line `The server is fired up and ready to roll!`)
* bench      = the benchmark's own measured time (sum of the levels' `duration_s` in the stored run)
* ramp       = the ramp step (issue 15: 1, 2, 4, ... requests at once up to the top level before the
               benchmark): deliberate load on the server, not counted as overhead
* overhead   = wall - sim phases - bench - ramp: reading the unit, revisions, upload, daemon-reload, the
               stop/GPU-release polls, following the journal, /health and the test generation, the
               benchmark child's start, storing results, every database write
* ready lag  = when pitcrew saw the ready line (start step's started_at + its `ready_line_s`) minus
               the ready line's journal timestamp; `serving lag` = when the start step ended (after
               /health and one real generation) minus the ready line.

Goals: overhead < 2 s, ready lag < 1 s (issue 5). Printed per job, then median and max, PASS/FAIL.

`--rollback` (issue 15) measures instead, on the `seed` scenario (steps 5 serving), `try 10 steps` — the field
notes' configuration that starts, serves one request and dies of CUDA OOM as soon as two decode together —
from the confirmation (`yes <job>`) to the job's end (rolled back, the old revision serving again), with the
ramp off (the benchmark's C=1 level runs in full before C=4 kills the server: the old cliff) and on (1, 2, 4, ...
requests at once; it dies at C=2). Each try's preflight (the preview: engine flags, host checks, forecast) is
timed too, as the latency `try` adds before anything is queued. Goal: the ramp rolls back at least 3x sooner.

    .venv/bin/python benchmarks/bench_try_overhead.py [--tries 6] [--time-scale 0.01]
    .venv/bin/python benchmarks/bench_try_overhead.py --rollback [--tries 3]

`--preflight` times the preflight's parts over SSH against the simulated host, K times each: the engine flag
table read (version probe + `--help` + the parser's types, what a version change costs), the cached flag check
(the version probe only), and the host checks (one SSH exec). Goal for the host checks: < 2 s.

    .venv/bin/python benchmarks/bench_try_overhead.py --preflight [--tries 10]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import sys
import tempfile
import time
from contextlib import AsyncExitStack
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tests" / "reliability"))

GOAL_OVERHEAD_S = 2.0
GOAL_READY_S = 1.0
BENCH = {"concurrency": [1], "requests_per_level": 2, "warmup": 0, "input_len": 16, "output_len": 32}


def _ts(entry: dict[str, Any]) -> datetime:
    return datetime.fromtimestamp(int(entry["__REALTIME_TIMESTAMP"]) / 1e6, tz=UTC)


def _phases(entries: list[dict[str, Any]], t_from: datetime, t_to: datetime) -> dict[str, datetime]:
    from services.engines import engine_named

    is_ready_line = engine_named("sglang").is_ready_line

    out: dict[str, datetime] = {}
    for e in entries:
        t = _ts(e)
        if not t_from <= t <= t_to:
            continue
        msg = str(e.get("MESSAGE") or "")
        if e.get("SYSLOG_IDENTIFIER") == "systemd" and e.get("UNIT") == "sglang.service":
            for word in ("Stopping", "Stopped", "Started"):
                if msg.startswith(word) and word not in out:
                    out[word] = t
        elif e.get("_SYSTEMD_UNIT") == "sglang.service" and is_ready_line(msg) and "ready" not in out:
            out["ready"] = t
    return out


async def run(tries: int, scale: float, systemd: str = "python") -> dict[str, Any]:
    from rel_kit import RelBot, job_id_of, settings_for
    from sqlalchemy import select

    from bot.app import build_core
    from services.store.models import BenchRun, JobStep
    from simhost.host import SimHost

    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        async with AsyncExitStack() as stack:
            sim = await stack.enter_async_context(SimHost(Path(tmp) / "sim", time_scale=scale, systemd=systemd))
            core = await build_core(settings_for(sim.info, f"sqlite+aiosqlite:///{tmp}/bot.db", bench=BENCH), stack,
                                    transport="bench", time_scale=scale, watch_journals=False,
                                    start_scheduler=False)
            bot = RelBot(core, sim)
            await sim.wait_ready(60)
            for i in range(tries):
                job_id = job_id_of(await bot.say(f"try {4 + i % 2} steps"))
                while (job := await core.jobs.get(job_id)).state in ("queued", "running"):  # noqa: ASYNC110
                    await asyncio.sleep(0.02)
                if job.state != "succeeded":
                    raise SystemExit(f"job {job_id} {job.state}: {job.summary}")
                async with core.db.sessions() as s:
                    steps = {st.name: st for st in (await s.execute(
                        select(JobStep).where(JobStep.job_id == job_id))).scalars()}
                    bench_run = await s.scalar(select(BenchRun).where(BenchRun.job_id == job_id))
                entries = await sim.journal_entries()
                ph = _phases(entries, job.started_at, job.finished_at)
                wall = (job.finished_at - job.started_at).total_seconds()
                stop_s = (ph["Stopped"] - ph["Stopping"]).total_seconds()
                load_s = (ph["ready"] - ph["Started"]).total_seconds()
                bench_s = sum(float(lv.get("duration_s") or 0) for lv in (bench_run.raw or {}).get("levels", []))
                ramp_s = (steps["ramp"].finished_at - steps["ramp"].started_at).total_seconds() \
                    if "ramp" in steps else 0.0
                start = steps["start"]
                seen = start.started_at.timestamp() + float(start.detail["ready_line_s"])
                rows.append({"job": job_id, "wall_s": wall, "sim_stop_s": stop_s, "sim_load_s": load_s,
                             "bench_s": bench_s, "ramp_s": ramp_s,
                             "overhead_s": wall - stop_s - load_s - bench_s - ramp_s,
                             "ready_lag_s": seen - ph["ready"].timestamp(),
                             "serving_lag_s": (start.finished_at - ph["ready"]).total_seconds(),
                             "steps_s": {k: round((v.finished_at - v.started_at).total_seconds(), 3)
                                         for k, v in steps.items()}})
    return {"time_scale": scale, "tries": tries, "systemd": systemd, "rows": rows}


# pitcrew's default benchmark (bench.* settings): what a try runs when nobody narrows it
ROLLBACK_BENCH = {"concurrency": [1, 4, 16], "requests_per_level": 32, "warmup": 2, "input_len": 256,
                  "output_len": 256}
GOAL_RAMP_SPEEDUP = 10.0  # on the time from ready to the failure being found


async def run_rollback(tries: int, scale: float, ramp: bool) -> list[dict[str, float]]:
    """Confirm -> rolled back (job end) for `try 10 steps` on the seed scenario, `tries` times."""
    from rel_kit import RelBot, job_id_of, settings_for
    from sqlalchemy import select

    from bot.app import build_core
    from services.store.models import JobStep
    from simhost.host import SimHost

    rows = []
    for _ in range(tries):
        with tempfile.TemporaryDirectory() as tmp:
            async with AsyncExitStack() as stack:
                sim = await stack.enter_async_context(SimHost(Path(tmp) / "sim", scenario="seed", time_scale=scale))
                settings = settings_for(sim.info, f"sqlite+aiosqlite:///{tmp}/bot.db", bench=ROLLBACK_BENCH,
                                        policy={"confirm": ["try"], "ramp_before_benchmark": ramp})
                core = await build_core(settings, stack, transport="bench", time_scale=scale, watch_journals=False,
                                        start_scheduler=False)
                bot = RelBot(core, sim)
                await sim.wait_ready(60)
                t0 = time.monotonic()
                reply = await bot.say("try 10 steps")
                preview_s = time.monotonic() - t0
                job_id = job_id_of(reply)
                t_confirm = time.monotonic()
                await bot.say(f"yes {job_id}")
                while (job := await core.jobs.get(job_id)).state in ("queued", "running",  # noqa: ASYNC110
                                                                      "awaiting_confirmation"):
                    await asyncio.sleep(0.02)
                done = time.monotonic() - t_confirm
                if job.state != "failed" or not (job.result or {}).get("rolled_back_to"):
                    raise SystemExit(f"job {job_id} {job.state} (expected a rolled-back failure): {job.summary}")
                async with core.db.sessions() as s:
                    steps = list((await s.execute(select(JobStep).where(JobStep.job_id == job_id)
                                                  .order_by(JobStep.id))).scalars())
                ready = next(st for st in steps if st.name == "start").finished_at
                found = next(st for st in steps if st.name in ("ramp", "benchmark")).finished_at
                rows.append({"preview_s": preview_s, "confirm_to_rollback_s": done,
                             "ready_to_failure_s": (found - ready).total_seconds()})
    return rows


GOAL_HOST_CHECKS_S = 2.0


async def run_preflight(tries: int, scale: float) -> dict[str, list[float]]:
    from rel_kit import settings_for

    from bot.app import build_core
    from services.experiments.host_checks import check_host
    from services.experiments.preflight import EngineFlagCache, check_flags
    from services.units import read_exec_start
    from simhost.host import SimHost

    out: dict[str, list[float]] = {"flag table read": [], "flag check (cached)": [], "host checks": []}
    with tempfile.TemporaryDirectory() as tmp:
        async with AsyncExitStack() as stack:
            sim = await stack.enter_async_context(SimHost(Path(tmp) / "sim", time_scale=scale))
            core = await build_core(settings_for(sim.info, f"sqlite+aiosqlite:///{tmp}/bot.db"), stack,
                                    transport="bench", time_scale=scale, watch_journals=False, start_scheduler=False)
            await sim.wait_ready(60)
            host = core.experiments.hosts.get(sim.info["name"])
            text = Path(sim.unit_path).read_text()
            argv = read_exec_start(text).argv
            for _ in range(tries):
                cache = EngineFlagCache()
                t0 = time.monotonic()
                await check_flags(cache, host, argv)
                out["flag table read"].append(time.monotonic() - t0)
                t0 = time.monotonic()
                await check_flags(cache, host, argv)
                out["flag check (cached)"].append(time.monotonic() - t0)
                t0 = time.monotonic()
                await check_host(host, sim.info["unit"], text, argv)
                out["host checks"].append(time.monotonic() - t0)
    return out


def main_preflight(args: argparse.Namespace) -> int:
    res = asyncio.run(run_preflight(args.tries, args.time_scale))
    print(f"preflight over SSH against the simulated host ({args.tries} runs each)")
    for name, ts in res.items():
        print(f"  {name:20} median {statistics.median(ts) * 1000:6.0f} ms, max {max(ts) * 1000:6.0f} ms")
    worst = max(res["host checks"])
    ok = worst < GOAL_HOST_CHECKS_S
    print(f"host checks (one SSH exec): max {worst:.2f} s — goal < {GOAL_HOST_CHECKS_S:g} s: "
          f"{'PASS' if ok else 'FAIL'}")
    return 0 if ok else 1


def main_rollback(args: argparse.Namespace) -> int:
    off = asyncio.run(run_rollback(args.tries, args.time_scale, ramp=False))
    on = asyncio.run(run_rollback(args.tries, args.time_scale, ramp=True))
    print(f"try 10 steps on the seed scenario (time scale {args.time_scale}, {args.tries} runs each, bench "
          f"C={ROLLBACK_BENCH['concurrency']} x {ROLLBACK_BENCH['requests_per_level']} req x "
          f"{ROLLBACK_BENCH['output_len']} tok): confirm -> rolled back")
    for name, rows in (("ramp off (cliff)", off), ("ramp on", on)):
        ts = [r["confirm_to_rollback_s"] for r in rows]
        found = [r["ready_to_failure_s"] for r in rows]
        pv = [r["preview_s"] for r in rows]
        print(f"  {name:17} confirm -> rolled back median {statistics.median(ts):6.2f} s "
              f"(runs: {', '.join(f'{t:.2f}' for t in ts)}); ready -> failure found median "
              f"{statistics.median(found):6.2f} s; preview with preflight median {statistics.median(pv) * 1000:.0f} ms")
    total = statistics.median(r["confirm_to_rollback_s"] for r in off) / \
        statistics.median(r["confirm_to_rollback_s"] for r in on)
    speedup = statistics.median(r["ready_to_failure_s"] for r in off) / \
        statistics.median(r["ready_to_failure_s"] for r in on)
    ok = speedup >= GOAL_RAMP_SPEEDUP
    print(f"ramp: confirm -> rolled back {total:.1f}x sooner at this time scale (weight loading, scaled here, "
          f"dominates both on a real host); the failure is found {speedup:.0f}x sooner after ready — goal >= "
          f"{GOAL_RAMP_SPEEDUP:g}x: {'PASS' if ok else 'FAIL'}")
    return 0 if ok else 1


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--tries", type=int, default=6)
    ap.add_argument("--time-scale", type=float, default=0.01)
    ap.add_argument("--json", action="store_true")
    ap.add_argument("--rollback", action="store_true", help="confirm -> rollback of try 10 steps, ramp off vs on")
    ap.add_argument("--preflight", action="store_true", help="time the preflight's parts over SSH")
    ap.add_argument("--systemd", choices=["python", "real", "both"], default="python",
                    help="the host's service manager; both: each in turn, and real against the imitation")
    args = ap.parse_args()
    if args.preflight:
        return main_preflight(args)
    if args.rollback:
        return main_rollback(args)
    backends = ["python", "real"] if args.systemd == "both" else [args.systemd]
    medians: dict[str, float] = {}
    status = 0
    for backend in backends:
        status |= report(asyncio.run(run(args.tries, args.time_scale, backend)), args)
        medians[backend] = _median_overhead
    if len(medians) == 2:
        real, imitation = medians["real"], medians["python"]
        ratio = real / imitation if imitation > 0 else float("inf")
        ok = ratio <= 1 + GOAL_REAL_VS_IMITATION
        print(f"overhead on systemd 252 itself vs the sim's supervisor, same run: median {real:.2f} s vs "
              f"{imitation:.2f} s ({(ratio - 1) * 100:+.0f} %) — goal within {GOAL_REAL_VS_IMITATION:.0%}: "
              f"{'PASS' if ok else 'FAIL'}")
        status |= 0 if ok else 1
    return status


_median_overhead = 0.0
GOAL_REAL_VS_IMITATION = 0.10


def report(res: dict[str, Any], args: argparse.Namespace) -> int:
    global _median_overhead
    rows = res["rows"]
    if args.json:
        print(json.dumps(res, indent=1))
    manager = "systemd 252 itself" if res["systemd"] == "real" else "the sim's supervisor"
    print(f"try-cycle overhead on the simulated host under {manager} (time scale {args.time_scale}, "
          f"{args.tries} tries, bench {BENCH['requests_per_level']} req x {BENCH['output_len']} tok at C=1)")
    print(f"{'job':>4} {'wall':>7} {'stop':>6} {'load':>6} {'bench':>6} {'ramp':>5} {'overhead':>9} {'ready lag':>10} "
          f"{'serving lag':>12}  steps")
    for r in rows:
        print(f"{r['job']:>4} {r['wall_s']:7.2f} {r['sim_stop_s']:6.2f} {r['sim_load_s']:6.2f} {r['bench_s']:6.2f} "
              f"{r['ramp_s']:5.2f} "
              f"{r['overhead_s']:9.2f} {r['ready_lag_s']:10.3f} {r['serving_lag_s']:12.3f}  "
              + " ".join(f"{k}={v}" for k, v in r["steps_s"].items()))
    ov = [r["overhead_s"] for r in rows]
    lag = [r["ready_lag_s"] for r in rows]
    ok_ov, ok_lag = max(ov) < GOAL_OVERHEAD_S, max(lag) < GOAL_READY_S
    _median_overhead = statistics.median(ov)
    print(f"overhead: median {statistics.median(ov):.2f} s, max {max(ov):.2f} s — goal < {GOAL_OVERHEAD_S} s: "
          f"{'PASS' if ok_ov else 'FAIL'}")
    print(f"ready line seen after: median {statistics.median(lag) * 1000:.0f} ms, max {max(lag) * 1000:.0f} ms — "
          f"goal < {GOAL_READY_S} s: {'PASS' if ok_lag else 'FAIL'}")
    return 0 if ok_ov and ok_lag else 1


if __name__ == "__main__":
    sys.exit(main())
